"""What the simulating commands share: PATHs of objects (or the bundled demo) and a configuration."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Collection, Sequence
from pathlib import Path
from typing import Any

from kubesched.api.loader import LoadedObjects, load_paths
from kubesched.api.priority_admission import unknown_priority_classes
from kubesched.cli._flags import pflag_bool
from kubesched.config.features import DEFAULT_GATES, FeatureGates
from kubesched.config.types import KubeSchedulerConfiguration
from kubesched.errors import InputError
from kubesched.framework.registry import Registry

__all__ = [
    "DEMO_DIR",
    "add_configs_option",
    "add_demo_option",
    "add_output_option",
    "add_seed_option",
    "add_strict_option",
    "check_priority_classes",
    "config_note",
    "input_notes",
    "load_configs",
    "load_inputs",
    "load_objects",
    "print_warnings",
    "refuse_html_on_terminal",
    "require_cluster",
]

DEMO_DIR = Path(__file__).resolve().parents[1] / "simulate" / "demo"


def add_seed_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--seed", type=int, default=0, help="seed for tie-breaking between equal nodes (default 0)"
    )


def add_output_option(parser: argparse.ArgumentParser, *, html: bool = False) -> None:
    """`--output/-o table|json`, and `html` (one self-contained page) where the command has one."""
    parser.add_argument(
        "--output",
        "-o",
        choices=("table", "json", "html") if html else ("table", "json"),
        default="table",
        help="report format"
        + ("; html is one self-contained page with charts (redirect it to a file)" if html else ""),
    )


def refuse_html_on_terminal(output: str) -> None:
    """A whole web page on a terminal is noise: `--output html` must be redirected."""
    if output == "html" and sys.stdout.isatty():
        raise InputError("--output html writes a whole web page: redirect it to a file (> report.html)")


def add_configs_option(parser: argparse.ArgumentParser, *, required: bool, help: str) -> None:
    """`--config FILE` given several times (into `args.configs`); `default` is upstream's defaults."""
    parser.add_argument(
        "--config",
        dest="configs",
        action="append",
        required=required,
        default=None if required else [],
        metavar="FILE",
        help=help,
    )


def load_configs(paths: Sequence[str], registry: Registry) -> list[tuple[str, KubeSchedulerConfiguration]]:
    """Each `--config` path (or `default`) with its effective configuration."""
    from kubesched.config import default_config, load_config

    return [(p, default_config(registry) if p == "default" else load_config(p, registry)) for p in paths]


def add_strict_option(parser: argparse.ArgumentParser) -> None:
    """`--strict[=true|false]`: fields and kinds the v1.37 API does not have are errors, or warnings."""
    parser.add_argument(
        "--strict",
        nargs="?",
        const=True,
        default=True,
        type=pflag_bool,
        metavar="BOOL",
        help="refuse objects with fields or kinds the Kubernetes v1.37 API does not have, as the API "
        "server does (default true); --strict=false ignores them with a warning each on stderr, "
        "for snapshots of newer clusters",
    )


#: Warnings printed at most, so that a snapshot of a much newer cluster does not flood the terminal.
MAX_WARNINGS = 20


def print_warnings(warnings: Sequence[InputError]) -> None:
    """One line on stderr for each of the first `MAX_WARNINGS` ignored problems, then how many more."""
    for warning in warnings[:MAX_WARNINGS]:
        print(f"kubesched: warning: {warning} (ignored: --strict=false)", file=sys.stderr)
    if len(warnings) > MAX_WARNINGS:
        more = len(warnings) - MAX_WARNINGS
        print(f"kubesched: warning: {more} more problem(s) like these ignored", file=sys.stderr)


def load_objects(paths: Sequence[str], *, strict: bool, whole_cluster: bool = True) -> LoadedObjects:
    """`load_paths`, printing what it ignored when not `strict`.

    `whole_cluster`: the paths hold the cluster, so a pod naming a PriorityClass they do not hold is
    refused as the API server refuses it (`check_priority_classes`); False for a file of shapes
    checked against a cluster loaded apart."""
    objects = load_paths(paths, strict=strict)
    print_warnings(objects.warnings)
    if whole_cluster:
        check_priority_classes(objects, strict=strict)
    return objects


def check_priority_classes(objects: LoadedObjects, *, strict: bool, known: Collection[str] = ()) -> None:
    """Raise the first object naming a PriorityClass that neither `objects` nor `known` hold; or,
    not `strict`, print a warning for each (such a pod is then simulated at priority 0)."""
    problems = unknown_priority_classes(objects, known)
    if problems and strict:
        more = f" (and {len(problems) - 1} more like it)" if len(problems) > 1 else ""
        first = problems[0]
        raise InputError(first.message + more, source=first.source, path=first.path)
    print_warnings(problems)


def add_demo_option(parser: argparse.ArgumentParser) -> None:
    """`--demo`: the bundled demo cluster, asked for by name (an answer about a cluster the user
    did not give must never be silent)."""
    parser.add_argument(
        "--demo",
        action="store_true",
        help="use the bundled demo cluster (and its configuration unless --config is given) instead of PATHs",
    )


def require_cluster(paths: Sequence[str], *, demo: bool, live: bool = False) -> None:
    """A cluster must be given: PATHs, a live cluster (`live`: `--kubeconfig` and co.), or the demo
    by name (`--demo`); none, or the demo with another, is an error."""
    if demo and (paths or live):
        given = "PATHs of objects" if paths else "a live cluster"
        raise InputError(f"give {given} or --demo, not both", source="--demo")
    if not demo and not paths and not live:
        raise InputError(
            "no cluster given: pass PATHs of objects, --kubeconfig (or --context, --in-cluster) for a "
            "live cluster, or --demo for the bundled demo cluster"
        )


def _demo_dir() -> Path:
    if not DEMO_DIR.is_dir():
        raise InputError("the bundled demo cluster is not installed; pass PATHs of objects")
    return DEMO_DIR


def load_inputs(
    paths: Sequence[str],
    config_path: str | None,
    registry: Registry,
    gates: FeatureGates = DEFAULT_GATES,
    *,
    strict: bool = True,
    live: Callable[[], LoadedObjects] | None = None,
) -> tuple[LoadedObjects, KubeSchedulerConfiguration]:
    """The configuration (checked first, defaulted under `gates`) and the objects of `paths`, or of
    `live` (the reader of a live cluster, called once the configuration is known to be good).

    Without either, the bundled demo cluster, with the demo's configuration unless one is given;
    stderr says so (commands that must not fall back to the demo call `require_cluster` first).
    Without a configuration, upstream's defaults. `strict`: see `add_strict_option`.
    """
    from kubesched.config import default_config, load_config

    if live is not None:
        config = load_config(config_path, registry, gates) if config_path else default_config(registry, gates)
        return live(), config
    if not paths:
        paths = [str(_demo_dir() / "cluster")]
        config_path = config_path or str(DEMO_DIR / "scheduler-config.yaml")
        print(f"kubesched: note: no PATH given: using the bundled demo cluster ({paths[0]})", file=sys.stderr)
    config = load_config(config_path, registry, gates) if config_path else default_config(registry, gates)
    objects = load_objects(paths, strict=strict)
    note = config_note(paths, objects, [config_path] if config_path else [])
    if note:
        print(f"kubesched: note: {note}", file=sys.stderr)
    return objects, config


#: Kinds that sit next to a cluster snapshot on purpose (a scheduler configuration): not worth a note.
EXPECTED_BESIDE = frozenset({"KubeSchedulerConfiguration"})


def config_note(paths: Sequence[str], objects: LoadedObjects, configs: Sequence[str]) -> str | None:
    """Name the KubeSchedulerConfigurations among the input files: they are not used (a configuration
    comes only from --config), and a user who put one beside the cluster may think it is."""
    if not objects.skipped.get("KubeSchedulerConfiguration"):
        return None
    from kubesched.api.loader import manifest_files

    used_files = {Path(c).resolve() for c in configs if c != "default"}
    files = []
    for given in paths:
        root = Path(given)
        for path in manifest_files(root) if root.is_dir() else [root] if root.is_file() else []:
            if "KubeSchedulerConfiguration" in path.read_text(encoding="utf-8", errors="replace"):
                files.append(path)
    if files and all(f.resolve() in used_files for f in files):
        return None  # the one among the inputs is the one given with --config: it is used
    used = " and ".join(f"--config {c}" for c in configs) or "upstream's default configuration"
    where = ", ".join(str(f) for f in files) or "the input"
    return (
        f"not using the KubeSchedulerConfiguration in {where}: configurations come only from --config "
        f"(this run uses {used})"
    )


def input_notes(objects: LoadedObjects, gates: FeatureGates = DEFAULT_GATES) -> list[str]:
    """What a user should know about the input before reading a report built from it: kinds that
    were left out, and an input with no nodes or nothing to schedule (else `0/0 pods scheduled`)."""
    notes: list[str] = []
    skipped = {kind: n for kind, n in objects.skipped.items() if kind not in EXPECTED_BESIDE}
    if skipped:
        kinds = ", ".join(f"{kind} ({n})" for kind, n in sorted(skipped.items()))
        total = sum(skipped.values())
        notes.append(f"left out {total} object(s) of kinds the scheduler does not read: {kinds}")
    pending = sum(1 for p in objects.pods if not p.spec.node_name)
    controllers: list[list[Any]] = [objects.deployments, objects.daemon_sets, objects.jobs, objects.cron_jobs]
    controllers += [objects.replica_sets, objects.stateful_sets, objects.replication_controllers]
    workloads = any(controllers)  # they create pods during the run
    grouped = sum(1 for p in objects.pods if p.spec.scheduling_group is not None and not p.spec.node_name)
    if grouped and not gates.enabled("GenericWorkload"):
        notes.append(
            f"{grouped} pending pod(s) name a PodGroup (spec.schedulingGroup): each is scheduled on its own, "
            "as kube-scheduler does with GenericWorkload off (--feature-gates=GenericWorkload=true "
            "schedules them by group)"
        )
    if not objects.nodes:
        notes.append("the input has no nodes, so no pod can be scheduled")
    if not pending and not workloads:
        running = len(objects.pods)
        notes.append(f"the input has no pending pods ({running} running), so there is nothing to schedule")
    return notes

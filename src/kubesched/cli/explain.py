"""`kubesched explain NAMESPACE/POD`: why a pod is pending, or where a pod would go and why not elsewhere.

Reads a snapshot of the cluster the kubeconfig points at (GET requests only: a read-only user is
enough, see deploy/explain-rbac.yaml), or of files with `--snapshot`, and runs one scheduling cycle
of the pod in memory (`kubesched.simulate.explain`). `-f FILE` (`-` for stdin) explains a pod
manifest that is not in the cluster yet.
"""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from kubesched.cli._flags import add_feature_gates_flag, feature_gates
from kubesched.cli.cluster_input import add_cluster_options, read_cluster
from kubesched.cli.inputs import add_strict_option, check_priority_classes, load_objects, print_warnings
from kubesched.errors import InputError

if TYPE_CHECKING:
    from kubesched.api.loader import LoadedObjects
    from kubesched.api.objects import Pod
    from kubesched.api.scheduling_groups import PodGroup as SchedulingPodGroup
    from kubesched.api.workloads import WorkloadObject
    from kubesched.config.features import FeatureGates
    from kubesched.simulate.explain.model import PodExplanation, PodGroupExplanation
    from kubesched.simulate.explain.next_pod import JobGroup

__all__ = ["add_explain_command"]


def add_explain_command(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register `explain`; it sets `func(args) -> int`."""
    p = subparsers.add_parser(
        "explain",
        help="why a pod is pending, or where a pod would go: one scheduling cycle on a cluster snapshot",
        description=(
            "Take a read-only snapshot of the cluster (or of files with --snapshot), run one scheduling "
            "cycle for the pod with its profile, and print the verdict, the reasons by plugin with node "
            "counts and names, the nearest nodes and what each lacks, what preemption would do, and the "
            "top nodes with per-plugin scores and weights. Only this pod is scheduled; other pending "
            "pods are not, except that nominated ones keep their place."
        ),
    )
    p.add_argument(
        "pod",
        nargs="?",
        metavar="NAMESPACE/POD",
        help="a pod of the cluster (or NAME with -n); with GenericWorkload on, a pod of a PodGroup "
        "explains its group",
    )
    p.add_argument(
        "--pod-group",
        metavar="NAMESPACE/NAME",
        help="explain a scheduling.k8s.io PodGroup (or NAME with -n): why the group is pending, the "
        "placement tried, the minCount arithmetic and the members that block it (GenericWorkload on)",
    )
    p.add_argument(
        "-n", "--namespace", default="default", help="namespace of a bare POD name (default: default)"
    )
    p.add_argument(
        "-f",
        "--filename",
        metavar="FILE",
        help="explain this pod manifest instead (- reads stdin): where would it go, and why not elsewhere; "
        "a workload (Deployment, StatefulSet, Job, ...) explains the next pod its controller would create; "
        "a PodGroup (scheduling.k8s.io) explains that group with the snapshot's pods that name it",
    )
    add_cluster_options(p, implied=True)
    p.add_argument(
        "--snapshot",
        action="append",
        metavar="PATH",
        help="read the cluster from these files or directories (as simulate does) instead of a server",
    )
    p.add_argument(
        "--config",
        metavar="FILE",
        help="a KubeSchedulerConfiguration with the pod's profile (default: upstream's default profile)",
    )
    p.add_argument("--output", "-o", choices=("table", "json", "yaml"), default="table", help="output format")
    add_strict_option(p)
    p.add_argument(
        "--debug", action="store_true", help="print the traceback of a plugin error (or unexpected failure)"
    )
    # The snapshot (~10^6 objects on 5000 nodes) lives until the process ends and holds little
    # cyclic garbage: collecting it as it grows, then tearing it down at exit, cost ~0.5 CPU s of
    # a 5000-node explain for nothing (see `kubesched.cli.entry`).
    add_feature_gates_flag(p)
    p.set_defaults(func=_explain, exit_without_teardown=True, cyclic_gc=False)


def _explain(args: argparse.Namespace) -> int:
    from kubesched.api.loader import LoadedObjects
    from kubesched.api.scheduling_groups import PodGroup as SchedulingPodGroup
    from kubesched.config import default_config, load_config
    from kubesched.plugins import default_registry
    from kubesched.simulate.explain.run import explain_pod, kinds_read

    if sum(x is not None for x in (args.pod, args.filename, args.pod_group)) != 1:
        raise InputError(
            "name a pod (NAMESPACE/POD), a pod group (--pod-group) or give a manifest with -f: one of them"
        )
    gates = feature_gates(args)
    registry = default_registry(features=gates)
    config = load_config(args.config, registry, gates) if args.config else default_config(registry, gates)
    manifest = _read_manifest(args.filename, args.namespace, strict=args.strict) if args.filename else None
    notes: list[str] = []
    if args.snapshot:
        objects = load_objects(args.snapshot, strict=args.strict)
        source = "the snapshot " + " ".join(args.snapshot)
    else:
        snap = read_cluster(
            args, command="explain", kinds=kinds_read(config, registry), gates=registry.features
        )
        objects, source = snap.objects, f"cluster {snap.server}"
        notes = snap.notes
    if manifest is not None:
        check_priority_classes(
            LoadedObjects().with_object(manifest),
            strict=args.strict,
            known=[pc.metadata.name for pc in objects.priority_classes],
        )
    grouped = registry.features.enabled("GenericWorkload")
    job = _job_group(objects, manifest, gates)
    target: Pod | None
    group: tuple[str, str] | None
    if job is not None:  # WorkloadWithJob: the Job's pods are scheduled with the PodGroup it gets
        objects = job.added_to(objects)
        meta = job.pod_group.metadata
        notes.append(
            f"PodGroup {meta.name} and its {len(job.pods)} pod(s) are what the Job controller would create "
            "for the Job with WorkloadWithJob on"
        )
        target, group = None, (meta.namespace or "default", meta.name)
    else:
        target, group = _what(args, objects, manifest, notes, grouped=grouped)
    asked = None
    if group is not None and target is not None:
        asked = f"{target.metadata.namespace or 'default'}/{target.metadata.name}"
        if manifest is not None:  # a member not created yet joins its group in the snapshot
            objects = objects.with_object(target)
    elif isinstance(manifest, SchedulingPodGroup):
        objects = objects.with_object(manifest)
    errors: dict[str, BaseException] = {}
    on_error = errors.__setitem__ if args.debug else None
    report: PodExplanation | PodGroupExplanation
    if group is not None:
        from kubesched.simulate.explain.group import explain_pod_group

        report = explain_pod_group(
            objects, config, registry, group, source=source, pod=asked, notes=notes, on_error=on_error
        )
    else:
        assert target is not None
        report = explain_pod(objects, config, registry, target, source=source, notes=notes, on_error=on_error)
    _print(report, args.output)
    if errors:
        from kubesched.cli.simulate import print_tracebacks

        print_tracebacks(errors)
    return 0


def _job_group(
    objects: LoadedObjects, manifest: Pod | WorkloadObject | SchedulingPodGroup | None, gates: FeatureGates
) -> JobGroup | None:
    """A Job's PodGroup, Workload and pods as its controller makes them (WorkloadWithJob on)."""
    from kubesched.api.controllers import Job
    from kubesched.simulate.explain.next_pod import job_group

    if not isinstance(manifest, Job) or not gates.enabled("WorkloadWithJob"):
        return None
    return job_group(objects, manifest, gates)


def _what(
    args: argparse.Namespace,
    objects: LoadedObjects,
    manifest: Pod | WorkloadObject | SchedulingPodGroup | None,
    notes: list[str],
    *,
    grouped: bool,
) -> tuple[Pod | None, tuple[str, str] | None]:
    """The pod to explain and the PodGroup to explain instead: the one given (`--pod-group`, a
    PodGroup manifest), or the pod's own with GenericWorkload on, as kube-scheduler then schedules it."""
    from kubesched.api.objects import Pod
    from kubesched.api.scheduling_groups import PodGroup as SchedulingPodGroup
    from kubesched.framework.pod_groups import pod_group_of
    from kubesched.simulate.explain.run import find_pod

    if isinstance(manifest, SchedulingPodGroup):
        return None, (manifest.metadata.namespace or args.namespace, manifest.metadata.name)
    if args.pod_group is not None:
        from kubesched.simulate.explain.group import find_pod_group

        key = args.pod_group if "/" in args.pod_group else f"{args.namespace}/{args.pod_group}"
        return None, find_pod_group(objects, key)
    if manifest is None:
        target = find_pod(objects, args.pod if "/" in args.pod else f"{args.namespace}/{args.pod}")
    elif isinstance(manifest, Pod):
        target = manifest
    else:
        from kubesched.simulate.explain.next_pod import next_pod

        target = next_pod(objects, manifest)
        meta = manifest.metadata
        notes.append(
            f"{target.metadata.name} is the next pod of {manifest.kind} {meta.namespace or args.namespace}/"
            f"{meta.name}, as its controller would create it from the template"
        )
    return target, pod_group_of(target) if grouped else None


def _read_manifest(
    filename: str, namespace: str, *, strict: bool
) -> Pod | WorkloadObject | SchedulingPodGroup:
    import msgspec

    from kubesched.api.loader import load_documents
    from kubesched.api.objects import Pod
    from kubesched.api.scheduling_groups import PodGroup as SchedulingPodGroup
    from kubesched.api.workloads import WORKLOAD_KINDS, WorkloadObject

    source = "<stdin>" if filename == "-" else filename
    if filename == "-":
        text = sys.stdin.read()
    else:
        try:
            with open(filename, encoding="utf-8-sig") as f:
                text = f.read()
        except OSError as err:
            raise InputError(err.strerror or str(err), source=source) from None
    skipped: dict[str, int] = {}
    ignored: list[InputError] | None = None if strict else []
    objects = load_documents(text, source, skipped=skipped, lenient=ignored)
    print_warnings(ignored or [])
    wanted = [o for o in objects if isinstance(o, (Pod, SchedulingPodGroup, *WORKLOAD_KINDS))]
    if len(wanted) != 1 or len(objects) != 1 or skipped:
        kinds = [type(o).__name__ for o in objects] + [k for k, n in skipped.items() for _ in range(n)]
        raise InputError(
            f"expected one Pod, PodGroup or workload (Deployment, StatefulSet, Job, ...), found "
            f"{', '.join(kinds) or 'nothing'}",
            source=source,
        )
    obj = wanted[0]
    assert isinstance(obj, Pod | WorkloadObject | SchedulingPodGroup)
    if not obj.metadata.namespace:
        obj = msgspec.structs.replace(
            obj, metadata=msgspec.structs.replace(obj.metadata, namespace=namespace)
        )
    return obj


def _print(report: PodExplanation | PodGroupExplanation, output: str) -> None:
    import msgspec

    if output == "json":
        sys.stdout.buffer.write(msgspec.json.format(msgspec.json.encode(report), indent=2) + b"\n")
    elif output == "yaml":
        import yaml

        sys.stdout.write(yaml.safe_dump(msgspec.to_builtins(report), sort_keys=False))
    else:
        from kubesched.cli._console import stdout_console
        from kubesched.simulate.explain.group_table import render_group_explanation
        from kubesched.simulate.explain.model import PodGroupExplanation
        from kubesched.simulate.explain.table import render_explanation

        if isinstance(report, PodGroupExplanation):
            render_group_explanation(report, stdout_console())
        else:
            render_explanation(report, stdout_console())

"""`kubesched compare --config A --config B [...] [PATH ...]`: one input under several configurations."""

from __future__ import annotations

import argparse
import sys

from kubesched.cli.cluster_input import (
    add_cluster_options,
    cluster_given,
    cluster_objects,
    refuse_paths_with_cluster,
)
from kubesched.cli.inputs import (
    DEMO_DIR,
    add_configs_option,
    add_demo_option,
    add_output_option,
    add_seed_option,
    add_strict_option,
    config_note,
    load_configs,
    load_objects,
    refuse_html_on_terminal,
    require_cluster,
)
from kubesched.errors import InputError

__all__ = ["add_compare_command"]


def add_compare_command(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register `compare`; it sets `func(args) -> int`."""
    cmd = subparsers.add_parser(
        "compare",
        help="simulate the same cluster under several configurations and compare them side by side",
        description=(
            "Simulate PATHs (or the live cluster of --kubeconfig, read-only; or, with --demo, the "
            "bundled demo cluster) once per --config and print, "
            "side by side: pods scheduled and unschedulable by reason, preemptions, utilization per "
            "resource (mean and spread over nodes), fragmentation (stranded extended resources, the "
            "largest pod shape still placeable), zone balance and gangs placed; `-o html` draws them "
            "as charts. `--config default` is upstream's default profile."
        ),
    )
    cmd.add_argument("paths", nargs="*", metavar="PATH", help="YAML/JSON files or directories of objects")
    add_configs_option(
        cmd, required=True, help="a KubeSchedulerConfiguration, or `default`; give two or more"
    )
    add_cluster_options(cmd)
    add_demo_option(cmd)
    add_output_option(cmd, html=True)
    add_seed_option(cmd)
    add_strict_option(cmd)
    cmd.set_defaults(func=_compare)


def _compare(args: argparse.Namespace) -> int:
    from rich.console import Console

    from kubesched.plugins import default_registry
    from kubesched.simulate.compare.run import compare
    from kubesched.simulate.compare.table import render_comparison
    from kubesched.simulate.report import to_json

    if len(args.configs) < 2:
        raise InputError("give at least two configurations to compare", path="--config")
    live = cluster_given(args)
    require_cluster(args.paths, demo=args.demo, live=live)
    refuse_paths_with_cluster(args.paths, args)
    refuse_html_on_terminal(args.output)
    registry = default_registry()
    configs = load_configs(args.configs, registry)
    if live:
        objects = cluster_objects(args, command="compare")
    else:
        paths = list(args.paths) or [str(DEMO_DIR / "cluster")]
        objects = load_objects(paths, strict=args.strict)
        note = config_note(paths, objects, args.configs)
        if note:
            print(f"kubesched: note: {note}", file=sys.stderr)
    comparison = compare(objects, configs, registry, seed=args.seed)
    if args.output == "json":
        sys.stdout.buffer.write(to_json(comparison) + b"\n")
    elif args.output == "html":
        from kubesched.simulate.compare.html import compare_html

        sys.stdout.buffer.write(compare_html(comparison))
    else:
        render_comparison(comparison, Console(width=None if sys.stdout.isatty() else 200, highlight=False))
    return 0

"""The `kubesched` command: simulate, config validate|defaults.

Bad input ends with one line `kubesched: <file>: <field path>: <what is wrong>` and exit code 2.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from kubesched import __version__
from kubesched.errors import InputError

EXIT_BAD_INPUT = 2
DEMO_DIR = Path(__file__).parent / "simulate" / "demo"


def main(argv: Sequence[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    if not hasattr(args, "func"):
        parser.print_help(sys.stderr)
        return EXIT_BAD_INPUT
    try:
        code: int = args.func(args)
    except InputError as err:
        print(f"kubesched: {err}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 0
    return code


def _parser() -> argparse.ArgumentParser:
    from kubesched.cli_config import add_config_commands
    from kubesched.cli_extender import add_extender_command
    from kubesched.cli_run import add_run_command

    parser = argparse.ArgumentParser(
        prog="kubesched",
        description="A Kubernetes scheduler framework in Python: plugins, profiles, an explaining simulator.",
    )
    parser.add_argument("--version", action="version", version=f"kubesched {__version__}")
    sub = parser.add_subparsers(metavar="COMMAND")

    sim = sub.add_parser(
        "simulate",
        help="schedule pods on an in-memory cluster loaded from YAML and explain every decision",
        description=(
            "Schedule the pending pods of PATHs (files or directories of Kubernetes objects, e.g. the "
            "output of `kubectl get nodes,pods -A -o yaml`) in memory. Without PATH the bundled demo "
            "cluster and its configuration are used."
        ),
    )
    sim.add_argument("paths", nargs="*", metavar="PATH", help="YAML/JSON files or directories of objects")
    sim.add_argument(
        "--config", metavar="FILE", help="a KubeSchedulerConfiguration (default: upstream defaults)"
    )
    sim.add_argument("--output", "-o", choices=("table", "json"), default="table", help="report format")
    sim.add_argument("--explain", action="store_true", help="per node: filter verdicts and plugin scores")
    sim.add_argument(
        "--seed", type=int, default=0, help="seed for tie-breaking between equal nodes (default 0)"
    )
    sim.set_defaults(func=_simulate)

    add_config_commands(sub)
    add_run_command(sub)
    add_extender_command(sub)
    return parser


def _simulate(args: argparse.Namespace) -> int:
    from rich.console import Console

    from kubesched.api.loader import load_paths
    from kubesched.config import default_config, load_config
    from kubesched.plugins import default_registry
    from kubesched.simulate.progress import progress_reporter
    from kubesched.simulate.report import to_json
    from kubesched.simulate.runner import simulate
    from kubesched.simulate.table import render_table

    registry = default_registry()
    paths: list[str] = list(args.paths)
    config_path: str | None = args.config
    if not paths:
        if not DEMO_DIR.is_dir():
            raise InputError("the bundled demo cluster is not installed; pass PATHs of objects")
        paths = [str(DEMO_DIR / "cluster")]
        if config_path is None:
            config_path = str(DEMO_DIR / "scheduler-config.yaml")
    config = load_config(config_path, registry) if config_path else default_config(registry)
    objects = load_paths(paths)
    with progress_reporter(enabled=sys.stderr.isatty()) as progress:
        report = simulate(objects, config, registry, seed=args.seed, explain=args.explain, progress=progress)
    if args.output == "json":
        sys.stdout.buffer.write(to_json(report) + b"\n")
    else:
        width = None if sys.stdout.isatty() else 200
        render_table(report, Console(width=width, highlight=False))
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())

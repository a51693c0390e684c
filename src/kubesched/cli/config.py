"""`kubesched config validate FILE` and `kubesched config defaults [FILE]`.

Handlers return an exit code and raise InputError for bad input; the main CLI prints that as
`kubesched: <error>` and exits 2, so a broken config never produces a traceback.
"""

from __future__ import annotations

import argparse
import sys

from kubesched.cli._flags import add_feature_gates_flag, feature_gates
from kubesched.config import default_config, dump_config, load_config
from kubesched.plugins import default_registry

__all__ = ["add_config_commands"]


def add_config_commands(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register `config validate` and `config defaults`; each sets `func(args) -> int`."""
    config = subparsers.add_parser(
        "config",
        help="check or show a KubeSchedulerConfiguration",
        description="Check a KubeSchedulerConfiguration file or print the effective configuration.",
    )
    commands = config.add_subparsers(dest="config_command", metavar="COMMAND", required=True)

    validate = commands.add_parser(
        "validate",
        help="check a configuration file",
        description="Decode, default and validate FILE; print every problem with its field path.",
    )
    validate.add_argument("file", metavar="FILE", help="KubeSchedulerConfiguration (YAML or JSON)")
    add_feature_gates_flag(validate)
    validate.set_defaults(func=run_validate)

    defaults = commands.add_parser(
        "defaults",
        help="print the effective configuration",
        description="Print FILE with every default filled in, or the default configuration without FILE.",
    )
    defaults.add_argument("file", metavar="FILE", nargs="?", help="KubeSchedulerConfiguration (YAML or JSON)")
    add_feature_gates_flag(defaults)
    defaults.set_defaults(func=run_defaults)


def run_validate(args: argparse.Namespace) -> int:
    """Print `FILE: valid (N profiles: a, b)`; an invalid file raises InputError."""
    gates = feature_gates(args)
    cfg = load_config(args.file, default_registry(features=gates), gates)
    names = [p.scheduler_name or "" for p in cfg.profiles]
    noun = "profile" if len(names) == 1 else "profiles"
    sys.stdout.write(f"{args.file}: valid ({len(names)} {noun}: {', '.join(names)})\n")
    return 0


def run_defaults(args: argparse.Namespace) -> int:
    """Print the effective configuration of FILE, or kube-scheduler's defaults without one, under
    the feature gates given (as kube-scheduler's `--write-config-to` writes it)."""
    gates = feature_gates(args)
    registry = default_registry(features=gates)
    cfg = load_config(args.file, registry, gates) if args.file else default_config(registry, gates)
    sys.stdout.write(dump_config(cfg))
    return 0

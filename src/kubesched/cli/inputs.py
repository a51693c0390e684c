"""What the simulating commands share: PATHs of objects (or the bundled demo) and a configuration."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path

from kubesched.api.loader import LoadedObjects, load_paths
from kubesched.config.types import KubeSchedulerConfiguration
from kubesched.errors import InputError
from kubesched.framework.registry import Registry

__all__ = [
    "DEMO_DIR",
    "add_configs_option",
    "add_output_option",
    "add_seed_option",
    "load_configs",
    "load_inputs",
]

DEMO_DIR = Path(__file__).resolve().parents[1] / "simulate" / "demo"


def add_seed_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--seed", type=int, default=0, help="seed for tie-breaking between equal nodes (default 0)"
    )


def add_output_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--output", "-o", choices=("table", "json"), default="table", help="report format")


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


def load_inputs(
    paths: Sequence[str], config_path: str | None, registry: Registry
) -> tuple[LoadedObjects, KubeSchedulerConfiguration]:
    """The configuration (checked first) and the objects of `paths`.

    Without paths, the bundled demo cluster, with the demo's configuration unless one is given.
    Without a configuration, upstream's defaults.
    """
    from kubesched.config import default_config, load_config

    if not paths:
        if not DEMO_DIR.is_dir():
            raise InputError("the bundled demo cluster is not installed; pass PATHs of objects")
        paths = [str(DEMO_DIR / "cluster")]
        config_path = config_path or str(DEMO_DIR / "scheduler-config.yaml")
    config = load_config(config_path, registry) if config_path else default_config(registry)
    return load_paths(paths), config

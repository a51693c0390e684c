"""A sweep's grid: configurations (and weight variants of them) x scenarios x seeds, as plain data.

Everything a cell needs travels as text (the effective configuration as YAML, the scenario's files),
so a cell runs the same in this process, in a local worker process, or on a Ray node that has never
seen the files.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from kubesched.api.loader import manifest_files
from kubesched.config.loader import dump_config, parse_document
from kubesched.config.types import KubeSchedulerConfiguration
from kubesched.errors import InputError

__all__ = [
    "Cell",
    "Scenario",
    "Variant",
    "cells_of",
    "parse_seeds",
    "parse_weight",
    "scenario_from_paths",
    "variants",
]

_RANGE = re.compile(r"^(-?\d+)\.\.(-?\d+)(?::(\d+))?$")


@dataclass(frozen=True)
class Variant:
    """One configuration of the grid: a name and its effective configuration as YAML."""

    name: str
    config: str


@dataclass(frozen=True)
class Scenario:
    """One input of the grid: a name and its files' text (relative name -> text)."""

    name: str
    files: tuple[tuple[str, str], ...]


@dataclass(frozen=True)
class Cell:
    variant: Variant
    scenario: Scenario
    seed: int


def _numbers(text: str, option: str) -> list[int]:
    """`1,5,10`, `0..4` or `0..20:5` as a list of ints."""
    match = _RANGE.match(text.strip())
    if match:
        start, stop, step = int(match[1]), int(match[2]), int(match[3] or 1)
        if step < 1 or stop < start:
            raise InputError(
                f"empty range {text!r}: want START..STOP[:STEP] with STOP >= START, STEP >= 1", path=option
            )
        return list(range(start, stop + 1, step))
    try:
        values = [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise InputError(
            f"expected numbers like 1,2,3 or a range like 0..4, got {text!r}", path=option
        ) from None
    if not values:
        raise InputError("no value given", path=option)
    return values


def parse_seeds(text: str) -> list[int]:
    return list(dict.fromkeys(_numbers(text, "--seeds")))


def parse_weight(text: str) -> tuple[str, list[int]]:
    """`Plugin=1,5,10` or `Plugin=0..10:2`: a Score plugin and the weights to try."""
    name, sep, values = text.partition("=")
    if not sep or not name.strip():
        raise InputError(
            f"expected PLUGIN=WEIGHTS (e.g. NodeResourcesFit=1,5,10), got {text!r}", path="--weight"
        )
    weights = _numbers(values, f"--weight {name}")
    bad = [w for w in weights if w < 1 or w > 100]
    if bad:
        raise InputError(f"a Score weight is between 1 and 100, got {bad[0]}", path=f"--weight {name}")
    return name.strip(), list(dict.fromkeys(weights))


def variants(
    configs: Sequence[tuple[str, KubeSchedulerConfiguration]], weights: Sequence[tuple[str, list[int]]]
) -> list[Variant]:
    """Each configuration, or each combination of the weights over each configuration."""
    out: list[Variant] = []
    for name, config in configs:
        text = dump_config(config)
        if not weights:
            out.append(Variant(name, text))
            continue
        document = parse_document(text, name)
        for combination in itertools.product(*(values for _, values in weights)):
            chosen = [(plugin, w) for (plugin, _), w in zip(weights, combination, strict=True)]
            label = ",".join(f"{plugin}={w}" for plugin, w in chosen)
            out.append(Variant(f"{name}[{label}]", yaml.safe_dump(_with_weights(document, chosen, name))))
    return out


def _with_weights(document: Any, chosen: list[tuple[str, int]], source: str) -> Any:
    """A copy of the configuration document whose Score plugins carry the chosen weights."""
    doc = yaml.safe_load(yaml.safe_dump(document))
    for plugin, weight in chosen:
        found = False
        for profile in doc.get("profiles") or []:
            plugins = profile.get("plugins") or {}
            for key in ("multiPoint", "score"):
                for entry in (plugins.get(key) or {}).get("enabled") or []:
                    if entry.get("name") == plugin:
                        entry["weight"] = weight
                        found = True
        if not found:
            raise InputError(f"{source} enables no plugin named {plugin!r} to weigh", path="--weight")
    return doc


def scenario_from_paths(name: str, paths: Sequence[str]) -> Scenario:
    """The files of `paths` (directories walked as the loader walks them) as one scenario."""
    files: list[tuple[str, str]] = []
    for given in paths:
        root = Path(given)
        if root.is_dir():
            found = manifest_files(root)
        elif root.exists():
            found = [root]
        else:
            raise InputError("no such file or directory", source=given)
        for path in found:
            try:
                files.append((str(path), path.read_text(encoding="utf-8-sig")))
            except (OSError, UnicodeDecodeError) as err:
                raise InputError(f"cannot read: {err}", source=str(path)) from None
    return Scenario(name, tuple(files))


def cells_of(variants_: Sequence[Variant], scenarios: Sequence[Scenario], seeds: Sequence[int]) -> list[Cell]:
    return [Cell(v, s, seed) for v in variants_ for s in scenarios for seed in seeds]

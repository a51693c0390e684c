"""The image's inputs agree with each other: every dependency pinned, the same pins as pyproject.toml,
a base that is a build argument, a non-root user, and a build context that leaves the clone's
virtualenv and caches out."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LOCK = ROOT / "deploy" / "requirements.txt"


def pins() -> dict[str, str]:
    out: dict[str, str] = {}
    for line in LOCK.read_text().splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        name, sep, version = line.partition("==")
        assert sep and re.fullmatch(r"[0-9][0-9A-Za-z.+!-]*", version), f"not an exact pin: {line!r}"
        out[re.sub(r"[-_.]+", "-", name).lower()] = version
    return out


def test_every_runtime_dependency_is_locked_at_the_version_pyproject_pins() -> None:
    deps = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    locked = pins()
    for dep in deps:
        name, _, version = dep.partition("==")
        assert locked.get(re.sub(r"[-_.]+", "-", name).lower()) == version, dep


def test_the_dockerfile_takes_its_base_as_an_argument_and_runs_as_non_root() -> None:
    text = (ROOT / "deploy" / "Dockerfile").read_text()
    assert "ARG BASE=python:3.11-slim" in text
    assert text.count("FROM ${BASE}") == 2
    assert "USER 65532:65532" in text
    assert "PIP_ONLY_BINARY=:all:" in text  # wheels only: nothing is compiled, no compiler needed
    derived = (ROOT / "deploy" / "plugins.Dockerfile").read_text()
    assert "FROM ${KUBESCHED_IMAGE}" in derived and derived.rstrip().endswith("USER 65532:65532")


def test_the_build_context_is_only_what_the_image_needs() -> None:
    lines = [x for x in (ROOT / ".dockerignore").read_text().splitlines() if x and not x.startswith("#")]
    assert lines[0] == "*"
    assert {"!pyproject.toml", "!README.md", "!src", "!deploy/requirements.txt"} <= set(lines)

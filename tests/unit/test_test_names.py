"""Test modules are imported by basename (the test directories are not packages, pytest's rootdir
mode), so two test files with one name make collection fail with "import file mismatch" — CI saw it
once, when tests/differential and tests/unit/framework both gained a test_pod_groups.py."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]


def test_every_test_module_has_a_name_of_its_own() -> None:
    by_name: dict[str, list[str]] = defaultdict(list)
    for path in TESTS.rglob("test_*.py"):
        by_name[path.name].append(str(path.relative_to(TESTS)))
    clashes = {name: sorted(paths) for name, paths in by_name.items() if len(paths) > 1}
    assert clashes == {}

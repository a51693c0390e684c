"""The compact API schema is what tools/openapi/compact_schema.py derives from the v1.37.2 spec, and
it covers every kind the loader decodes."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from importlib import resources
from pathlib import Path

import pytest

from kubesched.api.kinds import KINDS
from kubesched.api.resource import RESOURCE_KINDS
from kubesched.api.scheduling_groups import SCHEDULING_KINDS

ROOT = Path(__file__).resolve().parents[3]
TOOL = ROOT / "tools" / "openapi" / "compact_schema.py"


def _data() -> dict[str, dict[str, object]]:
    text = resources.files("kubesched.api").joinpath("openapi_v1_37.json").read_text(encoding="utf-8")
    data: dict[str, dict[str, object]] = json.loads(text)
    return data


def _spec_dir() -> Path | None:
    if shutil.which("go") is None:
        return None
    cache = subprocess.run(
        ["go", "env", "GOMODCACHE"], capture_output=True, text=True, check=False
    ).stdout.strip()
    version = "v1.37.2"
    spec = Path(cache, "k8s.io", f"kubernetes@{version}", "api", "openapi-spec", "v3")
    return spec if spec.is_dir() else None


def test_the_data_file_matches_the_upstream_spec() -> None:
    spec = _spec_dir()
    if spec is None:
        pytest.skip("k8s.io/kubernetes@v1.37.2 is not in the Go module cache (make kube-binaries fetches it)")
    result = subprocess.run(
        [sys.executable, str(TOOL), "--check", "--spec-dir", str(spec)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr


def test_every_kind_the_loader_decodes_has_a_schema_for_its_default_version() -> None:
    kinds = _data()["kinds"]
    missing = []
    structs = [*KINDS.items(), *RESOURCE_KINDS.items(), *SCHEDULING_KINDS.items()]
    for name, struct in structs:
        version = struct().api_version  # type: ignore[attr-defined]
        if f"{version}/{name}" not in kinds and not version.startswith("scheduling.x-k8s.io/"):
            missing.append(f"{version}/{name}")
    assert missing == []


def test_server_set_fields_are_in_the_schema() -> None:
    types = _data()["types"]
    assert isinstance(types, dict)
    assert types["meta.v1.ObjectMeta"]["managedFields"] == "[meta.v1.ManagedFieldsEntry"
    assert types["meta.v1.ManagedFieldsEntry"]["fieldsV1"] == "*"  # free-form
    assert types["core.v1.Pod"]["status"] == "core.v1.PodStatus"
    assert types["core.v1.PodSpec"]["nodeSelector"] == "{"  # a map of scalars
    assert types["apps.v1.RollingUpdateDeployment"]["maxSurge"] == ""  # int-or-string

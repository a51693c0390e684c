#!/usr/bin/env python3
"""Derive kubesched's compact API schema from the published OpenAPI v3 spec of k8s.io/kubernetes.

The spec (`api/openapi-spec/v3/*.json` in the Go module, ~13 MB) is not committed. This script
keeps from it what strict input decoding needs, for the kinds kubesched loads, in every version
the API server serves: the field names of each object type and, per field, whether its value is a
scalar, an object of a named type, a list or a map of something, or free-form. It also lists every
kind each served group/version has, so that a misspelt or misplaced kind can be named as such.

    python tools/openapi/compact_schema.py                  # rewrite the data file
    python tools/openapi/compact_schema.py --check          # exit 1 if the data file is stale
    python tools/openapi/compact_schema.py --spec-dir DIR   # another copy of openapi-spec/v3

Type references in the output: "" a scalar (string, number, boolean, int-or-string, quantity,
timestamp), "*" anything (a free-form object: RawExtension, FieldsV1, preserve-unknown-fields),
"[X" a list of X, "{X" a map of string to X, and any other text names an object type.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "src" / "kubesched" / "api" / "openapi_v1_37.json"
GO_MOD = ROOT / "tools" / "kube" / "go.mod"

#: The kinds kubesched's loader decodes (kubesched.api.loader); their schemas are kept.
LOADED_KINDS = (
    "Pod", "Node", "Namespace", "PriorityClass", "PersistentVolume", "PersistentVolumeClaim",
    "StorageClass", "CSINode", "CSIDriver", "CSIStorageCapacity", "PodDisruptionBudget", "Service",
    "ReplicationController", "ReplicaSet", "StatefulSet", "Deployment", "DaemonSet", "Job", "CronJob",
    "PodGroup", "DeviceClass", "ResourceClaim", "ResourceClaimTemplate", "ResourceSlice",
    "DeviceTaintRule", "Workload", "CompositePodGroup",
)  # fmt: skip

#: Kinds every group version lists that are not objects one would give kubesched.
_NOT_OBJECTS = frozenset({"DeleteOptions", "WatchEvent"})
_PREFIXES = ("io.k8s.api.", "io.k8s.apimachinery.pkg.apis.", "io.k8s.apimachinery.pkg.")
_REF = "#/components/schemas/"


def kubernetes_version() -> str:
    match = re.search(r"^\s*k8s\.io/kubernetes (v[0-9.]+)", GO_MOD.read_text(), re.MULTILINE)
    if match is None:
        raise SystemExit(f"no k8s.io/kubernetes version in {GO_MOD}")
    return match[1]


def default_spec_dir(version: str) -> Path:
    cache = subprocess.run(["go", "env", "GOMODCACHE"], capture_output=True, text=True, check=True)
    return Path(cache.stdout.strip(), "k8s.io", f"kubernetes@{version}", "api", "openapi-spec", "v3")


def _short(name: str) -> str:
    for prefix in _PREFIXES:
        if name.startswith(prefix):
            return name[len(prefix) :]
    return name


class _Compactor:
    """Walks the spec's schemas from the loaded kinds' roots, naming each type it reaches."""

    def __init__(self, schemas: dict[str, Any]) -> None:
        self.schemas = schemas
        self.types: dict[str, dict[str, str]] = {}

    def ref(self, schema: dict[str, Any]) -> str:
        """The compact reference of a (property) schema."""
        if "$ref" in schema:
            return self.named(schema["$ref"].removeprefix(_REF))
        all_of = schema.get("allOf")
        if all_of:
            if len(all_of) != 1:
                raise SystemExit(f"unexpected allOf with {len(all_of)} members")
            return self.ref(all_of[0])
        if schema.get("x-kubernetes-preserve-unknown-fields"):
            return "*"
        kind = schema.get("type")
        if kind == "array":
            return "[" + self.ref(schema["items"])
        if kind == "object" or "properties" in schema or "additionalProperties" in schema:
            if "properties" in schema:
                raise SystemExit("an inline object with properties: not expected in the built-in spec")
            extra = schema.get("additionalProperties")
            return "{" + self.ref(extra) if isinstance(extra, dict) else "*"
        return ""  # string, integer, number, boolean, or a oneOf of them

    def named(self, name: str) -> str:
        schema = self.schemas[name]
        if "properties" not in schema:
            return self.ref(schema)  # a scalar (Quantity, Time, IntOrString) or free-form object
        short = _short(name)
        if short not in self.types:
            self.types[short] = {}  # placed first: types refer to themselves (JSONSchemaProps-like)
            fields = {key: self.ref(value) for key, value in sorted(schema["properties"].items())}
            self.types[short] = fields
        return short


def _structure(schema: Any) -> Any:
    """`schema` without what may differ between the spec files (descriptions, which groups use it)."""
    if isinstance(schema, dict):
        drop = ("description", "x-kubernetes-group-version-kind")
        return {k: _structure(v) for k, v in schema.items() if k not in drop}
    if isinstance(schema, list):
        return [_structure(v) for v in schema]
    return schema


def _group_version(gvk: dict[str, str]) -> str:
    return f"{gvk['group']}/{gvk['version']}" if gvk["group"] else gvk["version"]


def derive(spec_dir: Path, version: str) -> dict[str, Any]:
    """The compact schema of the spec files in `spec_dir`."""
    files = sorted(spec_dir.glob("*_openapi.json"))
    if not files:
        raise SystemExit(f"no OpenAPI v3 files in {spec_dir} (run `make kube-binaries` to fetch the module)")
    schemas: dict[str, Any] = {}
    for path in files:
        for name, schema in json.loads(path.read_text()).get("components", {}).get("schemas", {}).items():
            known = schemas.get(name)
            if known is None:
                schemas[name] = schema
                continue
            if _structure(known) != _structure(schema):
                raise SystemExit(f"{name} differs between spec files")
            gvks = known.get("x-kubernetes-group-version-kind", [])
            gvks += [g for g in schema.get("x-kubernetes-group-version-kind", []) if g not in gvks]
    served: dict[str, set[str]] = {}
    roots: dict[str, str] = {}
    for name, schema in schemas.items():
        for gvk in schema.get("x-kubernetes-group-version-kind", []):
            group_version = _group_version(gvk)
            served.setdefault(group_version, set()).add(gvk["kind"])
            if gvk["kind"] in LOADED_KINDS and gvk["group"] != "meta.k8s.io":
                roots[f"{group_version}/{gvk['kind']}"] = name
    compactor = _Compactor(schemas)
    kinds = {key: compactor.named(name) for key, name in sorted(roots.items())}
    list_meta = compactor.named("io.k8s.apimachinery.pkg.apis.meta.v1.ListMeta")
    missing = set(LOADED_KINDS) - {key.rsplit("/", 1)[1] for key in kinds}
    if missing:
        raise SystemExit(f"kinds not in the spec: {sorted(missing)}")
    return {
        "source": f"k8s.io/kubernetes@{version} api/openapi-spec/v3, by tools/openapi/compact_schema.py",
        "served": {
            gv: sorted(k for k in names if k not in _NOT_OBJECTS and not k.endswith("List"))
            for gv, names in sorted(served.items())
            if gv != "meta.k8s.io/v1"
        },
        "kinds": kinds,
        "listMeta": list_meta,
        "types": dict(sorted(compactor.types.items())),
    }


def render(data: dict[str, Any]) -> str:
    """JSON with one type per line: small, and diffs between versions stay readable."""
    lines = ["{"]
    items = list(data.items())
    for i, (key, value) in enumerate(items):
        comma = "," if i < len(items) - 1 else ""
        if isinstance(value, dict) and key in ("served", "kinds", "types"):
            lines.append(f"{json.dumps(key)}: {{")
            entries = list(value.items())
            for j, (name, entry) in enumerate(entries):
                inner = "," if j < len(entries) - 1 else ""
                lines.append(f"{json.dumps(name)}: {json.dumps(entry, separators=(',', ':'))}{inner}")
            lines.append("}" + comma)
        else:
            lines.append(f"{json.dumps(key)}: {json.dumps(value)}{comma}")
    lines.append("}")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--spec-dir", type=Path, help="the openapi-spec/v3 directory (default: the Go module cache)"
    )
    parser.add_argument(
        "--out", type=Path, default=OUT, help=f"the data file (default {OUT.relative_to(ROOT)})"
    )
    parser.add_argument(
        "--check", action="store_true", help="compare with the data file instead of writing it"
    )
    args = parser.parse_args(argv)
    version = kubernetes_version()
    text = render(derive(args.spec_dir or default_spec_dir(version), version))
    if args.check:
        if args.out.read_text() != text:
            print(f"{args.out} is stale: run {Path(__file__).relative_to(ROOT)}", file=sys.stderr)
            return 1
        return 0
    args.out.write_text(text)
    print(f"wrote {args.out} ({len(text)} bytes)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

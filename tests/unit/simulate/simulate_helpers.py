"""Small builders for simulate tests: Kubernetes objects as dicts, files in tmp dirs, CLI runs.

Objects carry only what the scenario needs; `node()` and `pod()` keep the tests' YAML readable.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import msgspec
import pytest
import yaml

from kubesched.cli import main
from kubesched.config import default_config
from kubesched.plugins import default_registry
from kubesched.simulate.replay.run import replay
from kubesched.simulate.report import to_json
from kubesched.simulate.scenario import parse_scenario

Obj = dict[str, Any]

#: Keys of `pods[]` the contract documents (docs/simulate-report.md).
POD_KEYS = frozenset(
    {
        "namespace",
        "name",
        "schedulerName",
        "result",
        "node",
        "nominatedNode",
        "workload",
        "message",
        "attempts",
        "filter",
        "scores",
        "devices",
        "preFilter",
        "explanation",
    }
)
#: Fields being added to `pods[]` by colleagues; allowed, neither required nor forbidden.
POD_EXTRA_KEYS = frozenset({"victims"})
NODE_KEYS = frozenset({"name", "pods", "allocatable", "requested"})
REPORT_KEYS = frozenset({"pods", "nodes", "summary", "profiles", "workloads", "podGroups"})
SUMMARY_KEYS = frozenset({"scheduled", "unschedulable", "pods", "nodes", "seconds", "podsPerSecond"})
#: Documented "in addition to the contract"; always present.
SUMMARY_EXTRA_KEYS = frozenset({"errors", "gated", "waiting", "ignored"})
RESULTS = frozenset({"Scheduled", "Unschedulable", "Error", "Gated", "Waiting", "Ignored", "Deleted"})
TIMING_KEYS = ("seconds", "podsPerSecond")


def node(
    name: str,
    *,
    cpu: str = "4",
    memory: str = "8Gi",
    pods: str = "110",
    labels: dict[str, str] | None = None,
    taints: list[Obj] | None = None,
    images: list[Obj] | None = None,
    unschedulable: bool = False,
    extra: dict[str, str] | None = None,
) -> Obj:
    spec: Obj = {}
    if taints:
        spec["taints"] = taints
    if unschedulable:
        spec["unschedulable"] = True
    status: Obj = {"allocatable": {"cpu": cpu, "memory": memory, "pods": pods, **(extra or {})}}
    if images:
        status["images"] = images
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, **(labels or {})}},
        "spec": spec,
        "status": status,
    }


def pod(
    name: str,
    *,
    namespace: str | None = None,
    requests: dict[str, str] | None = None,
    image: str = "registry.k8s.io/pause:3.10",
    **spec: Any,
) -> Obj:
    """A one-container Pod; keyword arguments become `spec` fields (camelCase as in YAML)."""
    container: Obj = {"name": "main", "image": image}
    if requests:
        container["resources"] = {"requests": requests}
    metadata: Obj = {"name": name}
    if namespace:
        metadata["namespace"] = namespace
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": metadata,
        "spec": {"containers": [container], **spec},
    }


def taint(key: str, effect: str, value: str | None = None) -> Obj:
    out: Obj = {"key": key, "effect": effect}
    if value is not None:
        out["value"] = value
    return out


def write_yaml(path: Path, *docs: Obj) -> Path:
    """Write `docs` as one YAML stream (multi-document when there are several)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump_all(docs, sort_keys=False))
    return path


def write_json(path: Path, doc: Obj) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc, indent=1))
    return path


def write_config(path: Path, body: str) -> Path:
    """A KubeSchedulerConfiguration file: the header plus `body` (YAML)."""
    header = "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
    path.write_text(header + body)
    return path


@pytest.fixture(autouse=True)
def wide_columns(monkeypatch: pytest.MonkeyPatch) -> None:
    """Tables as on a 200-column terminal whatever runs the tests (xdist workers set COLUMNS=80).

    Import it into a test module that reads tables; a test may set COLUMNS itself afterwards.
    """
    monkeypatch.setenv("COLUMNS", "200")


def run_cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    """`kubesched ARGV` in-process: (exit code, stdout, stderr)."""
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def simulate_json(capsys: pytest.CaptureFixture[str], *argv: str) -> Obj:
    """`kubesched simulate ARGV --output json`, which must succeed quietly; the parsed report."""
    code, out, err = run_cli(capsys, "simulate", *argv, "--output", "json")
    assert (code, err) == (0, ""), err
    report: Obj = json.loads(out)
    return report


def by_name(report: Obj) -> dict[str, Obj]:
    """`pods[]` by pod name (names are unique in these scenarios)."""
    pods: list[Obj] = report["pods"]
    out = {p["name"]: p for p in pods}
    assert len(out) == len(pods), "pod names must be unique in a test scenario"
    return out


def nodes_by_name(report: Obj) -> dict[str, Obj]:
    return {n["name"]: n for n in report["nodes"]}


def without_timing(raw: str) -> Obj:
    """The report minus the two fields that measure the machine."""
    report: Obj = json.loads(raw)
    for key in TIMING_KEYS:
        report["summary"].pop(key)
    return report


def replay_json(doc: dict[str, Any]) -> dict[str, Any]:
    """The replay report of scenario `doc` with the default profile, as JSON data, timings aside."""
    registry = default_registry()
    scenario = parse_scenario(msgspec.json.encode(doc).decode(), "s.json")
    out: dict[str, Any] = msgspec.json.decode(to_json(replay(scenario, default_config(registry), registry)))
    out["summary"].pop("seconds")
    out["summary"].pop("eventsPerSecond")
    return out

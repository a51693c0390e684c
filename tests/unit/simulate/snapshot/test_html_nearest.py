"""`simulate --explain -o html`: the pod panel's nearest nodes and what each lacks (issue 23 item 7).

They are `kubesched explain`'s answer (one code path: `explain.nearest.nearest_in_cluster`), worked
out once per group of pods with the same workload and explanation; the group's other pods name the
pod that has them, so a Deployment of many replicas carries one copy.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from tests.unit.simulate.html.test_html_page import embedded_data
from tests.unit.simulate.simulate_helpers import node, pod, run_cli, write_yaml

from kubesched.api.loader import load_paths
from kubesched.config import default_config
from kubesched.plugins import default_registry
from kubesched.simulate.snapshot.nearest import nearest_by_pod
from kubesched.simulate.snapshot.run import simulate

Capsys = pytest.CaptureFixture[str]
Obj = dict[str, Any]


def deployment(name: str, replicas: int, cpu: str) -> Obj:
    labels = {"app": name}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {
                    "containers": [{"name": "c", "image": "x", "resources": {"requests": {"cpu": cpu}}}]
                },
            },
        },
    }


def cluster(tmp_path: Path) -> Path:
    """`small` has 2 cpu, `tainted` is empty behind an untolerated taint: `fits` fits, `big` (3 cpu)
    and six `wide` replicas (3 cpu each) fit nowhere."""
    return write_yaml(
        tmp_path / "cluster.yaml",
        node("small", cpu="2"),
        node("tainted", cpu="4", taints=[{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}]),
        pod("filler", nodeName="small", requests={"cpu": "1500m"}),
        pod("fits", requests={"cpu": "100m"}),
        pod("big", requests={"cpu": "3"}),
        deployment("wide", 6, "3"),
    )


def html_pods(capsys: Capsys, *argv: str) -> dict[str, Obj]:
    code, out, err = run_cli(capsys, "simulate", *argv, "-o", "html")
    assert code == 0, err
    data = embedded_data(out.encode())
    return {f"{p['ns']}/{p['name']}": p for p in data["pods"]}  # type: ignore[attr-defined]


def test_the_pod_panel_has_explains_nearest_nodes(tmp_path: Path, capsys: Capsys) -> None:
    path = str(cluster(tmp_path))
    pods = html_pods(capsys, path, "--explain")
    code, out, err = run_cli(capsys, "explain", "default/big", "--snapshot", path, "-o", "json")
    assert code == 0, err
    explained = json.loads(out)["nearestNodes"]
    assert pods["default/big"]["nearest"] == explained
    assert explained == [
        {
            "node": "tainted",
            "plugins": ["TaintToleration"],
            "missing": ["untolerated taint dedicated=gpu:NoSchedule"],
        },
        {"node": "small", "plugins": ["NodeResourcesFit"], "missing": ["needs 3 cpu, the node has 2 in all"]},
    ]
    # The six replicas: the first carries the nodes, the other five name it.
    wide = sorted((k for k in pods if k.startswith("default/wide-")), key=lambda k: "nearest" not in pods[k])
    first, rest = wide[0], wide[1:]
    assert len(rest) == 5 and [n["node"] for n in pods[first]["nearest"]] == ["tainted", "small"]
    assert all(pods[k]["nearestOf"] == first and "nearest" not in pods[k] for k in rest)
    # Scheduled pods get none, and without --explain (or in JSON) nothing is worked out.
    assert "nearest" not in pods["default/fits"]
    assert not any("nearest" in p or "nearestOf" in p for p in html_pods(capsys, path).values())


def test_groups_past_the_bound_are_left_out(tmp_path: Path) -> None:
    objects = load_paths([cluster(tmp_path)])
    registry = default_registry()
    found: dict[str, object] = {}
    report = simulate(
        objects,
        default_config(registry),
        registry,
        explain=True,
        on_settled=lambda s, c, r: found.update(nearest_by_pod(s, c, r.pods, max_groups=1)),
    )
    wide = {f"default/{p.name}" for p in report.pods if p.name.startswith("wide-")}
    assert len(wide) == 6
    assert set(found) in ({"default/big"}, wide)  # one group: the bare pod or the six replicas

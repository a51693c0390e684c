"""The what-if commands on a generated 5000-node cluster, through the CLI, bounded.

Sizes are chosen so that each command does real work at that scale (thousands of pods placed over
5000 nodes) while the file stays well under a minute on two busy cores.
"""

from __future__ import annotations

import json
from pathlib import Path

import msgspec
import pytest
from tests.unit.simulate.simulate_helpers import Obj, node, pod, write_config
from tests.unit.simulate.test_workloads import daemon_set, deployment

from kubesched.cli import main

NODES = 5000
ZONES = ("z1", "z2", "z3")
ZONE = "topology.kubernetes.io/zone"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """5000 nodes of 4 CPU / 16Gi in three zones; every tenth one is labelled `role=edge`."""
    items = [
        node(
            f"node-{i:04d}",
            cpu="4",
            memory="16Gi",
            labels={ZONE: ZONES[i % 3], **({"role": "edge"} if i % 10 == 0 else {})},
        )
        for i in range(NODES)
    ]
    path = tmp_path_factory.mktemp("scale") / "nodes.json"
    path.write_bytes(msgspec.json.encode({"apiVersion": "v1", "kind": "List", "items": items}))
    return path


def run_json(capsys: pytest.CaptureFixture[str], *argv: str) -> Obj:
    code = main([*argv, "--output", "json"])
    out, err = capsys.readouterr()
    assert (code, err) == (0, ""), err
    parsed: Obj = json.loads(out)
    return parsed


def test_a_deployment_and_a_daemon_set_roll_out_over_5000_nodes(
    cluster: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    edge_agent = daemon_set("edge-agent", cpu="500m", nodeSelector={"role": "edge"})
    manifest = tmp_path / "rollout.json"
    manifest.write_bytes(
        msgspec.json.encode(
            {"kind": "List", "items": [deployment("web", replicas=1500, cpu="1"), edge_agent]}
        )
    )
    report = run_json(capsys, "simulate", str(cluster), str(manifest))
    web, agent = report["workloads"]
    assert (web["name"], web["scheduled"], web["complete"]) == ("web", 1500, True)
    assert sorted(web["zones"].values()) == [500, 500, 500]  # a ReplicaSet spreads over zones by default
    assert (agent["desired"], agent["scheduled"], len(agent["nodes"])) == (500, 500, 500)
    assert all(int(name[-4:]) % 10 == 0 for name in agent["nodes"])
    assert report["summary"]["scheduled"] == 2000


def test_capacity_over_5000_nodes(cluster: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    shapes = tmp_path / "shapes.json"
    shapes.write_bytes(
        msgspec.json.encode(
            {
                "kind": "List",
                "items": [pod("fits", requests={"cpu": "3"}), pod("huge", requests={"cpu": "5"})],
            }
        )
    )
    fits, huge = run_json(capsys, "capacity", str(shapes), str(cluster), "--max", "300")["shapes"]
    assert (fits["fits"], fits["limited"], sum(fits["zones"].values())) == (300, True, 300)
    assert (huge["fits"], huge["limited"]) == (0, False)
    assert huge["reason"] == (
        f"0/{NODES} nodes are available: {NODES} Insufficient cpu. "
        "preemption: not eligible due to preemptionPolicy=Never."
    )


def test_compare_over_5000_nodes(cluster: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pending = tmp_path / "pending.json"
    pending.write_bytes(
        msgspec.json.encode(
            {"kind": "List", "items": [pod(f"p-{i}", requests={"cpu": "1"}) for i in range(600)]}
        )
    )
    pack = write_config(
        tmp_path / "pack.yaml",
        """profiles:
- schedulerName: default-scheduler
  pluginConfig:
  - name: NodeResourcesFit
    args: {scoringStrategy: {type: MostAllocated}}
""",
    )
    spread, packed = run_json(
        capsys, "compare", str(cluster), str(pending), "--config", "default", "--config", str(pack)
    )["runs"]
    assert spread["scheduled"] == packed["scheduled"] == 600
    # the same mean, but packing concentrates it: a larger spread over the nodes
    assert spread["utilization"]["cpu"]["mean"] == packed["utilization"]["cpu"]["mean"] == 0.03
    assert packed["utilization"]["cpu"]["stddev"] > spread["utilization"]["cpu"]["stddev"]
    assert packed["utilization"]["cpu"]["max"] == 1.0 and spread["utilization"]["cpu"]["max"] == 0.25


def test_sweep_over_5000_nodes_in_worker_processes(
    cluster: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pending = tmp_path / "pending.json"
    pending.write_bytes(
        msgspec.json.encode(
            {"kind": "List", "items": [pod(f"p-{i}", requests={"cpu": "2"}) for i in range(300)]}
        )
    )
    result = run_json(capsys, "sweep", str(cluster), str(pending), "--seeds", "0,1", "--workers", "2")
    assert (result["backend"], result["workers"], len(result["cells"])) == ("processes", 2, 2)
    (group,) = result["groups"]
    assert (group["seeds"], group["errors"]) == (2, 0)
    assert group["figures"]["scheduled"] == {"mean": 300.0, "stddev": 0.0}
    assert group["figures"]["cpuUtilization"] == {"mean": 0.03, "stddev": 0.0}  # 600 of 20000 cores

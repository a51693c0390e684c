"""`kubesched capacity`: counts worked out by hand, the reason for the next copy, and bad input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tests.unit.simulate.simulate_helpers import Obj, node, pod, run_cli, taint, write_yaml
from tests.unit.simulate.test_workloads import ZONE, daemon_set, deployment

SHAPE_KEYS = {
    "shape",
    "requests",
    "replicas",
    "replicasScheduled",
    "fits",
    "limited",
    "reason",
    "nodes",
    "zones",
}


def capacity_json(capsys: pytest.CaptureFixture[str], *argv: str) -> list[Obj]:
    code, out, err = run_cli(capsys, "capacity", *argv, "--output", "json")
    assert (code, err) == (0, ""), err
    report = json.loads(out)
    assert set(report) == {"shapes", "gangs", "nodes", "seconds", "heldByAnotherScheduler"}
    for shape in report["shapes"]:
        assert set(shape) == SHAPE_KEYS
    shapes: list[Obj] = report["shapes"]
    return shapes


@pytest.fixture
def cluster(tmp_path: Path) -> Path:
    """Zone a: one 4-CPU node; zone b: two; plus a tainted node nothing here tolerates."""
    return write_yaml(
        tmp_path / "cluster.yaml",
        node("a1", cpu="4", memory="8Gi", labels={ZONE: "a"}),
        node("b1", cpu="4", memory="8Gi", labels={ZONE: "b"}),
        node("b2", cpu="4", memory="8Gi", labels={ZONE: "b"}),
        node(
            "t", cpu="64", memory="64Gi", labels={ZONE: "b"}, taints=[taint("dedicated", "NoSchedule", "x")]
        ),
    )


def test_a_pod_shape_counts_free_room_per_node_and_zone(
    tmp_path: Path, cluster: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    shape = write_yaml(tmp_path / "shape.yaml", pod("small", requests={"cpu": "1500m", "memory": "1Gi"}))
    (answer,) = capacity_json(capsys, str(shape), str(cluster))
    # 1.5 CPU in 4: two per node on three nodes
    assert answer["fits"] == 6 and answer["limited"] is False
    assert answer["nodes"] == {"a1": 2, "b1": 2, "b2": 2} and answer["zones"] == {"a": 2, "b": 4}
    assert answer["requests"] == {"cpu": "1500m", "memory": "1Gi"}
    assert answer["reason"] == (
        "0/4 nodes are available: 1 node(s) had untolerated taint(s), 3 Insufficient cpu. "
        "preemption: not eligible due to preemptionPolicy=Never."
    )


def test_pending_pods_of_the_input_go_first(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cluster = write_yaml(tmp_path / "c.yaml", node("n", cpu="4"), pod("waiting", requests={"cpu": "3"}))
    shape = write_yaml(tmp_path / "shape.yaml", pod("one", requests={"cpu": "1"}))
    assert capacity_json(capsys, str(shape), str(cluster))[0]["fits"] == 1


def test_copies_never_preempt(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cluster = write_yaml(
        tmp_path / "c.yaml", node("n", cpu="2"), pod("low", requests={"cpu": "2"}, nodeName="n", priority=0)
    )
    shape = write_yaml(tmp_path / "shape.yaml", pod("vip", requests={"cpu": "1"}, priority=1000))
    (answer,) = capacity_json(capsys, str(shape), str(cluster))
    assert answer["fits"] == 0 and "preemptionPolicy=Never" in answer["reason"]


@pytest.mark.parametrize(
    ("spec", "reason"),
    [
        (
            {"schedulerName": "other-scheduler"},
            "not scheduled: schedulerName 'other-scheduler' names no profile of the configuration "
            "(profiles: default-scheduler)",
        ),
        (
            {"schedulingGates": [{"name": "example.com/a"}, {"name": "example.com/b"}]},
            "not scheduled: waiting for scheduling gates: [example.com/a example.com/b]",
        ),
    ],
)
def test_a_shape_the_scheduler_never_tries_says_why(
    tmp_path: Path, cluster: Path, capsys: pytest.CaptureFixture[str], spec: Obj, reason: str
) -> None:
    shape = write_yaml(tmp_path / "shape.yaml", pod("never", requests={"cpu": "1"}, **spec))
    (answer,) = capacity_json(capsys, str(shape), str(cluster))
    assert (answer["fits"], answer["reason"]) == (0, reason)


def test_the_count_stops_at_max(tmp_path: Path, cluster: Path, capsys: pytest.CaptureFixture[str]) -> None:
    shape = write_yaml(tmp_path / "shape.yaml", pod("tiny", requests={"cpu": "10m"}))
    (answer,) = capacity_json(capsys, str(shape), str(cluster), "--max", "5")
    assert (answer["fits"], answer["limited"], answer["reason"]) == (5, True, None)


def test_a_deployment_grows_through_its_controller_so_spreading_sees_its_replicas(
    tmp_path: Path, cluster: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spread = {
        "maxSkew": 1,
        "topologyKey": ZONE,
        "whenUnsatisfiable": "DoNotSchedule",
        "labelSelector": {"matchLabels": {"app": "web"}},
        "matchLabelKeys": ["pod-template-hash"],
    }
    web = deployment("web", replicas=2, cpu="1")
    web["spec"]["template"]["spec"]["topologySpreadConstraints"] = [spread]
    shape = write_yaml(tmp_path / "shape.yaml", web)
    (answer,) = capacity_json(capsys, str(shape), str(cluster))
    # zone a holds 4 one-CPU replicas; with maxSkew 1 zone b may then hold 5: 9 in all, 2 of them its own
    assert (answer["replicas"], answer["replicasScheduled"], answer["fits"]) == (2, 2, 7)
    assert answer["zones"] == {"a": 3, "b": 4}  # the copies beyond its own two (one per zone)
    assert "didn't match pod topology spread constraints" in answer["reason"]


def test_several_shapes_are_answered_each_on_its_own(
    tmp_path: Path, cluster: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    shape = write_yaml(
        tmp_path / "shapes.yaml",
        pod("big", requests={"cpu": "3"}),
        pod("half", requests={"cpu": "2"}),
        daemon_set("agent", cpu="3500m"),
    )
    big, half, agent = capacity_json(capsys, str(shape), str(cluster))
    assert (big["shape"], big["fits"]) == ("Pod default/big", 3)
    assert (half["shape"], half["fits"]) == ("Pod default/half", 6)  # not reduced by the big copies
    assert (agent["shape"], agent["fits"]) == ("DaemonSet kube-system/agent", 3)  # not on the tainted node


def test_the_table_names_each_shape_and_its_count(
    tmp_path: Path, cluster: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    shape = write_yaml(tmp_path / "shape.yaml", pod("small", requests={"cpu": "1500m"}))
    code, out, err = run_cli(capsys, "capacity", str(shape), str(cluster))
    assert (code, err) == (0, "")
    row = next(line for line in out.splitlines() if "Pod default/small" in line)
    assert "│ 6 " in row and "a1:2" in row


@pytest.mark.parametrize(
    ("shape", "error"),
    [
        (node("n"), "holds no Pod or workload"),
        (pod("bad", requests={"cpu": "lots"}), "Pod default/bad: "),
    ],
)
def test_bad_shapes_are_refused_in_one_line(
    tmp_path: Path, cluster: Path, capsys: pytest.CaptureFixture[str], shape: Obj, error: str
) -> None:
    path = write_yaml(tmp_path / "shape.yaml", shape)
    code, out, err = run_cli(capsys, "capacity", str(path), str(cluster))
    assert code == 2 and out == "" and error in err and len(err.strip().splitlines()) == 1


def test_max_must_be_positive(tmp_path: Path, cluster: Path, capsys: pytest.CaptureFixture[str]) -> None:
    shape = write_yaml(tmp_path / "shape.yaml", pod("p"))
    code, _, err = run_cli(capsys, "capacity", str(shape), str(cluster), "--max", "0")
    assert code == 2 and err.strip() == "kubesched: --max: must be at least 1"


def test_a_job_counts_beyond_its_own_parallel_pods(
    tmp_path: Path, cluster: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from tests.unit.simulate.test_workloads import job

    batch = job("batch", parallelism=2)
    batch["spec"]["template"]["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "1"}}
    shape = write_yaml(tmp_path / "shape.yaml", batch)
    (answer,) = capacity_json(capsys, str(shape), str(cluster))
    # 12 one-CPU pods fit on the three untainted nodes: the Job's own 2, then 10 more
    assert (answer["shape"], answer["replicas"], answer["replicasScheduled"], answer["fits"]) == (
        "Job default/batch",
        2,
        2,
        10,
    )


def test_a_limits_only_resource_is_among_the_requests(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The API server defaults a missing request to its limit; `requests` shows what `fits` counted."""
    gpu = "nvidia.com/gpu"
    cluster = write_yaml(tmp_path / "c.yaml", node("g", cpu="8", extra={gpu: "4"}))
    shape = pod("trainer", requests={"cpu": "1"})
    shape["spec"]["containers"][0]["resources"]["limits"] = {gpu: "2"}
    (answer,) = capacity_json(capsys, str(write_yaml(tmp_path / "shape.yaml", shape)), str(cluster))
    assert answer["fits"] == 2 and answer["requests"] == {"cpu": "1", gpu: "2"}

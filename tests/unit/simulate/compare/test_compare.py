"""`kubesched compare`: LeastAllocated against MostAllocated on a GPU cluster worked out by hand."""

from __future__ import annotations

import json
from pathlib import Path

import msgspec
import pytest
from tests.unit.simulate.simulate_helpers import node, pod, run_cli, write_config, write_yaml

from kubesched.api.objects import Pod
from kubesched.api.scheduler_plugins import PodGroup
from kubesched.simulate.compare.gangs import count_gangs
from kubesched.simulate.compare.run import count_reasons, reasons_of

ZONE = "topology.kubernetes.io/zone"
GPU = "nvidia.com/gpu"


def fit_config(path: Path, strategy: str) -> Path:
    return write_config(
        path,
        f"""profiles:
- schedulerName: default-scheduler
  pluginConfig:
  - name: NodeResourcesFit
    args:
      scoringStrategy:
        type: {strategy}
        resources: [{{name: {GPU}, weight: 1}}]
""",
    )


@pytest.fixture
def scenario(tmp_path: Path) -> list[str]:
    """Two 4-GPU nodes in two zones; two 1-GPU pods, then one 4-GPU pod (lowest priority, so last)."""
    cluster = write_yaml(
        tmp_path / "cluster.yaml",
        node("g1", labels={ZONE: "a"}, extra={GPU: "4"}),
        node("g2", labels={ZONE: "b"}, extra={GPU: "4"}),
        pod("small-1", requests={GPU: "1"}, priority=10),
        pod("small-2", requests={GPU: "1"}, priority=10),
        pod("whole", requests={GPU: "4"}, priority=1),
    )
    return [
        str(cluster),
        "--config",
        str(fit_config(tmp_path / "spread.yaml", "LeastAllocated")),
        "--config",
        str(fit_config(tmp_path / "pack.yaml", "MostAllocated")),
    ]


def test_packing_leaves_room_for_the_whole_node_pod_and_spreading_strands_gpus(
    scenario: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run_cli(capsys, "compare", *scenario, "--output", "json")
    assert (code, err) == (0, ""), err
    comparison = json.loads(out)
    assert (comparison["pods"], comparison["nodes"], comparison["seed"]) == (3, 2, 0)
    spread, pack = comparison["runs"]
    assert (spread["name"], pack["name"]) == ("spread", "pack")
    assert (spread["scheduled"], spread["unschedulable"], pack["scheduled"], pack["unschedulable"]) == (
        2,
        1,
        3,
        0,
    )
    assert (
        spread["unschedulableByReason"] == {f"Insufficient {GPU}": 1} and pack["unschedulableByReason"] == {}
    )
    # spreading leaves 3 free GPUs on each node, each below the 4 the waiting pod needs
    assert (spread["stranded"], pack["stranded"]) == ({GPU: 6}, {GPU: 0})
    assert spread["utilization"][GPU] == {"mean": 0.25, "stddev": 0.0, "min": 0.25, "max": 0.25}
    assert pack["utilization"][GPU] == {"mean": 0.75, "stddev": 0.25, "min": 0.5, "max": 1.0}
    assert (spread["largestFree"][GPU], pack["largestFree"][GPU]) == ("3", "2")
    assert spread["largestPlaceable"] == pack["largestPlaceable"] == {GPU: "1"}
    assert (spread["zones"], spread["zoneSkew"]) == ({"a": 1, "b": 1}, 0)
    assert pack["zones"]["a"] + pack["zones"]["b"] == 3 and pack["zoneSkew"] == 1
    assert spread["evicted"] == pack["evicted"] == 0
    assert spread["gangs"] == {"total": 0, "placed": 0, "partial": 0, "notPlaced": 0}


def test_the_table_puts_configurations_side_by_side(
    scenario: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run_cli(capsys, "compare", *scenario)
    assert (code, err) == (0, "")
    lines = out.splitlines()
    header = next(line for line in lines if "FIGURE" in line)
    assert header.index("spread") < header.index("pack")
    stranded = next(line for line in lines if f"{GPU} stranded" in line)
    assert [cell.strip() for cell in stranded.split("│")[1:4]] == [f"{GPU} stranded", "6", "0"]


def test_one_configuration_is_not_a_comparison(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_cli(capsys, "compare", "--config", "default")
    assert (code, out) == (
        2,
        "",
    ) and err.strip() == "kubesched: --config: give at least two configurations to compare"


def test_a_bad_configuration_is_named(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = write_config(tmp_path / "bad.yaml", "profiles: 3\n")
    code, _, err = run_cli(capsys, "compare", "--demo", "--config", "default", "--config", str(bad))
    assert code == 2 and err.startswith(f"kubesched: {bad}: profiles")


@pytest.mark.parametrize(
    ("message", "reasons"),
    [
        (
            "0/5 nodes are available: 1 node(s) were unschedulable, 4 Insufficient cpu. preemption: 0/5 ...",
            ["node(s) were unschedulable", "Insufficient cpu"],
        ),
        (
            "0/3 nodes are available: 3 pod group g needs 8 gpu, the cluster has 2 free.",
            ["pod group g needs 8 gpu, the cluster has 2 free"],
        ),
        ("rejected by Permit: timeout", ["rejected by Permit: timeout"]),
    ],
)
def test_reasons_are_read_off_the_failed_scheduling_message(message: str, reasons: list[str]) -> None:
    assert reasons_of(message) == reasons


def test_gangs_placed_whole_in_part_or_not_at_all() -> None:
    def member(gang: str, i: int, node: str = "") -> Pod:
        labels = {"scheduling.x-k8s.io/pod-group": gang}
        return msgspec.convert(
            {
                "metadata": {"name": f"{gang}-{i}", "namespace": "ml", "labels": labels},
                "spec": {"nodeName": node},
            },
            Pod,
        )

    groups = [
        msgspec.convert(
            {
                "apiVersion": "scheduling.x-k8s.io/v1alpha1",
                "metadata": {"name": g, "namespace": "ml"},
                "spec": {"minMember": 2},
            },
            PodGroup,
        )
        for g in ("whole", "part", "none")
    ]
    pods = [
        member("whole", 0, "n"),
        member("whole", 1, "n"),
        member("part", 0, "n"),
        member("part", 1),
        member("none", 0),
    ]
    counts = count_gangs(pods, groups)
    assert (counts.total, counts.placed, counts.partial, counts.not_placed) == (3, 1, 1, 1)


def test_pods_of_workloads_count_like_any_other(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from tests.unit.simulate.test_workloads import deployment

    cluster = write_yaml(tmp_path / "c.yaml", node("n", cpu="2"), deployment("web", replicas=3, cpu="1"))
    code, out, err = run_cli(
        capsys, "compare", str(cluster), "--config", "default", "--config", "default", "-o", "json"
    )
    assert (code, err) == (0, "")
    runs = json.loads(out)["runs"]
    assert [r["name"] for r in runs] == ["default", "default-2"]
    assert [(r["scheduled"], r["unschedulable"]) for r in runs] == [(2, 1), (2, 1)]
    assert json.loads(out)["pods"] == 3


def test_reasons_with_equal_counts_are_listed_by_name(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Ties are ordered by reason, so two runs of one comparison print the same report."""
    cluster = write_yaml(
        tmp_path / "cluster.yaml",
        node("small-cpu", cpu="1", memory="64Gi"),
        node("small-memory", cpu="64", memory="1Gi"),
        *(pod(f"big-{i}", requests={"memory": "8Gi", "cpu": "8"}) for i in range(3)),
    )
    configs = [
        "--config",
        str(fit_config(tmp_path / "spread.yaml", "LeastAllocated")),
        "--config",
        str(fit_config(tmp_path / "pack.yaml", "MostAllocated")),
    ]
    code, out, err = run_cli(capsys, "compare", str(cluster), *configs, "--output", "json")
    assert (code, err) == (0, ""), err
    for run in json.loads(out)["runs"]:
        assert list(run["unschedulableByReason"].items()) == [
            ("Insufficient cpu", 3),
            ("Insufficient memory", 3),
        ]


def test_reason_counts_are_most_first_then_by_name() -> None:
    reasons = [f"Insufficient example.com/r{i}" for i in (7, 3, 9, 1, 5, 8, 2, 6, 4)]
    message = "0/9 nodes are available: " + ", ".join(f"1 {r}" for r in reasons) + "."
    messages = [message, message, "0/9 nodes are available: 9 Insufficient cpu."]
    counts = count_reasons(reasons_of(m) for m in messages)
    assert list(counts.items()) == [(r, 2) for r in sorted(reasons)] + [("Insufficient cpu", 1)]


@pytest.mark.parametrize(("waiting", "stranded"), [("16", 0), ("6", 8)])
def test_gpus_are_stranded_only_against_a_pod_some_node_could_hold(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], waiting: str, stranded: int
) -> None:
    """Two 8-GPU nodes with 4 free each: a 16-GPU pod fits on no node even empty, so the free GPUs
    are not stranded by packing; a 6-GPU pod would fit were the 8 free GPUs on one node."""
    cluster = write_yaml(
        tmp_path / "cluster.yaml",
        node("g1", cpu="32", memory="64Gi", extra={GPU: "8"}),
        node("g2", cpu="32", memory="64Gi", extra={GPU: "8"}),
        pod("run-1", requests={GPU: "4"}, nodeName="g1"),
        pod("run-2", requests={GPU: "4"}, nodeName="g2"),
        pod("waiting", requests={GPU: waiting}),
    )
    code, out, err = run_cli(
        capsys, "compare", str(cluster), "--config", "default", "--config", "default", "-o", "json"
    )
    assert (code, err) == (0, "")
    assert [r["stranded"] for r in json.loads(out)["runs"]] == [{GPU: stranded}] * 2


def test_a_prefilter_rejection_counts_under_its_plugin_not_as_a_sentence(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Each pod's PreFilter message names its own claim; the reason rows must not grow one per pod."""
    pods = []
    for i in range(2):
        p = pod(f"db-{i}", requests={"cpu": "1"})
        p["spec"]["volumes"] = [{"name": "data", "persistentVolumeClaim": {"claimName": f"data-{i}"}}]
        pods.append(p)
    cluster = write_yaml(tmp_path / "c.yaml", node("n"), *pods)
    code, out, err = run_cli(
        capsys, "compare", str(cluster), "--config", "default", "--config", "default", "-o", "json"
    )
    assert (code, err) == (0, "")
    for run in json.loads(out)["runs"]:
        assert run["unschedulableByReason"] == {
            "rejected by VolumeRestrictions before filtering nodes (PreFilter)": 2
        }

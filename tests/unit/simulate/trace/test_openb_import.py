"""`kubesched trace import openb`: the trace's rows as nodes, DRA devices and pods, the authors'
resizing protocol, one-line errors for bad rows, and a replay of the scenario it writes.

The data is the committed slice of the trace (examples/openb-slice: 41 nodes, 272 tasks)."""

from __future__ import annotations

import csv
import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kubesched.cli import main
from kubesched.config import default_config
from kubesched.errors import InputError
from kubesched.plugins import default_registry
from kubesched.simulate.replay.run import replay
from kubesched.simulate.scenario import parse_scenario
from kubesched.simulate.trace.openb import DRIVER, MODEL_LABEL, NVIDIA_GPU, scenario_for
from kubesched.simulate.trace.openb_csv import TraceTask, read_nodes, read_tasks
from kubesched.simulate.trace.openb_workload import SPACING, arrange, ranked_nodes

SLICE = Path(__file__).resolve().parents[4] / "examples" / "openb-slice"
NODES, PODS = SLICE / "nodes.csv", SLICE / "pods.csv"
TASK_HEADER = "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time\n"


def task(name: str, num_gpu: int = 1, gpu_milli: int = 1000, models: tuple[str, ...] = ()) -> TraceTask:
    return TraceTask(name, 4000, 8192, num_gpu, gpu_milli, models, 0.0)


def objects(document: dict[str, Any], kind: str) -> list[dict[str, Any]]:
    return [e["create"] for e in document["spec"]["events"] if e["create"]["kind"] == kind]


def test_the_slice_reads_as_the_trace_counts_it() -> None:
    nodes, tasks = read_nodes(NODES), read_tasks(PODS)
    assert (len(nodes), sum(n.gpus for n in nodes)) == (41, 188)
    assert len(tasks) == 272 and sum(t.gpu_total for t in tasks) == 209_350
    assert tasks[1] == TraceTask("openb-pod-0030", 16000, 32768, 1, 1000, (), 9_957_349.0)


def test_dra_mode_gives_each_gpu_a_shareable_device_and_each_task_a_claim_template() -> None:
    nodes = read_nodes(NODES)
    tasks = [
        task("whole", 2),
        task("shared", 1, 470),
        task("picky", 1, 300, ("V100M16", "V100M32")),
        task("cpu", 0, 0),
    ]
    imported = scenario_for("t", nodes, arrange(tasks, 188_000, order="sequence"))
    doc = imported.document
    slices = objects(doc, "ResourceSlice")
    assert len(slices) == 41 and sum(len(s["spec"]["devices"]) for s in slices) == 188
    device = slices[0]["spec"]["devices"][0]
    assert device["name"] == "gpu-0" and device["allowMultipleAllocations"] is True
    assert device["capacity"] == {"share": {"value": "1000"}}
    assert device["attributes"]["model"] == {"string": nodes[0].model}
    assert [c["metadata"]["name"] for c in objects(doc, "DeviceClass")] == [DRIVER]
    templates = {
        t["metadata"]["name"]: t["spec"]["spec"]["devices"]["requests"][0]["exactly"]
        for t in objects(doc, "ResourceClaimTemplate")
    }
    assert templates["gpu-2"] == {"deviceClassName": DRIVER, "count": 2}  # whole devices: no capacity request
    assert templates["gpu-share-470"]["capacity"] == {"requests": {"share": "470"}}
    picky = templates["gpu-share-300-v100m16-v100m32"]
    assert picky["selectors"][0]["cel"]["expression"] == (
        'device.attributes["gpu.kubesched.io"].model in ["V100M16", "V100M32"]'
    )
    pods = {p["metadata"]["name"]: p["spec"] for p in objects(doc, "Pod")}
    assert pods["shared"]["resourceClaims"] == [{"name": "gpu", "resourceClaimTemplateName": "gpu-share-470"}]
    assert "resourceClaims" not in pods["cpu"]
    assert pods["whole"]["containers"][0]["resources"]["requests"] == {"cpu": "4", "memory": "8192Mi"}
    assert [e["at"] for e in doc["spec"]["events"] if e["create"]["kind"] == "Pod"] == [
        0,
        0.001,
        0.002,
        0.003,
    ]
    assert doc["spec"]["until"] == 1.003
    scenario = parse_scenario(json.dumps(doc), "t.json")  # valid as written
    assert len(scenario.events) == 41 + 4 and len(scenario.objects.resource_slices) == 41


def test_extended_mode_counts_gpus_and_rounds_shares_up() -> None:
    nodes = read_nodes(NODES)
    tasks = [task("shared", 1, 470), task("whole", 4), task("picky", 1, 1000, ("T4",))]
    imported = scenario_for("t", nodes, arrange(tasks, 188_000), gpu_as="extended")
    assert imported.rounded_up == 1
    doc = imported.document
    assert not objects(doc, "ResourceSlice") and not objects(doc, "ResourceClaimTemplate")
    node = objects(doc, "Node")[0]
    assert node["status"]["allocatable"][NVIDIA_GPU] == str(nodes[0].gpus)
    assert node["metadata"]["labels"][MODEL_LABEL] == nodes[0].model
    pods = {p["metadata"]["name"]: p["spec"] for p in objects(doc, "Pod")}
    resources = pods["shared"]["containers"][0]["resources"]
    assert resources["requests"][NVIDIA_GPU] == "1" and resources["limits"] == {NVIDIA_GPU: "1"}
    term = pods["picky"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    assert term["nodeSelectorTerms"][0]["matchExpressions"] == [
        {"key": MODEL_LABEL, "operator": "In", "values": ["T4"]}
    ]


def test_resizing_draws_tasks_until_the_next_would_pass_the_target() -> None:
    tasks = read_tasks(PODS)
    capacity = 188_000
    big = arrange(tasks, capacity, target_percent=130, seed=42)
    assert big.kept == 272 and big.sampled > 0 and big.removed == 0
    requested = big.gpu_requested
    # The authors' stop rule: the next draw's share of one GPU would pass the target.
    assert requested <= 1.3 * capacity + 7000 and requested > 1.3 * capacity - 1000
    assert big.arrivals[-1].name.startswith("openb-pod-") and "-s" in big.arrivals[-1].name
    drawn = big.arrivals[272:]
    assert min(a.at for a in drawn) > max(a.at for a in big.arrivals[:272])
    assert arrange(tasks, capacity, target_percent=130, seed=42) == big  # seeded
    assert arrange(tasks, capacity, target_percent=130, seed=43) != big
    small = arrange(tasks, capacity, target_percent=50, seed=1)
    assert small.removed > 0 and small.gpu_requested <= 0.5 * capacity
    assert Counter(a.task.name for a in small.arrivals).most_common(1)[0][1] == 1


def test_shuffled_order_is_seeded_and_keeps_only_the_order() -> None:
    tasks = read_tasks(PODS)
    one = arrange(tasks, 188_000, seed=7, order="shuffled")
    assert [a.at for a in one.arrivals[:3]] == [0, SPACING, 2 * SPACING]
    assert sorted(a.name for a in one.arrivals) == sorted(t.name for t in tasks)
    assert [a.name for a in one.arrivals] != [t.name for t in tasks]
    assert arrange(tasks, 188_000, seed=7, order="shuffled") == one
    in_trace = arrange(tasks, 188_000)
    assert in_trace.arrivals[0].at == 0 and in_trace.arrivals[1].at == 9_957_349


def test_ranked_nodes_put_a_seeded_random_rank_before_each_name() -> None:
    """As the authors' simulator renames nodes: ties by lowest name then fall on a seeded random order."""
    nodes = read_nodes(NODES)
    ranked = ranked_nodes(nodes, 42)
    assert sorted(n.name.split("-", 1)[1] for n in ranked) == sorted(n.name for n in nodes)
    assert sorted(int(n.name[:4]) for n in ranked) == list(range(len(nodes)))
    assert all(n.name[4] == "-" for n in ranked)
    assert ranked_nodes(nodes, 42) == ranked and ranked_nodes(nodes, 43) != ranked
    first = min(ranked, key=lambda n: n.name)
    assert first.name.endswith(next(n.name for n in nodes if n.name == first.name[5:]))
    assert [n.name[5:] for n in sorted(ranked, key=lambda n: n.name)] != sorted(n.name for n in nodes)


def _write(path: Path, rows: list[list[str]]) -> Path:
    with path.open("w", newline="") as f:
        csv.writer(f).writerows(rows)
    return path


GOOD_ROW = ["p-1", "6000", "12288", "1", "460", "", "LS", "Running", "427061"]
BAD_CELLS = {
    1: ["", "x", "-5", "1.5"],  # cpu_milli
    2: ["", "12 Gi", "-1"],  # memory_mib
    3: ["two", "-1", ""],  # num_gpu
    4: ["1001", "0", "many"],  # gpu_milli of a one-GPU task
    8: ["soon", "-3", "inf"],  # creation_time
}
COLUMNS = TASK_HEADER.strip().split(",")


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    rows=st.integers(min_value=0, max_value=20),
    column=st.sampled_from(sorted(BAD_CELLS)),
    data=st.data(),
)
def test_a_bad_cell_is_one_error_naming_file_row_and_column(
    tmp_path: Path, rows: int, column: int, data: st.DataObject
) -> None:
    bad = list(GOOD_ROW)
    bad[0] = "p-bad"
    bad[column] = data.draw(st.sampled_from(BAD_CELLS[column]))
    body = [[f"p{i}", *GOOD_ROW[1:]] for i in range(rows)]
    path = _write(tmp_path / "pods.csv", [COLUMNS, *body, bad])
    with pytest.raises(InputError) as err:
        read_tasks(path)
    assert str(err.value).startswith(f"{path}: row {rows + 2}: column {COLUMNS[column]}: ")
    assert "\n" not in str(err.value)


@pytest.mark.parametrize(
    ("rows", "message"),
    [
        ([["sn", "cpu_milli", "gpu"]], "row 1: missing column memory_mib"),
        (
            [["sn", "cpu_milli", "memory_mib", "gpu", "model"], ["n1", "1", "1", "1", "T4", "extra"]],
            "row 2: 6 fields",
        ),
        (
            [
                ["sn", "cpu_milli", "memory_mib", "gpu", "model"],
                ["n1", "1", "1", "1", "T4"],
                ["n1", "1", "1", "1", "T4"],
            ],
            'row 3: column sn: "n1" appears twice',
        ),
    ],
)
def test_bad_node_lists(tmp_path: Path, rows: list[list[str]], message: str) -> None:
    path = _write(tmp_path / "nodes.csv", rows)
    with pytest.raises(InputError, match=message):
        read_nodes(path)


def test_several_gpus_are_whole_and_variants_without_times_arrive_in_file_order(tmp_path: Path) -> None:
    header = ["name", "cpu_milli", "memory_mib", "num_gpu", "gpu_milli"]
    path = _write(tmp_path / "p.csv", [header, ["a", "1", "1", "2", "500"]])
    with pytest.raises(InputError, match="row 2: column gpu_milli: a task of 2 GPUs takes them whole"):
        read_tasks(path)
    path = _write(tmp_path / "p.csv", [header[:4], ["a", "1", "1", "2"], ["b", "1", "1", "0"]])
    tasks = read_tasks(path)
    assert [(t.gpu_milli, t.created) for t in tasks] == [(1000, None), (0, None)]
    assert [a.at for a in arrange(tasks, 1000).arrivals] == [0, SPACING]


def test_the_command_writes_a_scenario_and_a_bad_row_exits_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "openb.json"
    args = ["trace", "import", "openb", str(NODES), str(PODS), "-o", str(out)]
    assert main([*args, "--target-gpu-percent", "130", "--seed", "42", "--order", "shuffled"]) == 0
    err = capsys.readouterr().err
    assert "41 nodes (188 GPUs)" in err and "272 from the trace" in err and "drawn" in err
    doc = json.loads(out.read_text())
    assert doc["metadata"]["annotations"]["kubesched.io/target-gpu-percent"] == "130"
    assert main([*args[:-1], str(tmp_path / "x.json"), "--gpu-as", "extended"]) == 0
    assert "tasks want part of a GPU and ask for a whole nvidia.com/gpu instead" in capsys.readouterr().err
    bad = _write(tmp_path / "bad.csv", [COLUMNS, GOOD_ROW, ["p-2", *GOOD_ROW[1:3], "x", *GOOD_ROW[4:]]])
    assert main(["trace", "import", "openb", str(NODES), str(bad), "-o", str(out)]) == 2
    assert (
        capsys.readouterr().err.strip()
        == f'kubesched: {bad}: row 3: column num_gpu: expected a whole number, got "x"'
    )


@pytest.mark.parametrize("gpu_as", ["dra", "extended"])
def test_the_slice_replays_and_never_overcommits_a_gpu(gpu_as: str) -> None:
    nodes, tasks = read_nodes(NODES), read_tasks(PODS)
    workload = arrange(tasks, 188_000, target_percent=130, seed=42, order="shuffled")
    doc = scenario_for("t", nodes, workload, gpu_as=gpu_as).document
    scenario = parse_scenario(json.dumps(doc), "t.json")
    registry = default_registry()
    report = replay(scenario, default_config(registry), registry)
    summary = report.summary
    assert summary.pods == len(workload.arrivals) and summary.errors == 0
    assert 0 < summary.scheduled < summary.pods  # 130 % of the GPUs cannot all fit
    by_name = {a.name: a.task for a in workload.arrivals}
    used: Counter[str] = Counter()
    for p in report.pods:
        if p.result == "Scheduled":
            t = by_name[p.name]
            used[p.node or ""] += t.gpu_total if gpu_as == "dra" else t.num_gpu * 1000
    capacity = {n.name: n.gpus * 1000 for n in nodes}
    assert all(used[n] <= capacity[n] for n in used)
    if gpu_as == "dra":
        shares: Counter[tuple[str, str]] = Counter()
        for p in report.pods:
            for d in p.devices:
                shares[(d.pool, d.device)] += by_name[p.name].gpu_milli
        assert shares and max(shares.values()) <= 1000

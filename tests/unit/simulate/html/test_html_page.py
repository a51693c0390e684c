"""The HTML report's content, checked without a browser (tests/e2e/test_html_report.py renders it)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from tests.unit.simulate.replay.test_replay import create, run

from kubesched.cli import main
from kubesched.simulate.html.figures import MAX_HEATMAP_ROWS
from kubesched.simulate.html.page import render_page
from kubesched.simulate.replay.html import replay_figures, replay_html, wait_bin_size
from kubesched.simulate.snapshot.html import snapshot_figures
from kubesched.simulate.snapshot.model import NodeUsage, Report, Summary
from kubesched.testing.builders import make_node, make_pod

REPO = Path(__file__).resolve().parents[4]


def embedded_data(page: bytes) -> dict[str, object]:
    match = re.search(rb'<script type="application/json" id="report-data">(.*?)</script>', page, re.S)
    assert match is not None
    return json.loads(match[1])  # type: ignore[no-any-return]


def test_hostile_text_cannot_close_the_data_script() -> None:
    evil = "</script><script>alert(1)</script><!--"
    page = render_page(evil, evil, [("x", evil)], [], [("pod", "POD")], [{"ns": "a", "name": evil}])
    assert page.count(b"</script>") == 3  # plotly.js, the data and the app: nothing else closes
    assert embedded_data(page)["pods"] == [{"ns": "a", "name": evil}]
    assert b"<title>&lt;/script&gt;" in page


def test_the_page_embeds_plotly_and_fetches_nothing() -> None:
    page = render_page("t", "", [], [], [], [])
    assert b"plotly.js v" in page
    assert not re.search(rb'<(script|link)[^>]+(src|href)="https?:', page)


def test_a_replay_page_carries_each_pod_with_its_times_and_victims() -> None:
    report = run(
        create(0, make_node("n1", cpu="2")),
        create(0, make_pod("batch", cpu="2", priority=0)),
        create(10, make_pod("urgent", cpu="2", priority=1000)),
    )
    data = embedded_data(replay_html(report))
    pods = {p["name"]: p for p in data["pods"]}  # type: ignore[attr-defined, index]
    assert pods["batch"]["ended"] == "Preempted" and pods["batch"]["endedAt"] == 10.0
    assert pods["urgent"]["victims"] == ["default/batch"]
    ids = [f["id"] for f in data["figures"]]  # type: ignore[attr-defined, index]
    assert ids == [
        "chart-pending",
        "chart-utilization",
        "chart-latency",
        "chart-heatmap-cpu",
        "chart-heatmap-memory",
    ]


def test_big_clusters_are_drawn_as_groups_of_nodes() -> None:
    nodes = [
        NodeUsage(
            name=f"n{i:04d}",
            pods=1,
            allocatable={"cpu": "4", "pods": "10"},
            requested={"cpu": "2" if i % 2 else "0"},
        )
        for i in range(1000)
    ]
    summary = Summary(scheduled=0, unschedulable=0, pods=0, nodes=1000, seconds=0, pods_per_second=0)
    heat = snapshot_figures(Report(pods=[], nodes=nodes, summary=summary))[1]["data"][0]
    assert len(heat["y"]) == MAX_HEATMAP_ROWS
    assert heat["y"][0] == "n0000 … n0004 (5 nodes)"
    assert heat["x"] == ["cpu", "memory", "pods"]
    assert [row[0] for row in heat["z"][:2]] == [20.0, 30.0]  # mean of 0,50,0,50,0 and 50,0,50,0,50
    assert heat["z"][0][2] == 10.0


def test_a_bad_scenario_is_one_line_and_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "s.yaml"
    bad.write_text("apiVersion: kubesched.io/v1alpha1\nkind: Scenario\nspec:\n  events:\n  - at: soon\n")
    assert main(["simulate", "--scenario", str(bad)]) == 2
    err = capsys.readouterr().err
    assert err.strip().count("\n") == 0
    assert f'{bad}: spec.events[0].at: invalid duration "soon"' in err


def test_the_bundled_scenario_replays_from_the_cli(capsys: pytest.CaptureFixture[str]) -> None:
    assert (
        main(["simulate", "--scenario", str(REPO / "examples/replay/shop-morning.yaml"), "-o", "json"]) == 0
    )
    out = json.loads(capsys.readouterr().out)
    assert out["summary"]["scheduled"] == 21
    assert out["summary"]["evictions"] == {"Preempted": 2, "NodeDeleted": 3}
    thumbnails = [p for p in out["pods"] if p["name"].startswith("thumbnail-")]
    assert {p["waitSeconds"] for p in thumbnails} == {540.0}  # from 3m until the reports complete at 12m


def test_a_snapshot_page_carries_its_workloads_and_each_pods_workload(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from tests.unit.simulate.simulate_helpers import node, write_yaml
    from tests.unit.simulate.test_workloads import deployment

    cluster = write_yaml(tmp_path / "c.yaml", node("n1", cpu="1"), deployment("web", replicas=3, cpu="400m"))
    assert main(["simulate", str(cluster), "-o", "html"]) == 0
    data = embedded_data(capsys.readouterr().out.encode())
    assert data["workloads"] == [
        {
            "workload": "Deployment default/web",
            "scheduled": 2,
            "desired": 3,
            "pending": 1,
            "old": 0,
            "complete": False,
            "zones": "",
            "message": "0/1 nodes are available: 1 Insufficient cpu. preemption: 0/1 nodes are available: "
            "1 No preemption victims found for incoming pod.",
        }
    ]
    assert {p["workload"] for p in data["pods"]} == {"Deployment default/web"}  # type: ignore[attr-defined]
    page = render_page("t", "", [], [], [], [])
    assert b'id="workloads"' in page and embedded_data(page)["workloads"] == []


def test_a_day_long_replay_is_plotted_in_hours_and_a_short_one_in_minutes() -> None:
    """A day in minutes read as 0..1440 on every time axis."""
    day = run(
        create(0, make_node("n1", cpu="2")),
        create(0, make_pod("early", cpu="1")),
        create(86_400, make_pod("late", cpu="1")),
    )
    figures = {f["id"]: f for f in replay_figures(day)}
    assert figures["chart-pending"]["layout"]["xaxis"]["title"]["text"] == "virtual time (hours)"
    assert max(figures["chart-pending"]["data"][0]["x"]) == 24.0
    assert "hour %{x}" in figures["chart-heatmap-cpu"]["data"][0]["hovertemplate"]
    short = run(create(0, make_node("n1", cpu="2")), create(600, make_pod("p", cpu="1")))
    pending = {f["id"]: f for f in replay_figures(short)}["chart-pending"]
    assert pending["layout"]["xaxis"]["title"]["text"] == "virtual time (minutes)"


def test_the_wait_histogram_bins_fit_the_waits_most_pods_had() -> None:
    """Plotly's own binning drew 500 s bins over waits of seconds."""
    assert wait_bin_size([0.0] * 17 + [540.0] * 4, 540.0) == 20.0
    seconds = [1.0, 2.0, 3.0] * 100
    assert wait_bin_size(seconds, 3.0) == 0.1  # 40 bins up to the p99
    assert wait_bin_size([*seconds, 600.0], 3.0) == 2.0  # one outlier: at most 400 bins in all
    assert wait_bin_size([0.0, 0.0], 0.0) is None
    report = run(
        create(0, make_node("n1", cpu="2")),
        create(0, make_pod("a", cpu="2"), run_for=30),
        create(0, make_pod("b", cpu="2")),
    )
    latency = {f["id"]: f for f in replay_figures(report)}["chart-latency"]
    assert latency["data"][0]["xbins"] == {"start": 0, "size": 1.0}  # b waited 30 s


def test_a_snapshot_page_carries_its_pod_groups_with_their_members(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Two 1-cpu nodes: the gang of two fits, the gang of three needs a third node and binds nothing."""
    from tests.unit.simulate.simulate_helpers import node, pod, write_yaml

    docs: list[dict[str, object]] = [node("n1", cpu="1"), node("n2", cpu="1")]
    for name, size in (("pair", 2), ("trio", 3)):
        docs.append(
            {
                "apiVersion": "scheduling.k8s.io/v1beta1",
                "kind": "PodGroup",
                "metadata": {"name": name, "namespace": "default"},
                "spec": {"schedulingPolicy": {"gang": {"minCount": size}}},
            }
        )
        docs += [
            pod(f"{name}-{i}", requests={"cpu": "600m"}, schedulingGroup={"podGroupName": name})
            for i in range(size)
        ]
    cluster = write_yaml(tmp_path / "c.yaml", *docs)
    assert main(["simulate", str(cluster), "-o", "html", "--feature-gates=GenericWorkload=true"]) == 0
    groups = embedded_data(capsys.readouterr().out.encode())["podGroups"]
    assert isinstance(groups, list)
    pair, trio = groups
    assert (pair["group"], pair["result"], pair["bound"], pair["pods"]) == ("default/pair", "Scheduled", 2, 2)
    assert sorted(pair["placement"].split()) == ["pair-0→n1", "pair-1→n2"] or sorted(
        pair["placement"].split()
    ) == ["pair-0→n2", "pair-1→n1"]
    assert (trio["result"], trio["bound"], trio["placement"]) == ("Unschedulable", 0, "")
    assert trio["message"].startswith("minCount (3) cannot be satisfied")
    assert trio["members"] == ["default/trio-0", "default/trio-1", "default/trio-2"]
    page = render_page("t", "", [], [], [], [])
    assert b'id="pod-groups"' in page and embedded_data(page)["podGroups"] == []

"""`kubesched compare --output html`: each configuration's figures land in its own traces and columns.

Every figure below differs between the two configurations, so a figure dropped, or read off the
wrong configuration, fails a test; tests/e2e/test_html_report.py renders the page in Chromium.
"""

from __future__ import annotations

from typing import Any

import pytest
from tests.unit.simulate.compare import test_compare as compare_cases
from tests.unit.simulate.html.test_html_page import embedded_data
from tests.unit.simulate.simulate_helpers import run_cli

from kubesched.simulate.compare.gangs import GangCounts
from kubesched.simulate.compare.html import compare_html
from kubesched.simulate.compare.model import Comparison, ConfigRun, Spread

GPU = compare_cases.GPU
#: Spread (LeastAllocated) and pack (MostAllocated) on two 4-GPU nodes: the fixture test_compare uses.
scenario = compare_cases.scenario


def config_run(name: str, **figures: Any) -> ConfigRun:
    return ConfigRun(name=name, config=f"{name}.yaml", ignored=0, seconds=0.5, **figures)


SPREAD = config_run(
    "spread",
    scheduled=7,
    unschedulable=3,
    errors=1,
    unschedulable_by_reason={f"Insufficient {GPU}": 3, "node(s) had untolerated taint(s)": 1},
    evicted=2,
    preemptors=1,
    utilization={
        "cpu": Spread(mean=0.4, stddev=0.05, min=0.3, max=0.5),
        GPU: Spread(mean=0.25, stddev=0.0, min=0.25, max=0.25),
    },
    stranded={GPU: 6},
    largest_free={"cpu": "2", GPU: "3"},
    largest_placeable={GPU: "1"},
    zones={"a": 4, "b": 4},
    zone_skew=0,
    gangs=GangCounts(total=3, placed=1, partial=2, not_placed=0),
)
PACK = config_run(
    "pack",
    scheduled=10,
    unschedulable=0,
    errors=0,
    unschedulable_by_reason={},
    evicted=0,
    preemptors=0,
    utilization={
        "cpu": Spread(mean=0.6, stddev=0.3, min=0.1, max=0.9),
        GPU: Spread(mean=0.75, stddev=0.25, min=0.5, max=1.0),
    },
    stranded={GPU: 0},
    largest_free={"cpu": "3500m", GPU: "4"},
    largest_placeable={GPU: "4"},
    zones={"a": 9, "b": 1},
    zone_skew=8,
    gangs=GangCounts(total=3, placed=3, partial=0, not_placed=0),
)


def page_of(*runs: ConfigRun) -> dict[str, Any]:
    data = embedded_data(compare_html(Comparison(runs=list(runs), pods=11, nodes=4, seed=3)))
    return data


def figures_of(data: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {f["id"]: f for f in data["figures"]}


def traces(figure: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {t["name"]: t for t in figure["data"]}


def test_each_configuration_has_its_own_trace_in_every_chart() -> None:
    figures = figures_of(page_of(SPREAD, PACK))
    assert list(figures) == [
        "chart-compare-results",
        "chart-compare-reasons",
        "chart-compare-preemptions",
        "chart-compare-utilization",
        "chart-compare-stranded",
        "chart-compare-zones",
        "chart-compare-gangs",
        "chart-compare-table",
    ]
    results = traces(figures["chart-compare-results"])
    assert results["Scheduled"]["x"] == ["spread", "pack"]
    assert (results["Scheduled"]["y"], results["Unschedulable"]["y"], results["Error"]["y"]) == (
        [7, 10],
        [3, 0],
        [1, 0],
    )
    reasons = traces(figures["chart-compare-reasons"])
    assert reasons["spread"]["y"] == [f"Insufficient {GPU}", "node(s) had untolerated taint(s)"]
    assert (reasons["spread"]["x"], reasons["pack"]["x"]) == ([3, 1], [0, 0])
    preemptions = traces(figures["chart-compare-preemptions"])
    assert (preemptions["spread"]["y"], preemptions["pack"]["y"]) == ([2, 1], [0, 0])
    utilization = traces(figures["chart-compare-utilization"])
    assert utilization["spread"]["x"] == ["cpu", GPU]
    assert (utilization["spread"]["y"], utilization["pack"]["y"]) == ([40.0, 25.0], [60.0, 75.0])
    assert utilization["spread"]["error_y"]["array"] == [5.0, 0.0]
    assert utilization["pack"]["error_y"]["array"] == [30.0, 25.0]
    assert utilization["pack"]["customdata"] == [[30.0, 10.0, 90.0], [25.0, 50.0, 100.0]]
    stranded = traces(figures["chart-compare-stranded"])
    assert (stranded["spread"]["x"], stranded["spread"]["y"], stranded["pack"]["y"]) == ([GPU], [6], [0])
    zones = figures["chart-compare-zones"]
    assert (traces(zones)["spread"]["y"], traces(zones)["pack"]["y"]) == ([4, 4], [9, 1])
    assert zones["layout"]["xaxis"]["title"]["text"] == "zone skew (max - min): spread 0, pack 8"
    gangs = traces(figures["chart-compare-gangs"])
    assert gangs["placed whole"]["x"] == ["spread", "pack"]
    assert (gangs["placed whole"]["y"], gangs["in part"]["y"], gangs["not placed"]["y"]) == (
        [1, 3],
        [2, 0],
        [0, 0],
    )


def test_the_table_has_one_column_per_configuration_in_order() -> None:
    table = figures_of(page_of(SPREAD, PACK))["chart-compare-table"]["data"][0]
    assert table["header"]["values"] == ["figure", "spread", "pack"]
    labels, spread, pack = table["cells"]["values"]
    rows = {label: (s, p) for label, s, p in zip(labels, spread, pack, strict=True)}
    assert rows[f"most {GPU} free on one node"] == ("3", "4")
    assert rows["largest input pod still placeable"] == (f"{GPU}=1", f"{GPU}=4")
    assert rows[f"{GPU} stranded"] == ("6", "0")
    assert rows["zone skew (max - min)"] == ("0", "8")
    assert rows["gangs placed whole"] == ("1/3", "3/3")


def test_cards_name_each_configuration_and_the_page_has_no_pods_table() -> None:
    data = page_of(PACK, SPREAD)
    cards = {c["label"]: c["value"] for c in data["cards"]}
    assert cards["scheduled by pack"] == "10/11" and cards["scheduled by spread"] == "7/11"
    assert (cards["pods"], cards["nodes"], cards["configurations"]) == ("11", "4", "2")
    assert "pack (pack.yaml), spread (spread.yaml); seed 3" in data["subtitle"]
    assert (data["columns"], data["pods"]) == ([], [])


def test_charts_with_nothing_to_show_are_left_out() -> None:
    quiet = config_run(
        "quiet",
        scheduled=1,
        unschedulable=0,
        errors=0,
        unschedulable_by_reason={},
        evicted=0,
        preemptors=0,
        utilization={"cpu": Spread(mean=0.1, stddev=0.0, min=0.1, max=0.1)},
        stranded={},
        largest_free={"cpu": "1"},
        largest_placeable=None,
        zones={},
        zone_skew=0,
        gangs=GangCounts(),
    )
    ids = [f["id"] for f in page_of(quiet, quiet)["figures"]]
    # no preemption chart either: it was drawn as an empty frame
    assert ids == ["chart-compare-results", "chart-compare-utilization", "chart-compare-table"]


def test_the_cli_writes_the_page_from_a_real_comparison(
    scenario: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    """Two 4-GPU nodes, two 1-GPU pods and a 4-GPU pod: spreading strands 6 GPUs, packing places all."""
    code, out, err = run_cli(capsys, "compare", *scenario, "-o", "html")
    assert (code, err) == (0, ""), err
    figures = figures_of(embedded_data(out.encode()))
    assert traces(figures["chart-compare-results"])["Scheduled"]["y"] == [2, 3]
    assert traces(figures["chart-compare-stranded"])["spread"]["y"] == [6]
    assert traces(figures["chart-compare-stranded"])["pack"]["y"] == [0]
    assert traces(figures["chart-compare-reasons"])["spread"]["x"] == [1]
    utilization = traces(figures["chart-compare-utilization"])
    gpu = utilization["pack"]["x"].index(GPU)
    assert (utilization["spread"]["y"][gpu], utilization["pack"]["y"][gpu]) == (25.0, 75.0)

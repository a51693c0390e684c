"""`--output html` in a real browser: Debian's headless Chromium loads the file, with the network off.

The page must render its charts and its pods table with no console error and no failed request, and
one click on a pod must show its explanation. A screenshot of each page is kept in
$KUBESCHED_ARTIFACTS (default: .artifacts/ in the repository, git-ignored) for a person to look at.
Chromium missing is a failure that says how to install it (`tools/browser/install-chromium.sh`,
which `make test` runs), never a skip.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
ARTIFACTS = Path(os.environ.get("KUBESCHED_ARTIFACTS", REPO / ".artifacts"))
#: The flags that work on this kind of machine: no sandbox as root, no GPU, no background traffic.
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]

pytestmark = pytest.mark.xdist_group("browser")


def chromium_path() -> str:
    found = os.environ.get("KUBESCHED_CHROMIUM") or shutil.which("chromium")
    if not found:
        pytest.fail(
            "Chromium is not installed: run tools/browser/install-chromium.sh (make test does), "
            "or set KUBESCHED_CHROMIUM to a Chromium binary",
            pytrace=False,
        )
    return found


def kubesched_html(tmp_path: Path, name: str, *argv: str, command: str = "simulate") -> Path:
    out = tmp_path / f"{name}.html"
    with out.open("wb") as sink:
        done = subprocess.run(
            [sys.executable, "-m", "kubesched.cli", command, *argv, "--output", "html"],
            stdout=sink,
            stderr=subprocess.PIPE,
            text=False,
            timeout=300,
            check=False,
        )
    assert done.returncode == 0, done.stderr.decode()
    return out


@pytest.fixture(scope="module")
def browser() -> Iterator[object]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=chromium_path(), headless=True, args=CHROMIUM_ARGS)
        yield b
        b.close()


def open_report(browser: object, path: Path, screenshot: str) -> tuple[object, list[str]]:
    """Load the file offline; returns the page and every console error, page error and request."""
    page = browser.new_page(viewport={"width": 1400, "height": 1000})  # type: ignore[attr-defined]
    problems: list[str] = []
    page.on(
        "console", lambda m: problems.append(f"console {m.type}: {m.text}") if m.type == "error" else None
    )
    page.on("pageerror", lambda e: problems.append(f"page error: {e}"))
    page.on("request", lambda r: None if r.url.startswith("file:") else problems.append(f"request {r.url}"))
    page.goto(path.as_uri())
    page.wait_for_selector("body[data-rendered=true]", timeout=60_000)
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / screenshot), full_page=True)
    return page, problems


def rendered_charts(page: object) -> dict[str, int]:
    """Chart id -> number of drawn SVG marks (paths and heat-map images) inside it."""
    return page.evaluate(  # type: ignore[attr-defined, no-any-return]
        """() => Object.fromEntries([...document.querySelectorAll('#charts > .chart')].map(
             d => [d.id, d.querySelectorAll('.main-svg path, .main-svg image').length]))"""
    )


def test_a_replay_report_renders_its_charts_and_explains_a_pod(browser: object, tmp_path: Path) -> None:
    path = kubesched_html(tmp_path, "replay", "--scenario", str(REPO / "examples/replay/shop-morning.yaml"))
    assert b"https://" not in path.read_bytes().split(b"<script>", 1)[0]  # nothing fetched by the page head
    page, problems = open_report(browser, path, "replay-report.png")
    charts = rendered_charts(page)
    for chart in (
        "chart-pending",
        "chart-utilization",
        "chart-latency",
        "chart-heatmap-cpu",
        "chart-heatmap-memory",
    ):
        assert charts.get(chart, 0) > 0, charts
    assert page.locator("#cards .card").count() >= 7  # type: ignore[attr-defined]
    assert page.locator("#pods-body tr").count() == 21  # type: ignore[attr-defined]
    page.locator("#pods-body tr[data-pod='shop/payments-0']").click()  # type: ignore[attr-defined]
    explain = page.locator("#explain").inner_text()  # type: ignore[attr-defined]
    assert "shop/payments-0" in explain
    assert re.search(r"Preempted to make room\s+shop/report-\d, shop/report-\d", explain), explain
    page.fill("#pods-search", "thumbnail")  # type: ignore[attr-defined]
    assert page.locator("#pods-body tr").count() == 4  # type: ignore[attr-defined]
    assert problems == []


def test_a_snapshot_report_explains_an_unschedulable_pod_node_by_node(
    browser: object, tmp_path: Path
) -> None:
    example = REPO / "examples/node-label-filter"
    path = kubesched_html(
        tmp_path, "snapshot", str(example), "--config", str(example / "scheduler-config.yaml"), "--explain"
    )
    page, problems = open_report(browser, path, "simulate-report.png")
    charts = rendered_charts(page)
    assert charts.get("chart-results", 0) > 0 and charts.get("chart-heatmap", 0) > 0, charts
    page.select_option("#pods-result", "Unschedulable")  # type: ignore[attr-defined]
    page.locator("#pods-body tr").first.click()  # type: ignore[attr-defined]
    explain = page.locator("#explain").inner_text()  # type: ignore[attr-defined]
    assert "default/hello-on-b" in explain
    assert "NodeFilterLabel" in explain and "node(s) had label node=hello" in explain
    assert "0/3 nodes are available" in explain
    assert problems == []


def test_a_comparison_report_draws_each_configuration_side_by_side(browser: object, tmp_path: Path) -> None:
    gpu = REPO / "examples/gpu"
    path = kubesched_html(
        tmp_path,
        "compare",
        str(gpu / "cluster"),
        "--config",
        str(gpu / "baseline-config.yaml"),
        "--config",
        str(gpu / "scheduler-config.yaml"),
        command="compare",
    )
    page, problems = open_report(browser, path, "compare-report.png")
    charts = rendered_charts(page)
    for chart in (
        "chart-compare-results",
        "chart-compare-reasons",
        "chart-compare-utilization",
        "chart-compare-stranded",
        "chart-compare-zones",
        "chart-compare-gangs",
    ):
        assert charts.get(chart, 0) > 0, charts
    # one legend entry per configuration, and the table's columns in --config order
    legend = page.locator("#chart-compare-utilization .legendtext").all_text_contents()  # type: ignore[attr-defined]
    assert legend == ["baseline-config", "scheduler-config"]
    table = page.locator("#chart-compare-table").text_content()  # type: ignore[attr-defined]
    assert table.index("baseline-config") < table.index("scheduler-config")
    assert "largest input pod still placeable" in table
    assert page.locator("#cards .card").count() == 5  # type: ignore[attr-defined]
    assert page.locator("#pods").is_hidden()  # type: ignore[attr-defined]
    assert "chart-compare-preemptions" not in charts  # nothing evicted: no empty frame
    for chart in charts:  # plotly's toolbar, shown on hover, covers no title
        page.locator(f"#{chart}").hover()  # type: ignore[attr-defined]
        title = page.locator(f"#{chart} .gtitle").bounding_box()  # type: ignore[attr-defined]
        toolbar = page.locator(f"#{chart} .modebar").bounding_box()  # type: ignore[attr-defined]
        assert title["x"] + title["width"] <= toolbar["x"], (chart, title, toolbar)
    # The zone skew (the x axis' title) and the legend do not overlap.
    skew = page.locator("#chart-compare-zones .g-xtitle").bounding_box()  # type: ignore[attr-defined]
    legend = page.locator("#chart-compare-zones .legend").bounding_box()  # type: ignore[attr-defined]
    assert skew["y"] + skew["height"] <= legend["y"], (skew, legend)
    assert problems == []


def test_a_snapshot_report_lists_its_workloads_and_their_pods(browser: object, tmp_path: Path) -> None:
    demo = REPO / "examples/demo"
    path = kubesched_html(
        tmp_path, "workloads", str(demo / "cluster"), str(REPO / "examples/what-if/rollout.yaml"), "--explain"
    )
    page, problems = open_report(browser, path, "simulate-workloads.png")
    section = page.locator("#workloads")  # type: ignore[attr-defined]
    assert section.is_visible()
    rows = page.locator("#workloads-body tr")  # type: ignore[attr-defined]
    labels = [rows.nth(i).get_attribute("data-workload") for i in range(rows.count())]
    assert "Deployment shop/checkout" in labels and "DaemonSet kube-system/node-agent" in labels
    checkout = page.locator("#workloads-body tr[data-workload='Deployment shop/checkout']")  # type: ignore[attr-defined]
    assert checkout.locator("td").nth(1).inner_text() == "12/12"
    checkout.click()
    pods = page.locator("#pods-body tr")  # type: ignore[attr-defined]
    names = [pods.nth(i).get_attribute("data-pod") for i in range(pods.count())]
    assert len(names) == 12 and all(n.startswith("shop/checkout-") for n in names), names
    pods.first.click()
    assert "Deployment shop/checkout" in page.locator("#explain").inner_text()  # type: ignore[attr-defined]
    # The table fits the 1400-pixel viewport: no column is cut off.
    width = page.evaluate("() => document.getElementById('workloads-table').scrollWidth")  # type: ignore[attr-defined]
    assert width <= 1400 - 2 * 28, width
    assert problems == []


def test_a_snapshot_report_lists_its_pod_groups_and_their_pods(browser: object, tmp_path: Path) -> None:
    """examples/what-if/gang.yaml (gang `five` cannot form) and gang-train.yaml (`train` neither)."""
    what_if = REPO / "examples/what-if"
    path = kubesched_html(
        tmp_path,
        "pod-groups",
        str(what_if / "gang.yaml"),
        str(what_if / "gang-train.yaml"),
        "--feature-gates=GenericWorkload=true",
    )
    page, problems = open_report(browser, path, "simulate-pod-groups.png")
    assert page.locator("#pod-groups").is_visible()  # type: ignore[attr-defined]
    rows = page.locator("#pod-groups-body tr")  # type: ignore[attr-defined]
    labels = [rows.nth(i).get_attribute("data-pod-group") for i in range(rows.count())]
    assert labels == ["default/five", "default/train"]
    five = page.locator("#pod-groups-body tr[data-pod-group='default/five']")  # type: ignore[attr-defined]
    cells = [five.locator("td").nth(i).inner_text() for i in range(4)]
    assert cells == ["default/five", "Unschedulable", "0/5", "5"]
    assert (
        "minCount (5) cannot be satisfied: 4 scheduled, 0 remaining"
        in five.locator("td.message").inner_text()
    )
    five.click()
    pods = page.locator("#pods-body tr")  # type: ignore[attr-defined]
    names = [pods.nth(i).get_attribute("data-pod") for i in range(pods.count())]
    assert names == [f"default/five-{i}" for i in range(5)], names
    # The table fits the 1400-pixel viewport: no column is cut off.
    width = page.evaluate("() => document.getElementById('pod-groups-table').scrollWidth")  # type: ignore[attr-defined]
    assert width <= 1400 - 2 * 28, width
    assert problems == []


#: Where each part of the demo report lies at 1400 px: the pods table and its header cells, the
#: panel beside it, the results chart's row labels, the heat map's title and column labels.
_LAYOUT = """() => {
  const box = (e) => { const r = e.getBoundingClientRect(); return [r.left, r.top, r.right, r.bottom]; };
  const wrap = document.querySelector('#pods .table-wrap');
  return {
    wrap: [wrap.scrollWidth, wrap.clientWidth],
    heads: Object.fromEntries(
      [...document.querySelectorAll('#pods-head th')].map((th) => [th.textContent, box(th)])),
    panel: box(document.getElementById('explain')),
    results: box(document.getElementById('chart-results')),
    resultLabels: [...document.querySelectorAll('#chart-results .ytick text')].map(box),
    heatTitle: box(document.querySelector('#chart-heatmap .gtitle')),
    heatColumns: [...document.querySelectorAll('#chart-heatmap .xtick text')].map(box),
    heatRows: document.querySelectorAll('#chart-heatmap .ytick text').length,
  };
}"""


def test_the_demo_report_fits_1400_pixels(browser: object, tmp_path: Path) -> None:
    """Issue 23's list, on the bundled demo: the pods table's NODE and REASON columns were cut off
    behind the panel, the results chart's labels were cut ('hedulable'), and the heat map's title
    sat on its column labels."""
    path = kubesched_html(tmp_path, "demo", "--explain")
    page, problems = open_report(browser, path, "demo-report.png")
    layout = page.evaluate(_LAYOUT)  # type: ignore[attr-defined]
    scroll, visible = layout["wrap"]
    assert scroll <= visible, layout["wrap"]  # no column hidden behind a horizontal scroll
    heads = layout["heads"]
    assert list(heads) == ["POD", "PROFILE", "RESULT", "NODE", "ATTEMPTS", "REASON"]
    panel_left = layout["panel"][0]
    for name in ("NODE", "REASON"):
        left, _, right, _ = heads[name]
        assert right <= panel_left and right - left >= 60, (name, heads[name], panel_left)
    chart_left = layout["results"][0]
    assert layout["resultLabels"] and all(label[0] >= chart_left for label in layout["resultLabels"])
    title_bottom = layout["heatTitle"][3]
    assert all(column[1] >= title_bottom for column in layout["heatColumns"]), layout
    assert layout["heatRows"] > 0
    # An unschedulable pod's reason is in its row (two lines of it) and whole in the panel.
    page.select_option("#pods-result", "Unschedulable")  # type: ignore[attr-defined]
    row = page.locator("#pods-body tr").first  # type: ignore[attr-defined]
    reason = row.locator("td.message")
    assert reason.get_attribute("title").startswith("0/60 nodes are available")
    assert reason.bounding_box()["height"] < 60
    row.click()
    assert reason.get_attribute("title") in page.locator("#explain").inner_text()  # type: ignore[attr-defined]
    page.screenshot(path=str(ARTIFACTS / "demo-report-unschedulable.png"), full_page=True)  # type: ignore[attr-defined]
    assert problems == []


#: The pods of the embedded report that carry nearest nodes, and those that name another pod for them.
_NEAREST_PODS = """() => {
  const pods = JSON.parse(document.getElementById('report-data').textContent).pods;
  const key = (p) => `${p.ns}/${p.name}`;
  return {
    own: pods.filter((p) => p.nearest).map(key),
    of: pods.filter((p) => p.nearestOf).map((p) => [key(p), p.nearestOf]),
  };
}"""


def test_the_pod_panel_says_what_is_missing_on_the_nearest_nodes(browser: object, tmp_path: Path) -> None:
    """Issue 23 item 7: the panel of an unschedulable pod lists explain's nearest nodes and what each
    lacks; a replica whose group's first pod holds them shows them too, saying whose they are."""
    path = kubesched_html(tmp_path, "demo-nearest", "--explain")
    page, problems = open_report(browser, path, "demo-report-nearest.png")
    found = page.evaluate(_NEAREST_PODS)  # type: ignore[attr-defined]
    assert found["own"] and found["of"], found
    replica, first = found["of"][0]
    page.fill("#pods-search", replica)  # type: ignore[attr-defined]
    page.locator(f"#pods-body tr[data-pod='{replica}']").click()  # type: ignore[attr-defined]
    panel = page.locator("#explain")  # type: ignore[attr-defined]
    text = panel.inner_text()
    assert "Nearest nodes, and what is missing on each" in text, text
    assert f"As worked out for {first}" in text, text
    assert re.search(r"needs \S+ (more )?\S+", text), text
    items = panel.locator("ul.nearest > li")
    assert 1 <= items.count() <= 5
    # At 1400 px the list stays inside the panel: no horizontal scroll, every node name within it.
    box = panel.bounding_box()
    scroll, client = panel.evaluate("(e) => [e.scrollWidth, e.clientWidth]")
    assert scroll <= client, (scroll, client)
    for i in range(items.count()):
        item = items.nth(i).bounding_box()
        assert box["x"] <= item["x"] and item["x"] + item["width"] <= box["x"] + box["width"], (item, box)
    panel.screenshot(path=str(ARTIFACTS / "demo-report-nearest-panel.png"))
    # The first pod of the group carries the same nodes under its own name.
    page.fill("#pods-search", first)  # type: ignore[attr-defined]
    page.locator(f"#pods-body tr[data-pod='{first}']").click()  # type: ignore[attr-defined]
    own = panel.inner_text()
    assert "Nearest nodes, and what is missing on each" in own and "As worked out for" not in own
    assert problems == []

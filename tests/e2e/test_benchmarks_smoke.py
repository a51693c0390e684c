"""Every script of benchmarks/ runs in its `--smoke` mode and prints the JSON it promises.

Not a timing test: the sizes are tiny and the figures meaningless; what is checked is that each
benchmark still exercises its code path end to end (a benchmark nobody runs rots) and that its
output keeps the keys `benchmarks/ab.py` and the docs read, with sane values. The benchmarks that
start a real etcd + kube-apiserver run when the kube binaries are built (`make test` builds them).
`ab.py --smoke` itself runs against HEAD.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from kubesched.harness.controlplane import binaries_built

REPO = Path(__file__).resolve().parents[2]
BENCHMARKS = REPO / "benchmarks"
#: Seconds one smoke run may take on a loaded two-core machine (each takes a few when idle).
TIMEOUT = 240


def run(script: str, *args: str) -> list[Any]:
    """Run a benchmark with this checkout's sources; every JSON value of its stdout, in order."""
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    proc = subprocess.run(
        [sys.executable, str(BENCHMARKS / script), *args],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        check=False,
    )
    assert proc.returncode == 0, f"{script} {' '.join(args)} exited {proc.returncode}:\n{proc.stderr[-3000:]}"
    decoder, text, i, values = json.JSONDecoder(), proc.stdout, 0, []
    while i < len(text):
        if text[i].isspace():
            i += 1
            continue
        value, i = decoder.raw_decode(text, i)
        values.append(value)
    assert values, f"{script} printed no JSON"
    return values


def has(obj: dict[str, Any], *keys: str) -> None:
    missing = [k for k in keys if k not in obj]
    assert not missing, f"missing {missing} in {obj}"


def simulate_throughput(out: list[Any]) -> None:
    assert [o["workload"] for o in out] == [
        "SchedulingBasic",
        "SchedulingPodAntiAffinity",
        "TopologySpreading",
        "Gang",
    ]
    for o in out:
        has(o, "case", "nodes", "pods", "seconds", "cpuSeconds", "podsPerSecond", "maxRssMiB", "scorePlugins")
        assert o["scheduled"] == o["pods"] and o["podsPerSecond"] > 0 and o["maxRssMiB"] > 0


def replay_throughput(out: list[Any]) -> None:
    (o,) = out
    has(o, "case", "seconds", "cpuSeconds", "eventsPerSecond", "pendingPeak", "evictions", "maxRssMiB")
    assert o["events"] > 0 and 0 < o["scheduled"] <= o["pods"] and o["seconds"] > 0


def batching(out: list[Any]) -> None:
    (o,) = out
    for run_ in (o["unbatched"], o["batched"]):
        has(run_, "cpuSeconds", "wallSeconds", "podsPerCpuSecond")
        assert run_["scheduled"] == o["pods"]
    assert o["samePodsPerNode"] is True


def dra_throughput(out: list[Any]) -> None:
    assert [o["case"] for o in out] == ["NoClaims", "OneGPU", "FirstAvailable"]
    for o in out:
        has(o, "devices", "seconds", "podsPerSecond", "cpuSeconds", "rssMiB")
        assert o["scheduled"] == o["pods"]


def cel_candidates(out: list[Any]) -> None:
    by_library = {o["library"]: o for o in out}
    assert set(by_library) == {"cel-expr-python", "cel-python", "common-expression-language"}
    used = by_library["cel-expr-python"]  # kubesched's own dependency: always installed
    has(used, "correct", "of", "failed", "evalMicroseconds", "compileMicroseconds")
    assert used["correct"] + len(used["failed"]) == used["of"] and used["evalMicroseconds"] > 0


def explain_report_memory(out: list[Any]) -> None:
    assert [o["run"] for o in out] == ["", "--explain", "--explain --per-node"]
    for o in out:
        has(o, "seconds", "maxRssMiB", "reportMiB")
        assert o["exit"] == 0 and o["maxRssMiB"] > 0


def gpu_packing(out: list[Any]) -> None:
    by_profile = {o["profile"]: o for o in out}
    assert set(by_profile) == {"default", "gpu-scheduler"}
    assert by_profile["gpu-scheduler"]["gangsPartial"] == 0
    assert by_profile["gpu-scheduler"]["gpuPodsScheduled"] >= by_profile["default"]["gpuPodsScheduled"]


def fgd_openb(out: list[Any]) -> None:
    (o,) = out
    has(o, "BestFit", "FGD", "timing")
    assert o["tieBreak"] == "nodeName"  # the authors' simulator's rule, the default
    for policy in ("BestFit", "FGD"):
        curve = o[policy]
        assert list(curve) == ["90", "100", "110", "120", "130"]
        assert all(0 <= v <= 100 for v in curve.values())
        assert curve["130"] <= curve["90"]  # nothing leaves: allocated GPUs only grow
    has(o["timing"], "runs", "wallSeconds", "cpuSecondsPerRun")


def extender_abuse(out: list[Any]) -> None:
    (o,) = out
    has(o, "rss_idle_mib", "rss_peak_mib", "vm_hwm_mib", "seconds")
    assert sum(o["responses"].values()) == o["connections"]
    assert o["serves_after"] is True and o["server_alive"] is True


def extender_latency(out: list[Any]) -> None:
    (o,) = out
    assert [(r["verb"], r["clients"]) for r in o["results"]] == [
        ("filter", 1),
        ("filter", 2),
        ("prioritize", 1),
        ("prioritize", 2),
    ]
    for r in o["results"]:
        has(r, "nodes", "body_bytes", "mean_ms", "requests_per_second", "server_cpu_ms_per_request")
        assert r["requests"] > 0 and 0 < r["p50_ms"] <= r["p99_ms"]


def sweep_speedup(out: list[Any]) -> None:
    (o,) = out
    has(o, "hereCpuSeconds", "processSeconds", "processCpuSeconds", "workers", "processSpeedup")
    assert o["cells"] > 0 and o["hereSeconds"] > 0


def input_load(out: list[Any]) -> None:
    (o,) = out
    has(o, "nodes", "pods", "yamlMB", "jsonMB", "yaml", "json", "yamlOverJson", "fieldCheckSeconds")
    for side in ("yaml", "json"):
        assert o[side]["seconds"] > 0 and o[side]["peakMiB"] > 0


def explain_latency(out: list[Any]) -> None:
    *pods, phases = out
    verdicts = {o["pod"]: o["verdict"] for o in pods}
    assert set(verdicts) == {"fits", "too-big", "urgent"}
    assert verdicts["fits"] != verdicts["too-big"]
    for o in pods:
        has(o, "wallSeconds", "cpuSeconds", "cycleSeconds", "runningPods")
        assert 0 < o["wallSeconds"]["min"] <= o["wallSeconds"]["max"]
    has(phases["phases"], "importsCpu", "snapshotCpu", "snapshotWall", "explainCpu")


def live_throughput(out: list[Any]) -> None:
    phases = {o["phase"]: o for o in out if "phase" in o}
    assert set(phases) == {"raw", "upstream", "kubesched"}
    for name in ("upstream", "kubesched"):
        o = phases[name]
        has(o, "seconds", "start_to_first_bind_seconds", "peak_rss_mib", "scheduler_cpu_seconds")
        assert o["switches_per_pod"] > 0
        assert o["complete"] is True and o["bound"] == o["pods"] and o["pods_per_second"] > 0
        # What the phase cost the API server: its CPU and etcd's, and one bind request per pod.
        assert o["apiserver_cpu_seconds"] > 0 and o["etcd_cpu_seconds"] >= 0
        assert o["apiserver_etcd_cpu_ms_per_pod_binding"] >= 0 and o["apiserver_etcd_cores_binding"] >= 0
        assert (
            o["apiserver_etcd_idle_cores"] >= 0 and o["apiserver_etcd_cpu_ms_per_pod_binding_over_idle"] >= 0
        )
        assert o["apiserver_requests_per_pod"]["POST pods/binding"] == 1.0, o["apiserver_requests_per_pod"]
    assert phases["raw"]["pods_per_second"] > 0
    assert phases["kubesched"]["events_unsent_at_stop"] >= 0
    assert "events_unsent_at_stop" not in phases["upstream"]
    assert out[-1]["summary"] == "live_throughput"


def startup_latency(out: list[Any]) -> None:
    *starts, summary = out
    assert [s["phase"] for s in starts] == ["upstream", "kubesched"]
    for s in starts:
        assert s["complete"] is True
        assert s["start_to_first_bind_seconds"] > 0 and s["cpu_seconds_at_first_bind"] > 0
    marks = starts[1]["marks"]
    assert 0 < marks["configured"] <= marks["informers_started"] <= marks["synced"]
    assert marks["synced"] <= starts[1]["start_to_first_bind_seconds"] + 0.01  # log stamps: ms
    assert summary["summary"] == "startup_latency"
    has(summary["by_nodes"]["20"]["kubesched"], "start_to_first_bind_seconds", "cpu_seconds_at_first_bind")


def fault_comparison(out: list[Any]) -> None:
    *runs, summary = out
    assert {r["flavour"] for r in runs} == {"kubesched", "kube-scheduler"}
    kubesched = next(r for r in runs if r["flavour"] == "kubesched")
    for row in (
        "double_binds",
        "lost_pods",
        "binds_after_loss",
        "binds_to_deleted_nodes",
        "overfilled_nodes",
    ):
        assert kubesched[row] == 0, f"{row}: {kubesched}"
    assert summary["summary"] == "fault_comparison"


def differential(out: list[Any]) -> None:
    (o,) = out
    assert o["count"] == 1 and o["scenarios"] == 1 and o["liveScenarios"] == 1 and o["mismatches"] == 0
    assert o["pods"] > 0 and o["comparisons"]


CHECKS: dict[str, Callable[[list[Any]], None]] = {
    f.__name__: f
    for f in (
        simulate_throughput,
        replay_throughput,
        batching,
        dra_throughput,
        cel_candidates,
        explain_report_memory,
        gpu_packing,
        fgd_openb,
        extender_abuse,
        extender_latency,
        sweep_speedup,
        input_load,
    )
}
LIVE_CHECKS: dict[str, Callable[[list[Any]], None]] = {
    f.__name__: f for f in (explain_latency, live_throughput, startup_latency, fault_comparison, differential)
}
needs_kube = pytest.mark.skipif(not binaries_built(), reason="kube binaries not built (make kube-binaries)")


def test_every_benchmark_has_a_smoke_check() -> None:
    scripts = {p.stem for p in BENCHMARKS.glob("*.py")} - {"ab"}
    assert scripts == set(CHECKS) | set(LIVE_CHECKS)


@pytest.mark.parametrize("name", sorted(CHECKS))
def test_smoke(name: str) -> None:
    CHECKS[name](run(f"{name}.py", "--smoke"))


@needs_kube
@pytest.mark.xdist_group("benchmark-control-planes")  # one worker: two control planes at once thrash
@pytest.mark.parametrize("name", sorted(LIVE_CHECKS))
def test_live_smoke(name: str) -> None:
    LIVE_CHECKS[name](run(f"{name}.py", "--smoke"))


@needs_kube
@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="--pin needs two CPUs")
@pytest.mark.xdist_group("benchmark-control-planes")
def test_live_throughput_pinned_preemption_smoke() -> None:
    """--pin runs each scheduler shared then pinned; in the preemption shape every pod evicts one."""
    out = run(
        "live_throughput.py", "--smoke", "--pin", "--shape", "preemption", "--phases", "upstream", "kubesched"
    )
    runs = [(o["phase"], o["pinned"]) for o in out if "phase" in o]
    assert runs == [("upstream", False), ("upstream", True), ("kubesched", False), ("kubesched", True)]
    for o in out[:4]:
        assert o["shape"] == "preemption" and o["complete"] is True and o["victims_evicted"] == o["pods"], o
        assert o["cpu_ms_per_pod"] > 0
    summary = out[-1]
    assert summary["pinned"]["scheduler"] and summary["pinned"]["servers"]
    assert not set(summary["pinned"]["scheduler"]) & set(summary["pinned"]["servers"])
    assert out[-2]["pinned_kubesched_over_upstream"] is not None


def test_ab_smoke_against_head() -> None:
    (report,) = run("ab.py", "HEAD", "--smoke", "--only", "simulate_throughput", "batching", "--json")
    for name in ("simulate_throughput", "batching"):
        for side in ("this", "base"):
            (outcome,) = report["benchmarks"][name][side]
            assert outcome["problem"] is None and outcome["figures"], (name, side, outcome)
    rows = report["benchmarks"]["simulate_throughput"]["this"][0]["figures"]
    figures = {"seconds", "cpuSeconds", "podsPerSecond", "maxRssMiB"}
    assert set(rows["TopologySpreading/30Nodes_20Pods, 100% scored"]) == figures
    assert report["higherIsBetter"]["podsPerSecond"] is True and report["higherIsBetter"]["p99_ms"] is False


def load_ab() -> Any:
    spec = importlib.util.spec_from_file_location("ab", BENCHMARKS / "ab.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["ab"] = module  # dataclasses look their module up by name
    spec.loader.exec_module(module)
    return module


def test_ab_reads_json_lines_indented_documents_and_skips_the_rest() -> None:
    ab = load_ab()
    stdout = '{"case": "a", "seconds": 2, "podsPerSecond": 5}\nnot json\n{\n  "results": [\n'
    stdout += '    {"verb": "filter", "nodes": 5, "clients": 4, "p99_ms": 9.5, "flag": true}\n  ]\n}\n'
    simulate = next(b for b in ab.BENCHMARKS if b.name == "simulate_throughput")
    extender = next(b for b in ab.BENCHMARKS if b.name == "extender_latency")
    assert ab.figures_of(simulate, stdout) == {"a, adaptive": {"seconds": 2.0, "podsPerSecond": 5.0}}
    assert ab.figures_of(extender, stdout) == {"filter, 5 nodes, 4 client(s)": {"p99_ms": 9.5}}
    assert ab.verdict("podsPerSecond", 1.2) == "better" and ab.verdict("p99_ms", 1.2) == "worse"
    assert ab.verdict("seconds", 0.98) == "even"


def test_ab_reports_a_benchmark_the_base_lacks(tmp_path: Path) -> None:
    ab = load_ab()
    bench = next(b for b in ab.BENCHMARKS if b.name == "batching")
    outcome = ab.run_one(bench, ab.Tree("old", tmp_path), smoke=True)
    assert outcome.figures == {} and outcome.problem == "no benchmarks/batching.py in old"
    comparison = ab.Comparison(
        bench, {"this": [ab.Outcome({"burst": {"batched.cpuSeconds": 1.0}})], "base": [outcome]}
    )
    assert "- batching: no benchmarks/batching.py in old" in ab.table([comparison], "new", "old")


def test_ab_tells_rows_from_figures_only_one_tree_measured() -> None:
    """A figure a benchmark gained is not a row missing from the base (ab.py once called it one)."""
    ab = load_ab()
    this = {("filter", "p99_ms"), ("filter", "server_cpu_ms_per_request"), ("new case", "p99_ms")}
    base = {("filter", "p99_ms"), ("old case", "p99_ms")}
    assert ab.one_sided(this, base) == [
        "rows in this tree only: new case",
        "rows in the base only: old case",
        f"figures in this tree only: {ab.FIGURES['server_cpu_ms_per_request'][0]}",
    ]
    assert ab.one_sided(base, base) == []


@needs_kube
@pytest.mark.xdist_group("benchmark-control-planes")
def test_live_throughput_gang_smoke() -> None:
    """The gang shape: PodGroups on an API server serving scheduling.k8s.io/v1beta1, both schedulers
    with GenericWorkload on, every gang bound whole."""
    out = run("live_throughput.py", "--smoke", "--shape", "gang", "--phases", "upstream", "kubesched")
    phases = [o for o in out if "phase" in o]
    assert [o["phase"] for o in phases] == ["upstream", "kubesched"]
    for o in phases:
        assert o["shape"] == "gang" and o["complete"] is True and o["bound"] == o["pods"], o
    assert out[-1]["pod_shape"]["shape"] == "gang"


@needs_kube
@pytest.mark.xdist_group("benchmark-control-planes")
def test_live_throughput_threads_smoke() -> None:
    """--threads: kubesched's OS threads carry their Python names, and its CPU and switches per pod
    come by thread (the scheduling loop, the bind batches, the pod informer among them)."""
    out = run("live_throughput.py", "--smoke", "--threads", "--phases", "kubesched")
    (o,) = [o for o in out if "phase" in o]
    assert o["complete"] is True, o
    cpu, switches = o["thread_cpu_ms_per_pod"], o["thread_switches_per_pod"]
    assert {"scheduling-loop", "informer-pods", "informer-nodes"} <= set(cpu), cpu
    assert set(switches) == set(cpu) and cpu["scheduling-loop"] > 0 and switches["informer-pods"] > 0
    # The threads' CPU is the process's, split: their sum is at most the whole (threads that ended
    # before the reading are not in it).
    assert sum(cpu.values()) <= o["cpu_ms_per_pod"] * 1.01 + 0.01

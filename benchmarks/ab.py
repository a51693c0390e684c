"""A/B: the benchmark set on this working tree and on a base commit, interleaved in one run.

The base is extracted with `git archive BASE | tar -x` into a temporary directory (no worktree, no
checkout). Each benchmark then runs as a fresh process per tree and per round, this tree first and
the base next (A B A B ...), each with `PYTHONPATH=<tree>/src` and the tree's own
`benchmarks/<name>.py`, so both sides meet the same load on the machine. Every benchmark prints
JSON; the figures of each row (a case, a verb, a phase) are kept, the median of the rounds taken
per tree, and the table gives `this / base` per figure with whether that is better or worse
(pods/s and requests/s: higher is better; seconds, CPU seconds, latencies and RSS: lower).

A benchmark the base lacks, or a base whose benchmark does not know `--smoke`, is reported as such
below the table rather than failing the run. Live benchmarks (real etcd + kube-apiserver) are in
the default set only when the kube binaries are built (`make kube-binaries`).

    .venv/bin/python benchmarks/ab.py BASE [--only NAME ...] [--rounds N] [--smoke] [--json]

A full run of the default set takes about 10-15 minutes on two cores; `--smoke` runs each
benchmark's tiny mode instead (seconds each: checks the harness, measures nothing).
"""

from __future__ import annotations

import argparse
import compileall
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent

#: Figures compared, by their key in a benchmark's JSON row: (label in the table, higher is better).
FIGURES: dict[str, tuple[str, bool]] = {
    "podsPerSecond": ("pods/s", True),
    "pods_per_second": ("pods/s", True),
    "requests_per_second": ("requests/s", True),
    "cpu_ms_per_pod": ("CPU ms per pod", False),
    "server_cpu_ms_per_request": ("server CPU ms per request", False),
    "p50_ms": ("p50 ms", False),
    "p99_ms": ("p99 ms", False),
    "seconds": ("seconds", False),
    "cpuSeconds": ("CPU s", False),
    "cpuSeconds.median": ("CPU s", False),
    "wallSeconds.median": ("seconds", False),
    "cycleSeconds": ("cycle s", False),
    "start_to_first_bind_seconds": ("first bind s", False),
    "unbatched.cpuSeconds": ("CPU s, unbatched", False),
    "batched.cpuSeconds": ("CPU s, batched", False),
    "phases.importsCpu": ("imports CPU s", False),
    "phases.snapshotCpu": ("snapshot CPU s", False),
    "phases.explainCpu": ("explain CPU s", False),
    "maxRssMiB": ("RSS MiB", False),
    "rssMiB": ("RSS MiB", False),
    "peak_rss_mib": ("RSS MiB", False),
}
#: A change within this fraction of 1.0 is called even: single runs on shared cores move that much.
NOISE = 0.05


def _case(row: dict[str, Any]) -> str | None:
    return str(row["case"]) if "case" in row else None


def _simulate_row(row: dict[str, Any]) -> str | None:
    """Its case name, with the share of nodes scored: two cases differ only in that."""
    if "case" not in row:
        return None
    share = row.get("percentageOfNodesToScore")
    return f"{row['case']}, {f'{share}% scored' if share else 'adaptive'}"


def _extender_row(row: dict[str, Any]) -> str | None:
    if "verb" not in row:
        return None
    return f"{row['verb']}, {row['nodes']} nodes, {row['clients']} client(s)"


def _explain_row(row: dict[str, Any]) -> str | None:
    if "pod" in row:
        return f"pod {row['pod']}"
    return "phases" if "phases" in row else None


def _live_row(row: dict[str, Any]) -> str | None:
    if "phase" not in row:
        return None
    pinned = " pinned" if row.get("pinned") else ""
    return f"{row['phase']}{pinned}, {row['nodes']} nodes"


def _live_derived(row: dict[str, Any]) -> dict[str, Any]:
    """CPU per bound pod: the live figure that moves least with whatever else runs."""
    cpu, bound = row.get("scheduler_cpu_seconds"), row.get("bound")
    if isinstance(cpu, int | float) and isinstance(bound, int) and bound > 0:
        return {**row, "cpu_ms_per_pod": round(cpu / bound * 1000, 3)}
    return row


@dataclass(frozen=True)
class Benchmark:
    """How ab.py runs one script of benchmarks/ and reads its output."""

    name: str
    #: The arguments of a full run: only flags every base of interest knows.
    args: tuple[str, ...]
    #: Names a JSON row; None when the row holds no figures (a summary, a ratio).
    row: Callable[[dict[str, Any]], str | None]
    rounds: int = 1
    needs_kube: bool = False
    #: In the default set (the others run with --only).
    default: bool = True
    derive: Callable[[dict[str, Any]], dict[str, Any]] = field(default=lambda row: row)
    #: The script under benchmarks/ when it is not `name` (one script, several selections).
    script: str | None = None


BENCHMARKS: tuple[Benchmark, ...] = (
    # scheduler_perf's shapes: SchedulingBasic at 500 and 5000 nodes (adaptive and 100 % scored),
    # anti-affinity, topology spreading, and 30,000 bound pods.
    Benchmark("simulate_throughput", (), _simulate_row),
    Benchmark("replay_throughput", ("--nodes", "2000", "--events", "40000"), _case),
    # p99 with 4 clients on 2 cores swings by 2x from run to run: medians of 3.
    Benchmark(
        "extender_latency", ("--nodes", "5000", "--requests", "200", "--clients", "1", "4"), _extender_row, 3
    ),
    Benchmark(
        "explain_latency",
        ("--nodes", "1000", "--running", "1000", "--repeat", "3"),
        _explain_row,
        needs_kube=True,
    ),
    Benchmark(
        "live_throughput",
        ("--nodes", "1000", "--pods", "1000", "--phases", "kubesched", "kubesched"),
        _live_row,
        needs_kube=True,
        derive=_live_derived,
    ),
    Benchmark("dra_throughput", ("--quick",), _case, default=False),
    Benchmark("batching", (), lambda row: "burst" if "batched" in row else None, default=False),
    # The pod-group cycle alone: gangs of 256 and 1024 pods on 5000 nodes (issue 21 item 9).
    Benchmark(
        "simulate_gang",
        ("--shape", "gang"),
        _simulate_row,
        rounds=3,
        default=False,
        script="simulate_throughput",
    ),
)
#: Seconds one benchmark process may take before it is stopped and reported as timed out.
RUN_TIMEOUT = 1200.0
SMOKE_TIMEOUT = 300.0


def note(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


@dataclass
class Tree:
    """A source tree under test: its root, and what the table calls it."""

    label: str
    root: Path


@dataclass
class Outcome:
    """One run of one benchmark in one tree: its rows' figures, or why there are none."""

    figures: dict[str, dict[str, float]] = field(default_factory=dict)
    problem: str | None = None


def json_values(text: str) -> Iterator[Any]:
    """Every JSON value of `text` in order: JSON lines and one indented document alike."""
    decoder = json.JSONDecoder()
    i = 0
    while True:
        while i < len(text) and text[i].isspace():
            i += 1
        if i >= len(text):
            return
        try:
            value, i = decoder.raw_decode(text, i)
        except json.JSONDecodeError:
            i = text.find("\n", i)  # a line that is not JSON (a table, a message): skip it
            if i < 0:
                return
            continue
        yield value


def rows(value: Any) -> Iterator[dict[str, Any]]:
    """The objects of a benchmark's output that may be rows; `results` lists are opened."""
    if isinstance(value, dict):
        yield value
        for item in value.get("results") or ():
            yield from rows(item)
    elif isinstance(value, list):
        for item in value:
            yield from rows(item)


def leaves(row: dict[str, Any], prefix: str = "") -> Iterator[tuple[str, float]]:
    for key, value in row.items():
        path = f"{prefix}{key}"
        if isinstance(value, dict):
            yield from leaves(value, path + ".")
        elif isinstance(value, int | float) and not isinstance(value, bool):
            yield path, float(value)


def figures_of(bench: Benchmark, stdout: str) -> dict[str, dict[str, float]]:
    """{row: {figure: value}} for the figures ab.py compares; a row printed more than once in a run
    (live_throughput's repeated phases) gets the median of its values."""
    seen: dict[str, dict[str, list[float]]] = {}
    for value in json_values(stdout):
        for row in rows(value):
            name = bench.row(row)
            if name is None:
                continue
            for key, figure in leaves(bench.derive(row)):
                if key in FIGURES:
                    seen.setdefault(name, {}).setdefault(key, []).append(figure)
    return {name: {k: statistics.median(v) for k, v in figs.items()} for name, figs in seen.items()}


def run_one(bench: Benchmark, tree: Tree, smoke: bool) -> Outcome:
    name = bench.script or bench.name
    script = tree.root / "benchmarks" / f"{name}.py"
    if not script.is_file():
        return Outcome(problem=f"no benchmarks/{name}.py in {tree.label}")
    argv = [sys.executable, str(script), *(("--smoke",) if smoke else bench.args)]
    env = {**os.environ, "PYTHONPATH": str(tree.root / "src")}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    proc = subprocess.Popen(
        argv,
        cwd=tree.root,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,  # its own process group: a timeout stops whatever it started too
    )
    try:
        out, err = proc.communicate(timeout=SMOKE_TIMEOUT if smoke else RUN_TIMEOUT)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        return Outcome(problem=f"timed out in {tree.label}")
    tail = err.decode(errors="replace").strip().splitlines()[-3:]
    if proc.returncode == 2 and smoke and any("unrecognized arguments: --smoke" in line for line in tail):
        return Outcome(problem=f"{tree.label}'s benchmarks/{bench.name}.py has no --smoke")
    if proc.returncode != 0:
        return Outcome(problem=f"exit {proc.returncode} in {tree.label}: {' | '.join(tail)}")
    figures = figures_of(bench, out.decode(errors="replace"))
    if not figures:
        return Outcome(problem=f"no figures in the output of {tree.label}")
    return Outcome(figures)


def check_imports(tree: Tree) -> None:
    """Fail at once if `PYTHONPATH=<tree>/src` would not import that tree's kubesched (an install
    that shadows it would make both sides measure the same code)."""
    code = "import kubesched, sys; sys.stdout.write(kubesched.__file__)"
    env = {**os.environ, "PYTHONPATH": str(tree.root / "src")}
    proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=False)
    found = proc.stdout
    if proc.returncode != 0:
        raise SystemExit(f"{tree.label} does not import: {proc.stderr.strip()[-500:]}")
    if not Path(found).resolve().is_relative_to((tree.root / "src").resolve()):
        raise SystemExit(
            f"with PYTHONPATH={tree.root / 'src'} kubesched comes from {found}, not {tree.label}"
        )


def extract(base: str, into: Path) -> str:
    """`git archive` of `base` into `into`; returns the commit's short hash."""
    commit = subprocess.run(
        ["git", "-C", str(REPO), "rev-parse", "--short", f"{base}^{{commit}}"],
        capture_output=True,
        text=True,
        check=False,
    )
    if commit.returncode != 0:
        raise SystemExit(f"not a commit: {base}: {commit.stderr.strip()}")
    archive = subprocess.Popen(["git", "-C", str(REPO), "archive", base], stdout=subprocess.PIPE)
    subprocess.run(["tar", "-x", "-C", str(into)], stdin=archive.stdout, check=True)
    if archive.wait() != 0:
        raise SystemExit(f"git archive {base} failed")
    return commit.stdout.strip()


def this_label() -> str:
    described = subprocess.run(
        ["git", "-C", str(REPO), "describe", "--always", "--dirty"],
        capture_output=True,
        text=True,
        check=False,
    )
    return described.stdout.strip() or "this tree"


@dataclass
class Comparison:
    """Every round's figures of one benchmark, per tree."""

    bench: Benchmark
    runs: dict[str, list[Outcome]] = field(default_factory=lambda: {"this": [], "base": []})

    def medians(self, side: str) -> dict[tuple[str, str], float]:
        values: dict[tuple[str, str], list[float]] = {}
        for outcome in self.runs[side]:
            for row, figures in outcome.figures.items():
                for key, value in figures.items():
                    values.setdefault((row, key), []).append(value)
        return {k: statistics.median(v) for k, v in values.items()}

    def problems(self) -> list[str]:
        seen = [o.problem for side in ("this", "base") for o in self.runs[side] if o.problem]
        return list(dict.fromkeys(seen))


def ratio(this: float, base: float) -> float | None:
    return this / base if base else None


def verdict(key: str, r: float | None) -> str:
    if r is None:
        return ""
    if abs(r - 1.0) < NOISE:
        return "even"
    return "better" if (r > 1.0) == FIGURES[key][1] else "worse"


def one_sided(this: Iterable[tuple[str, str]], base: Iterable[tuple[str, str]]) -> list[str]:
    """What only one tree measured: whole rows (a case the other lacks), then, of the rows both have,
    figures (a figure a benchmark gained or lost), each with the tree that has it."""
    a, b = set(this), set(base)
    rows_a, rows_b = {row for row, _ in a}, {row for row, _ in b}
    lines = [
        f"rows in {side} only: {', '.join(sorted(rows))}"
        for side, rows in (("this tree", rows_a - rows_b), ("the base", rows_b - rows_a))
        if rows
    ]
    for side, keys in (("this tree", a - b), ("the base", b - a)):
        figures = sorted({FIGURES[key][0] for row, key in keys if row in rows_a & rows_b})
        if figures:
            lines.append(f"figures in {side} only: {', '.join(figures)}")
    return lines


def table(comparisons: Sequence[Comparison], this: str, base: str) -> str:
    lines = [
        f"| benchmark | row | figure | this ({this}) | base ({base}) | this/base | |",
        "|---|---|---|---:|---:|---:|---|",
    ]
    left_out: list[str] = []
    for c in comparisons:
        a, b = c.medians("this"), c.medians("base")
        for row, key in [k for k in a if k in b]:
            r = ratio(a[row, key], b[row, key])
            shown = f"{r:.2f}" if r is not None else "-"
            lines.append(
                f"| {c.bench.name} | {row} | {FIGURES[key][0]} | {a[row, key]:g} | {b[row, key]:g} "
                f"| {shown} | {verdict(key, r)} |"
            )
        left_out += [f"- {c.bench.name}: {p}" for p in c.problems()]
        if a and b:
            left_out += [f"- {c.bench.name}: {line}" for line in one_sided(a.keys(), b.keys())]
    rounds = {c.bench.name: len(c.runs["this"]) for c in comparisons}
    lines.append("")
    lines.append("Medians of " + ", ".join(f"{n} x{k}" for n, k in rounds.items()) + " rounds per tree.")
    if left_out:
        lines += ["", "Not compared:", *left_out]
    return "\n".join(lines)


def as_json(comparisons: Sequence[Comparison], this: str, base: str) -> dict[str, Any]:
    return {
        "this": this,
        "base": base,
        "benchmarks": {
            c.bench.name: {
                side: [{"figures": o.figures, "problem": o.problem} for o in c.runs[side]]
                for side in ("this", "base")
            }
            for c in comparisons
        },
        "higherIsBetter": {k: v[1] for k, v in FIGURES.items()},
    }


def selected(only: Sequence[str] | None, kube: bool) -> list[Benchmark]:
    if only:
        by_name = {b.name: b for b in BENCHMARKS}
        return [by_name[n] for n in only]
    chosen = [b for b in BENCHMARKS if b.default and (kube or not b.needs_kube)]
    if not kube:
        note("kube binaries not built (make kube-binaries): live benchmarks left out")
    return chosen


def kube_binaries_built() -> bool:
    from kubesched.harness.controlplane import binaries_built

    return binaries_built()


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "base", metavar="BASE", help="the commit to compare with (anything git rev-parse takes)"
    )
    parser.add_argument(
        "--only",
        nargs="+",
        choices=[b.name for b in BENCHMARKS],
        help="these benchmarks instead of the default set",
    )
    parser.add_argument("--rounds", type=int, help="rounds per benchmark (default: its own, 1 to 3)")
    parser.add_argument("--smoke", action="store_true", help="each benchmark's tiny --smoke mode, one round")
    parser.add_argument("--json", action="store_true", help="print the raw figures of every run as JSON")
    args = parser.parse_args(argv)
    benches = selected(args.only, kube_binaries_built())
    with tempfile.TemporaryDirectory(prefix="kubesched-ab-") as tmp:
        base_root = Path(tmp, "base")
        base_root.mkdir()
        base = extract(args.base, base_root)
        trees = {"this": Tree(this_label(), REPO), "base": Tree(base, base_root)}
        for tree in trees.values():
            check_imports(tree)
            # Byte-compile first: the base is fresh from the archive, and compiling kubesched in
            # its first run would cost it about half a CPU second.
            compileall.compile_dir(str(tree.root / "src"), quiet=1)
        comparisons: list[Comparison] = []
        for bench in benches:
            comparison = Comparison(bench)
            rounds = 1 if args.smoke else args.rounds or bench.rounds
            for r in range(rounds):
                for side, tree in trees.items():
                    note(f"{bench.name}: round {r + 1}/{rounds}, {tree.label}")
                    comparison.runs[side].append(run_one(bench, tree, args.smoke))
            comparisons.append(comparison)
        if args.json:
            print(json.dumps(as_json(comparisons, trees["this"].label, base), indent=2))
        else:
            print(table(comparisons, trees["this"].label, base))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

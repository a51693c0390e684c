#!/usr/bin/env python3
"""Write every report kubesched makes of the examples and of generated scenarios, to compare two trees.

    tools/golden/reports.py inputs INPUT_DIR           # once, on the base tree: generated scenarios
    tools/golden/reports.py run INPUT_DIR OUT_DIR      # on each tree (PYTHONPATH picks the tree)
    tools/golden/reports.py compare OUT_A OUT_B        # a refactor must show "0 differ"

A refactor that claims "behaviour unchanged" shows it with this: the simulate, explain, capacity,
compare and replay reports of every example, the JSON report (per-node verdicts and scores) of 200
seeded differential scenarios, and a 500-node / 10,000-event synthetic replay. Measured durations
and rates are masked; everything else must be byte-identical. The generated inputs are written once
from the base tree, so the run does not depend on where the generators live in either tree.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
#: What differs from run to run: durations, rates, and the temporary paths of inputs.
MASKS = (
    (re.compile(r"\b\d+(?:\.\d+)?(?:e[+-]?\d+)?\s?(?:pods|events)/s"), "<rate>"),
    (re.compile(r"\b\d+\.\d+s\b"), "<secs>"),
    (re.compile(r'"(\w*(?:[sS]econds|PerSecond))":\s*[\d.e+-]+'), r'"\1":0'),
    (re.compile(r"(?m)^(\s*)(\w*(?:[sS]econds|PerSecond)): [\d.e+-]+$"), r"\1\2: 0"),
    (re.compile(r'"generatedAt":\s*"[^"]*"'), '"generatedAt":""'),
    # compare's "seconds" figure: the last cell of each column of its HTML table
    (re.compile(r'"\d+\.\d\d"\]'), '"<secs>"]'),
    # the bundled demo's path names the tree it runs from
    (re.compile(r"using the bundled demo cluster \([^)]*\)"), "using the bundled demo cluster (<path>)"),
)
#: Lines naming seconds or rates keep their words, not their decimals (compare's table rows).
_TIMED_LINE = re.compile(r"seconds|per second|/s\b", re.I)
_DECIMAL = re.compile(r"\b\d+\.\d+\b")
DIFFERENTIAL_SEEDS = range(1, 201)


def write_inputs(directory: Path) -> None:
    import msgspec
    import yaml

    from kubesched.harness.differential.scenario import generate, priority_class_manifests
    from kubesched.testing.scenarios import synthetic_scenario

    directory.mkdir(parents=True, exist_ok=True)
    for seed in DIFFERENTIAL_SEEDS:
        s = generate(seed)
        docs = [*priority_class_manifests(), *s.volumes, *s.nodes, *s.running, *s.pending, *s.pdbs]
        (directory / f"differential-{seed:04d}.yaml").write_text(yaml.safe_dump_all(docs, sort_keys=True))
    (directory / "pod.yaml").write_text(
        "apiVersion: v1\nkind: Pod\nmetadata: {name: probe, namespace: default}\nspec:\n"
        "  containers: [{name: c, image: x, resources: {requests: {cpu: '2', memory: 4Gi}}}]\n"
    )
    document = synthetic_scenario(nodes=500, events=10_000, seed=1)
    (directory / "replay-500.json").write_bytes(msgspec.json.encode(document))


def _commands(inputs: Path) -> list[tuple[str, list[str]]]:
    ex = "examples"
    demo, gpu, dra, nlf = f"{ex}/demo", f"{ex}/gpu", f"{ex}/gpu-dra", f"{ex}/node-label-filter"
    runs: list[tuple[str, list[str]]] = [
        ("demo-table", ["simulate", "--config", f"{demo}/scheduler-config.yaml", f"{demo}/cluster"]),
        ("demo-bundled", ["simulate"]),
        ("demo-explain", ["simulate", "--explain", "--scores", "--config", f"{demo}/scheduler-config.yaml"]),
        ("demo-json", ["simulate", "-o", "json", "--explain", "--per-node", f"{demo}/cluster"]),
        ("demo-html", ["simulate", "-o", "html", "--explain"]),
        ("demo-seed", ["simulate", "-o", "json", "--seed", "7", f"{demo}/cluster"]),
        (
            "gpu-json",
            [
                "simulate",
                "-o",
                "json",
                "--explain",
                "--config",
                f"{gpu}/scheduler-config.yaml",
                f"{gpu}/cluster",
            ],
        ),
        ("gpu-base", ["simulate", "--explain", "--config", f"{gpu}/baseline-config.yaml", f"{gpu}/cluster"]),
        ("dra-json", ["simulate", "-o", "json", "--explain", f"{dra}/cluster"]),
        (
            "dra-conf",
            [
                "simulate",
                "--explain",
                "--scores",
                "--config",
                f"{dra}/scheduler-config.yaml",
                f"{dra}/cluster",
            ],
        ),
        ("nlf", ["simulate", "--explain", "--config", f"{nlf}/scheduler-config.yaml", nlf]),
        (
            "plugin-package",
            [
                "simulate",
                "--config",
                f"{ex}/plugin-package/scheduler-config.yaml",
                f"{ex}/plugin-package/cluster.yaml",
            ],
        ),
        ("replay-shop", ["simulate", "-o", "json", "--scenario", f"{ex}/replay/shop-morning.yaml"]),
        ("replay-shop-table", ["simulate", "--scenario", f"{ex}/replay/shop-morning.yaml"]),
        ("replay-shop-html", ["simulate", "-o", "html", "--scenario", f"{ex}/replay/shop-morning.yaml"]),
        ("replay-web", ["simulate", "-o", "json", "--scenario", f"{ex}/replay/web-rollout.yaml"]),
        ("replay-web-table", ["simulate", "--scenario", f"{ex}/replay/web-rollout.yaml"]),
        ("whatif-rollout", ["simulate", "-o", "json", f"{demo}/cluster", f"{ex}/what-if/rollout.yaml"]),
        ("capacity-rollout", ["capacity", "-o", "json", f"{ex}/what-if/rollout.yaml", f"{demo}/cluster"]),
        ("capacity-demo", ["capacity", f"{ex}/what-if/shapes.yaml", f"{demo}/cluster"]),
        ("capacity-demo-json", ["capacity", "-o", "json", f"{ex}/what-if/shapes.yaml", f"{demo}/cluster"]),
        (
            "capacity-gpu",
            [
                "capacity",
                "-o",
                "json",
                "--config",
                f"{gpu}/scheduler-config.yaml",
                f"{ex}/what-if/shapes.yaml",
                f"{gpu}/cluster",
            ],
        ),
        (
            "compare-gpu",
            [
                "compare",
                f"{gpu}/cluster",
                "--config",
                f"{gpu}/baseline-config.yaml",
                "--config",
                f"{gpu}/scheduler-config.yaml",
            ],
        ),
        (
            "compare-gpu-json",
            [
                "compare",
                "-o",
                "json",
                f"{gpu}/cluster",
                "--config",
                "default",
                "--config",
                f"{gpu}/scheduler-config.yaml",
            ],
        ),
        (
            "compare-gpu-html",
            [
                "compare",
                "-o",
                "html",
                f"{gpu}/cluster",
                "--config",
                "default",
                "--config",
                f"{gpu}/scheduler-config.yaml",
            ],
        ),
        (
            "sweep-demo",
            ["sweep", "-o", "json", "--workers", "1", "--seeds", "0..1", "--weight", "NodeResourcesFit=1,3"],
        ),
        (
            "explain-demo",
            [
                "explain",
                "default/huge-memory-vv896lhpg6-7l6f7",
                "--snapshot",
                f"{demo}/cluster",
                "--config",
                f"{demo}/scheduler-config.yaml",
            ],
        ),
        (
            "explain-demo-json",
            [
                "explain",
                "-o",
                "json",
                "default/huge-memory-vv896lhpg6-7l6f7",
                "--snapshot",
                f"{demo}/cluster",
            ],
        ),
        (
            "explain-file",
            ["explain", "-o", "yaml", "-f", str(inputs / "pod.yaml"), "--snapshot", f"{demo}/cluster"],
        ),
        ("config-defaults", ["config", "defaults"]),
        ("config-validate", ["config", "validate", f"{demo}/scheduler-config.yaml"]),
        ("plugins", ["plugins", "-o", "json"]),
        ("replay-500", ["simulate", "-o", "json", "--scenario", str(inputs / "replay-500.json")]),
    ]
    for path in sorted(inputs.glob("differential-*.yaml")):
        runs.append((path.stem, ["simulate", "-o", "json", "--explain", "--per-node", str(path)]))
        runs.append((path.stem + "-table", ["simulate", "--explain", "--scores", str(path)]))
    return runs


def _mask(text: str) -> str:
    for pattern, replacement in MASKS:
        text = pattern.sub(replacement, text)
    return "".join(
        _DECIMAL.sub("<n>", line) if _TIMED_LINE.search(line) else line for line in text.splitlines(True)
    )


def compare(a: Path, b: Path) -> int:
    """Mask both sides again (reports written by an older copy of this tool) and list what differs."""
    import difflib

    names = sorted({p.name for p in a.glob("*.out")} | {p.name for p in b.glob("*.out")})
    differing = 0
    for name in names:
        left, right = a / name, b / name
        if not (left.exists() and right.exists()):
            print(f"only in {'b' if right.exists() else 'a'}: {name}")
            differing += 1
            continue
        la, lb = _mask(left.read_text()), _mask(right.read_text())
        if la != lb:
            differing += 1
            diff = difflib.unified_diff(
                la.splitlines(), lb.splitlines(), str(left), str(right), lineterm="", n=1
            )
            print("\n".join(list(diff)[:40]))
    print(f"{len(names)} reports, {differing} differ")
    return 1 if differing else 0


def run(inputs: Path, out: Path) -> int:
    out.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "COLUMNS": "160", "NO_COLOR": "1", "TERM": "dumb"}

    def one(item: tuple[str, list[str]]) -> None:
        name, args = item
        proc = subprocess.run(
            [sys.executable, "-m", "kubesched.cli", *args], cwd=ROOT, env=env, capture_output=True, text=True
        )
        body = f"$ kubesched {' '.join(args)}\nexit {proc.returncode}\n--- stdout\n{proc.stdout}--- stderr\n{proc.stderr}"
        (out / f"{name}.out").write_text(_mask(body.replace(str(inputs), "INPUTS")))

    with ThreadPoolExecutor(max_workers=int(os.environ.get("GOLDEN_JOBS", "2"))) as pool:
        list(pool.map(one, _commands(inputs)))
    return 0


def main(argv: list[str]) -> int:
    if len(argv) == 2 and argv[0] == "inputs":
        write_inputs(Path(argv[1]).resolve())
        return 0
    if len(argv) == 3 and argv[0] == "compare":
        return compare(Path(argv[1]), Path(argv[2]))
    if len(argv) == 3 and argv[0] == "run":
        return run(Path(argv[1]).resolve(), Path(argv[2]).resolve())
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

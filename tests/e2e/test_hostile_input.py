"""Hostile input from a person's point of view: `kubesched` as a subprocess on files built to crash
parsers (deep nesting, alias bombs) exits 2 with one line naming the file, never a signal, a
traceback or a memory blow-up; and `kubesched extender` under many concurrent large bodies keeps
its memory bounded and keeps serving (`benchmarks/extender_abuse.py`, at a test's size)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
LAUGHS = "".join(
    f"{chr(98 + i)}: &{chr(98 + i)} [" + ",".join([f"*{chr(97 + i)}"] * 9) + "]\n" for i in range(8)
)
HOSTILE = {
    "deep-flow.yaml": "kind: Pod\nx: " + "[" * 300_000 + "]" * 300_000 + "\n",
    "deep-block.yaml": "kind: Pod\n" + "".join(" " * i + f"k{i}:\n" for i in range(3000)),
    "deep.json": '{"kind": "Pod", "x": ' + "[" * 300_000 + "]" * 300_000 + "}",
    "bomb.yaml": 'kind: Pod\na: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]\n' + LAUGHS,
    "negative.yaml": "kind: Node\nmetadata: {name: n1}\nstatus: {allocatable: {cpu: '-4', pods: 10}}\n",
}


CASES = [("simulate", name) for name in sorted(HOSTILE)] + [
    ("config validate", name)
    for name in sorted(HOSTILE)
    if name != "negative.yaml"  # not a config
]


@pytest.mark.parametrize(("command", "name"), CASES)
def test_hostile_files_exit_2_with_one_line(tmp_path: Path, command: str, name: str) -> None:
    path = tmp_path / name
    path.write_text(HOSTILE[name])
    args = [*command.split(), str(path)]
    proc = subprocess.run(
        [sys.executable, "-m", "kubesched.cli", *args], capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 2, (proc.returncode, proc.stderr[-500:])  # 139 was a segfault
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and str(path) in lines[0] and "Traceback" not in proc.stderr, proc.stderr


def test_extender_memory_stays_bounded_under_many_large_bodies() -> None:
    script = REPO / "benchmarks" / "extender_abuse.py"
    proc = subprocess.run(
        [sys.executable, str(script), "--connections", "40", "--body-mib", "8"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert result["server_alive"] and result["serves_after"], result
    # 40 bodies of 8 MiB would be 320 MiB held at once without the shared budget (128 MiB).
    assert result["rss_peak_mib"] < 300, result
    assert result["responses"].get("200", 0) >= 1, result

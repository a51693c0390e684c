"""A big `kubectl get -o yaml` snapshot loads in about the memory of the same objects as JSON.

rapidyaml's tree of a whole list is about ten times the text, and it used to live until the JSON it
wrote was decoded: a 2000-node snapshot peaked at 2.1 times JSON's memory. The list is now parsed a
megabyte of entries at a time (`fast_yaml._split_items`). Measured in a child process, above what
its imports hold, on `benchmarks/input_load.py`'s snapshot.
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import yaml

REPO = Path(__file__).resolve().parents[3]
_CHILD = """
import sys
from kubesched.api.loader import load_paths
def kib(key):
    with open("/proc/self/status") as status:
        return next(int(line.split()[1]) for line in status if line.startswith(key))
before = kib("VmRSS:")
load_paths([sys.argv[1]])
print(kib("VmHWM:") - before)
"""


def _benchmark() -> ModuleType:
    spec = importlib.util.spec_from_file_location("input_load", REPO / "benchmarks/input_load.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _grown_kib(path: Path) -> int:
    command = [sys.executable, "-c", _CHILD, str(path)]
    done = subprocess.run(command, capture_output=True, text=True, check=True)
    return int(done.stdout)


def test_yaml_takes_at_most_one_and_a_half_times_the_memory_of_json(tmp_path: Path) -> None:
    bench = _benchmark()
    doc = bench.snapshot(300, 800)
    yaml_path, json_path = tmp_path / "cluster.yaml", tmp_path / "cluster.json"
    yaml_path.write_text(yaml.dump(doc, Dumper=bench._NoAliases, default_flow_style=False))
    json_path.write_text(json.dumps(doc, indent=4))  # as kubectl writes it
    assert yaml_path.stat().st_size > 2 << 20  # big enough to be read in pieces
    grown_yaml, grown_json = _grown_kib(yaml_path), _grown_kib(json_path)
    assert grown_yaml <= 1.5 * grown_json, (grown_yaml, grown_json)

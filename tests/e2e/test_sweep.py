"""`kubesched sweep`: the grid, its weights, and the same answers here, in worker processes and on Ray.

The Ray test starts a real Ray head (the `ray` extra, installed by `make test`) inside a private
network namespace (`unshare --net`, as root) and runs the sweep against its address.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from tests.unit.simulate.simulate_helpers import run_cli, write_yaml

from kubesched.config.loader import decode_config
from kubesched.errors import InputError
from kubesched.plugins import default_registry
from kubesched.scheduler.profiles import profiles_from_config
from kubesched.simulate.sweep.grid import parse_seeds, parse_weight, variants

REPO = Path(__file__).resolve().parents[2]
GPU = REPO / "examples" / "gpu"
GRID = [
    str(GPU / "cluster"),
    "--config",
    str(GPU / "scheduler-config.yaml"),
    "--config",
    str(GPU / "baseline-config.yaml"),
    "--seeds",
    "0,1",
]


def sweep_json(capsys: pytest.CaptureFixture[str], *argv: str) -> dict[str, Any]:
    code, out, err = run_cli(capsys, "sweep", *argv, "--output", "json")
    assert (code, err) == (0, ""), err
    result: dict[str, Any] = json.loads(out)
    return result


def answers(result: dict[str, Any]) -> list[Any]:
    """Every cell's figures, minus the wall-clock seconds."""
    out = []
    for cell in result["cells"]:
        run = dict(cell["run"])
        run.pop("seconds")
        out.append((cell["variant"], cell["scenario"], cell["seed"], run))
    return out


@pytest.mark.parametrize(
    ("text", "seeds"), [("0", [0]), ("3,1,3", [3, 1]), ("0..4", [0, 1, 2, 3, 4]), ("0..20:10", [0, 10, 20])]
)
def test_seed_lists_and_ranges(text: str, seeds: list[int]) -> None:
    assert parse_seeds(text) == seeds


@pytest.mark.parametrize(
    ("text", "error"),
    [
        ("NodeResourcesFit", "--weight: expected PLUGIN=WEIGHTS"),
        ("NodeResourcesFit=a", "--weight NodeResourcesFit: expected numbers"),
        ("NodeResourcesFit=0..3", "--weight NodeResourcesFit: a Score weight is between 1 and 100, got 0"),
        ("NodeResourcesFit=5..1", "--weight NodeResourcesFit: empty range"),
    ],
)
def test_bad_weights_are_refused(text: str, error: str) -> None:
    with pytest.raises(InputError) as caught:
        parse_weight(text)
    assert str(caught.value).startswith(error)


def test_weight_variants_carry_their_weights_into_the_profile() -> None:
    registry = default_registry()
    config = decode_config(
        "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n", "d", registry
    )
    made = variants(
        [("default", config)], [parse_weight("NodeResourcesFit=1,7"), parse_weight("ImageLocality=3")]
    )
    assert [v.name for v in made] == [
        "default[NodeResourcesFit=1,ImageLocality=3]",
        "default[NodeResourcesFit=7,ImageLocality=3]",
    ]
    for variant, fit in zip(made, (1, 7), strict=True):
        (profile,) = profiles_from_config(decode_config(variant.config, variant.name, registry), registry)
        weights = dict(profile.points["score"])
        assert (weights["NodeResourcesFit"], weights["ImageLocality"]) == (fit, 3)
        assert weights["TaintToleration"] == 3  # the others keep their defaults


def test_a_weight_for_a_plugin_no_profile_enables_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_cli(capsys, "sweep", *GRID, "--weight", "NoSuchPlugin=1")
    assert (code, out) == (2, "") and "enables no plugin named 'NoSuchPlugin' to weigh" in err


def test_worker_processes_give_the_answers_of_one_process(capsys: pytest.CaptureFixture[str]) -> None:
    here = sweep_json(capsys, *GRID, "--workers", "1")
    spread = sweep_json(capsys, *GRID, "--workers", "2")
    assert (here["backend"], here["workers"], spread["backend"], spread["workers"]) == (
        "here",
        1,
        "processes",
        2,
    )
    assert answers(here) == answers(spread)
    assert len(here["cells"]) == 4
    gpu, baseline = here["groups"]
    assert (gpu["variant"], gpu["seeds"], gpu["errors"]) == ("scheduler-config", 2, 0)
    # the comparison of README step 5, over two seeds
    assert gpu["figures"]["strandedExtended"]["mean"] < baseline["figures"]["strandedExtended"]["mean"]
    assert gpu["figures"]["scheduled"]["mean"] >= baseline["figures"]["scheduled"]["mean"]


def test_a_bad_scenario_fails_its_cells_not_the_sweep(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("kind: Pod\nmetadata: {name: [1]}\n")
    good = write_yaml(tmp_path / "good.yaml", {"kind": "Node", "metadata": {"name": "n"}})
    code, out, err = run_cli(
        capsys, "sweep", "--scenario", str(good), "--scenario", str(bad), "--workers", "1", "-o", "json"
    )
    assert code == 2
    result = json.loads(out)
    assert [g["errors"] for g in result["groups"]] == [0, 1]
    assert err.strip() == f"kubesched: {bad}: metadata.name: expected str, got array"


def test_the_same_sweep_on_a_ray_cluster(capsys: pytest.CaptureFixture[str]) -> None:
    if shutil.which("unshare") is None or shutil.which("ip") is None:
        pytest.fail("the Ray test needs `unshare` and `ip`: apt-get install util-linux iproute2")
    try:
        import ray  # noqa: F401
    except ImportError:
        pytest.fail("Ray is not installed: `make test` installs it (pip install -e '.[dev,ray]')")
    done = subprocess.run(
        [
            "unshare",
            "--net",
            "--",
            sys.executable,
            str(Path(__file__).with_name("ray_cluster_sweep.py")),
            *GRID,
        ],
        capture_output=True,
        cwd=REPO,
        timeout=900,
        check=False,
    )
    assert done.returncode == 0, done.stderr.decode(errors="replace")[-4000:]
    on_ray = json.loads(done.stdout)
    assert (on_ray["backend"], on_ray["workers"]) == ("ray", 2)
    here = sweep_json(capsys, *GRID, "--workers", "1")
    assert answers(on_ray) == answers(here)

"""Tables show quantities a person reads at a glance; JSON keeps them exact."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tests.unit.simulate.simulate_helpers import node, pod, run_cli, write_yaml

from kubesched.simulate.units import human_quantity


@pytest.mark.parametrize(
    ("resource", "quantity", "shown"),
    [
        ("memory", "939094179Ki", "895.6Gi"),
        ("memory", "512Mi", "512Mi"),
        ("memory", "4250Gi", "4.2Ti"),
        ("memory", "100", "100"),
        ("hugepages-2Mi", "1Gi", "1Gi"),
        ("cpu", "72860m", "72.9"),
        ("cpu", "250m", "250m"),
        ("cpu", "2", "2"),
        ("cpu", "1234567", "1234567"),
        ("nvidia.com/gpu", "8", "8"),
    ],
)
def test_human_quantities(resource: str, quantity: str, shown: str) -> None:
    assert human_quantity(resource, quantity) == shown


def test_capacity_table_is_human_and_json_exact(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cluster = write_yaml(tmp_path / "c.yaml", node("n", cpu="64", memory="1Ti"))
    shape = write_yaml(tmp_path / "s.yaml", pod("big", requests={"cpu": "1500m", "memory": "939094179Ki"}))
    code, out, _ = run_cli(capsys, "capacity", str(shape), str(cluster))
    assert code == 0 and "cpu=1.5 memory=895.6Gi" in out
    code, out, _ = run_cli(capsys, "capacity", str(shape), str(cluster), "-o", "json")
    assert json.loads(out)["shapes"][0]["requests"] == {"cpu": "1500m", "memory": "939094179Ki"}

"""`kubesched config validate|defaults` wiring (the main CLI prints InputError and exits 2)."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest
import yaml
from config_fakes import registry

from kubesched.cli import config as cli_config
from kubesched.errors import InputError

HEADER = "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"


@pytest.fixture(autouse=True)
def fake_registry(monkeypatch: pytest.MonkeyPatch) -> None:
    reg = registry()
    monkeypatch.setattr(cli_config, "default_registry", lambda **_: reg)


def run(*argv: str) -> int:
    parser = argparse.ArgumentParser(prog="kubesched")
    cli_config.add_config_commands(parser.add_subparsers(dest="command"))
    args = parser.parse_args(list(argv))
    code: int = args.func(args)
    return code


@pytest.mark.parametrize(
    ("profiles", "summary"),
    [
        ("", "valid (1 profile: default-scheduler)"),
        ("profiles: [{schedulerName: a}, {schedulerName: b}]\n", "valid (2 profiles: a, b)"),
    ],
)
def test_validate_valid(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], profiles: str, summary: str
) -> None:
    path = tmp_path / "sched.yaml"
    path.write_text(HEADER + profiles)
    assert run("config", "validate", str(path)) == 0
    assert capsys.readouterr().out == f"{path}: {summary}\n"


def test_validate_invalid_raises_one_line(tmp_path: Path) -> None:
    path = tmp_path / "sched.yaml"
    path.write_text(
        HEADER + "profiles: [{plugins: {filter: {enabled: [{name: CustomFilter}, {name: Foo}]}}}]\n"
    )
    with pytest.raises(InputError) as info:
        run("config", "validate", str(path))
    assert str(info.value) == f'{path}: profiles[0].plugins.filter.enabled[1].name: unknown plugin "Foo"'
    assert "\n" not in str(info.value)


def test_defaults_without_file_prints_the_default_config(capsys: pytest.CaptureFixture[str]) -> None:
    assert run("config", "defaults") == 0
    doc = yaml.safe_load(capsys.readouterr().out)
    assert doc["kind"] == "KubeSchedulerConfiguration"
    assert doc["profiles"][0]["schedulerName"] == "default-scheduler"
    assert doc["parallelism"] == 16


def test_defaults_with_file_prints_its_effective_config(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "sched.yaml"
    path.write_text(HEADER + "parallelism: 3\n")
    assert run("config", "defaults", str(path)) == 0
    doc = yaml.safe_load(capsys.readouterr().out)
    assert doc["parallelism"] == 3
    assert doc["podMaxBackoffSeconds"] == 10


def test_config_needs_a_subcommand() -> None:
    with pytest.raises(SystemExit):
        run("config")

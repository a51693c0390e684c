"""`--feature-gates` on every command that builds a scheduler: a bad or refused gate is one line
naming the flag (exit 2) before anything else happens; an ignored gate is said once on stderr."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from kubesched.cli import main

Capsys = pytest.CaptureFixture[str]

CONFIG = "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
NODE = "apiVersion: v1\nkind: Node\nmetadata: {name: n1}\nstatus: {allocatable: {cpu: '2', pods: '10'}}\n"


@pytest.fixture
def config(tmp_path: Path) -> str:
    path = tmp_path / "sched.yaml"
    path.write_text(CONFIG)
    return str(path)


def commands(config: str, tmp_path: Path) -> dict[str, list[str]]:
    node = tmp_path / "node.yaml"
    node.write_text(NODE)
    return {
        "run": ["run", f"--config={config}", f"--write-config-to={tmp_path / 'out.yaml'}"],
        "simulate": ["simulate", str(node), f"--config={config}"],
        "explain": ["explain", "default/p", f"--snapshot={node}"],
        "extender": ["extender", f"--config={config}", "--listen=127.0.0.1:0"],
        "config defaults": ["config", "defaults"],
        "config validate": ["config", "validate", config],
    }


COMMANDS = ["run", "simulate", "explain", "extender", "config defaults", "config validate"]
ERRORS = [
    ("Zzzz=true", "unrecognized feature gate: Zzzz"),
    ("GenricWorkload=true", 'unrecognized feature gate: GenricWorkload (did you mean "GenericWorkload"?)'),
    (
        "NodeDeclaredFeatures=false",
        "cannot set feature gate NodeDeclaredFeatures to false, feature is locked",
    ),
    (
        "DRADerivedAttributes=true",
        "DRADerivedAttributes=true changes scheduling and kubesched does not implement it",
    ),
    ("SchedulerAsyncPreemption=false", "SchedulerAsyncPreemption=false changes scheduling"),
    (
        "TopologyAwareWorkloadScheduling=true",
        "TopologyAwareWorkloadScheduling is enabled, but depends on features that are disabled: "
        "[GenericWorkload]",
    ),
    ("MemoryQoS=maybe", "invalid value of MemoryQoS=maybe"),
]


@pytest.mark.parametrize("command", COMMANDS)
@pytest.mark.parametrize(("gates", "message"), ERRORS)
def test_a_bad_or_refused_gate_stops_every_command_with_one_line(
    command: str, gates: str, message: str, config: str, tmp_path: Path, capsys: Capsys
) -> None:
    argv = commands(config, tmp_path)[command]
    assert main([*argv, f"--feature-gates={gates}"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"kubesched: --feature-gates: {message}")
    assert err.count("\n") == 1


def test_gates_the_scheduler_does_not_read_are_accepted_and_said_once(
    config: str, tmp_path: Path, capsys: Capsys
) -> None:
    out = tmp_path / "out.yaml"
    argv = ["run", f"--config={config}", f"--write-config-to={out}"]
    flags = [
        "--feature-gates=MemoryQoS=false,WatchListClient=false",
        "--feature-gates",
        "ClientsAllowCBOR=true",
    ]
    assert main([*argv, *flags]) == 0
    err = capsys.readouterr().err
    assert err.count("accepted and ignored") == 1
    assert "MemoryQoS=false, WatchListClient=false, ClientsAllowCBOR=true" in err
    assert yaml.safe_load(out.read_text())["profiles"][0]["schedulerName"] == "default-scheduler"


def test_gates_at_their_defaults_change_nothing(config: str, tmp_path: Path, capsys: Capsys) -> None:
    assert main(["config", "defaults"]) == 0
    plain = capsys.readouterr().out
    gated = "GenericWorkload=false,SchedulerAsyncPreemption=true,NodeDeclaredFeatures=true,AllAlpha=false"
    assert main(["config", "defaults", f"--feature-gates={gated}"]) == 0
    captured = capsys.readouterr()
    assert captured.out == plain
    assert captured.err == ""

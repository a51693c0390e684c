"""`kubesched run` takes kube-scheduler's command line: flags win over the config file, and a flag
kubesched cannot honour is one line naming it (exit 2), never silently ignored.

`--write-config-to` (upstream's: write the effective configuration and exit) shows what the flags
did to the configuration without needing a cluster.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest
import yaml

from kubesched.cli import _parser, main
from kubesched.cli.kube_flags import log_level

Capsys = pytest.CaptureFixture[str]

CONFIG = """\
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
clientConnection: {kubeconfig: /from/the/file, qps: 50, burst: 100}
leaderElection:
  leaderElect: true
  resourceName: from-file
  resourceNamespace: kube-system
  leaseDuration: 15s
  renewDeadline: 10s
  retryPeriod: 2s
profiles:
- schedulerName: kubesched
"""


@pytest.fixture
def config(tmp_path: Path) -> Path:
    path = tmp_path / "sched.yaml"
    path.write_text(CONFIG)
    return path


def effective(config: Path, tmp_path: Path, *flags: str) -> dict[str, object]:
    out = tmp_path / "effective.yaml"
    assert main(["run", f"--config={config}", *flags, f"--write-config-to={out}"]) == 0
    loaded: dict[str, object] = yaml.safe_load(out.read_text())
    return loaded


def test_without_flags_the_file_decides(config: Path, tmp_path: Path) -> None:
    cfg = effective(config, tmp_path)
    assert cfg["leaderElection"]["leaderElect"] is True  # type: ignore[index]
    assert cfg["clientConnection"]["qps"] == 50  # type: ignore[index]


def test_flags_given_win_over_the_file(config: Path, tmp_path: Path) -> None:
    cfg = effective(
        config,
        tmp_path,
        "--leader-elect=false",
        "--leader-elect-resource-name=from-flag",
        "--leader-elect-lease-duration=1m",
        "--leader-elect-renew-deadline",
        "30s",
        "--kube-api-qps=500",
        "--kube-api-burst=1000",
        "--kubeconfig=/from/the/flag",
    )
    le = cfg["leaderElection"]
    cc = cfg["clientConnection"]
    assert le["leaderElect"] is False  # type: ignore[index]
    assert le["resourceName"] == "from-flag"  # type: ignore[index]
    assert le["resourceNamespace"] == "kube-system"  # type: ignore[index]  # not given: the file's
    assert (le["leaseDuration"], le["renewDeadline"], le["retryPeriod"]) == ("1m0s", "30s", "2s")  # type: ignore[index]
    assert (cc["qps"], cc["burst"], cc["kubeconfig"]) == (500, 1000, "/from/the/flag")  # type: ignore[index]


@pytest.mark.parametrize("spelling", [["--leader-elect"], ["--leader-elect=true"], ["--leader-elect=1"]])
def test_pflag_boolean_spellings(config: Path, tmp_path: Path, spelling: list[str]) -> None:
    config.write_text(CONFIG.replace("leaderElect: true", "leaderElect: false"))
    assert effective(config, tmp_path, *spelling)["leaderElection"]["leaderElect"] is True  # type: ignore[index]


def test_flag_values_are_validated_with_the_file(config: Path, capsys: Capsys) -> None:
    code = main(
        ["run", f"--config={config}", "--leader-elect-renew-deadline=20s", "--write-config-to=/dev/null"]
    )
    assert code == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err
    assert (
        "with the command-line flags: leaderElection.leaseDuration: must be greater than renewDeadline" in err
    )


@pytest.mark.parametrize(
    "flag,named",
    [
        ("--profiling", "--profiling"),
        ("--profiling=true", "--profiling"),
        ("--vmodule=foo=4", "--vmodule"),
        ("--requestheader-client-ca-file=/ca.crt", "--requestheader-client-ca-file"),
        ("--tls-sni-cert-key=a.crt,a.key", "--tls-sni-cert-key"),
        ("--log-json-split-stream=true", "--log-json-split-stream"),
    ],
)
def test_a_flag_kubesched_cannot_honour_is_one_line_naming_it(
    config: Path, capsys: Capsys, flag: str, named: str
) -> None:
    assert main(["run", f"--config={config}", flag, "--write-config-to=/dev/null"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"kubesched: {named}: kubesched cannot honour this kube-scheduler flag")
    assert "\n" not in err


@pytest.mark.parametrize(
    "flags",
    [
        ["--profiling=false", "--contention-profiling=false"],
        ["--http2-max-streams-per-connection=1000", "--log-flush-frequency=5s"],
        ["--v=3", "--bind-address=127.0.0.1", "--secure-port=0"],
        ["--authorization-always-allow-paths=/healthz,/readyz,/livez,/metrics"],
        ["--leader-elect-resource-lock=leases", "--kube-api-content-type=application/json"],
    ],
)
def test_flags_met_trivially_or_honoured_are_accepted(config: Path, tmp_path: Path, flags: list[str]) -> None:
    effective(config, tmp_path, *flags)


@pytest.mark.parametrize(
    "flag,message",
    [
        (
            "--kube-api-content-type=application/vnd.kubernetes.protobuf",
            "--kube-api-content-type: kubesched talks",
        ),
        (
            "--leader-elect-resource-lock=endpointsleases",
            "--leader-elect-resource-lock: kubesched takes a Lease",
        ),
        ("--listen=0.0.0.0:10259", "--listen: replaced: the endpoints are served over HTTPS"),
    ],
)
def test_values_kubesched_cannot_honour(config: Path, capsys: Capsys, flag: str, message: str) -> None:
    assert main(["run", f"--config={config}", flag, "--write-config-to=/dev/null"]) == 2
    assert capsys.readouterr().err.startswith(f"kubesched: {message}")


def test_a_container_spec_written_for_kube_scheduler_parses() -> None:
    """The args of a typical kube-scheduler Deployment (and of scheduler-plugins' chart)."""
    args = _parser().parse_args(
        [
            "run",
            "--config=/etc/kubernetes/scheduler-config.yaml",
            "--v=3",
            "--leader-elect=false",
            "--bind-address=0.0.0.0",
            "--secure-port=10259",
            "--authentication-kubeconfig=/etc/kubernetes/scheduler.conf",
            "--authorization-kubeconfig=/etc/kubernetes/scheduler.conf",
            "--authorization-always-allow-paths=/healthz,/readyz,/livez,/metrics",
            "--tls-min-version=VersionTLS12",
            "--tls-cipher-suites=TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384",
        ]
    )
    assert args.v == 3 and args.leader_elect is False and args.secure_port == 10259
    assert args.authorization_always_allow_paths == ["/healthz", "/readyz", "/livez", "/metrics"]
    assert not getattr(args, "unsupported_flags", None)


@pytest.mark.parametrize(
    "given,level",
    [({"log_level": None, "v": None}, "info"), ({"log_level": None, "v": 2}, "info"),
     ({"log_level": None, "v": 4}, "debug"), ({"log_level": "warning", "v": 6}, "warning")],
)  # fmt: skip
def test_verbosity_from_v_unless_log_level_says(given: dict[str, object], level: str) -> None:
    assert log_level(argparse.Namespace(**given)) == level


def test_flags_are_never_guessed_from_a_prefix(config: Path) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["run", f"--config={config}", "--leader-elect-lease=15s"])
    assert exc.value.code == 2

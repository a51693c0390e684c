"""`kubesched run`'s early lists: the connection guessed from the file and the flags, and the order
that keeps a busy port or a bad flag from ever touching the cluster."""

from __future__ import annotations

import argparse
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from kubeconfigs import kubeconfig_for

from kubesched.cli.run_early import ConnectionHint, EarlyLists, connection_hint


def _args(config: Path, **flags: object) -> argparse.Namespace:
    given: dict[str, object] = {
        "kubeconfig": None,
        "kube_api_qps": None,
        "kube_api_burst": None,
        "master": None,
    }
    return argparse.Namespace(config=str(config), **(given | flags))


def _config(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "sched.yaml"
    path.write_text("apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n" + text)
    return path


def test_the_hint_is_the_files_client_connection_with_the_flags_over_it(tmp_path: Path) -> None:
    config = _config(tmp_path, "clientConnection: {kubeconfig: /etc/k.conf, qps: 200, burst: 300}\n")
    assert connection_hint(_args(config)) == ConnectionHint("/etc/k.conf", 200.0, 300)
    flags = _args(config, kubeconfig="/other", kube_api_qps=7.5, kube_api_burst=9)
    assert connection_hint(flags) == ConnectionHint("/other", 7.5, 9)


def test_without_client_connection_the_hint_is_kube_schedulers_defaults(tmp_path: Path) -> None:
    config = _config(tmp_path, "profiles: [{schedulerName: x}]\n")
    assert connection_hint(_args(config)) == ConnectionHint("", 50.0, 100)


@pytest.mark.parametrize(
    "text",
    [
        "clientConnection: [1]\n",
        "clientConnection: {qps: fast}\n",
        "clientConnection: {burst: 1.5}\n",
        "clientConnection: {kubeconfig: [a]}\n",
        "clientConnection: {qps: 1\n",  # not YAML
    ],
)
def test_a_file_that_does_not_say_it_plainly_gives_no_hint(tmp_path: Path, text: str) -> None:
    assert connection_hint(_args(_config(tmp_path, text))) is None


def test_no_file_no_hint_and_no_early_lists(tmp_path: Path) -> None:
    args = _args(tmp_path / "missing.yaml")
    assert connection_hint(args) is None
    assert EarlyLists.start(args) is None


def test_a_bad_kubeconfig_sends_nothing_early(tmp_path: Path) -> None:
    args = _args(_config(tmp_path, ""), kubeconfig=str(tmp_path / "no-such-kubeconfig"))
    assert EarlyLists.start(args) is None


def test_the_validated_connection_decides_whether_the_early_client_is_used(tmp_path: Path) -> None:
    with socket.socket() as s:  # a server that never answers: the lists stay on their way
        s.bind(("127.0.0.1", 0))
        s.listen()
        kubeconfig = kubeconfig_for(tmp_path, f"https://127.0.0.1:{s.getsockname()[1]}")
        early = EarlyLists.start(_args(_config(tmp_path, ""), kubeconfig=str(kubeconfig)))
        assert early is not None
        try:
            assert early.matches(str(kubeconfig), 50.0, 100)
            assert not early.matches(str(kubeconfig), 50.0, 101)
            assert not early.matches("", 50.0, 100)
        finally:
            early.close()


@pytest.mark.parametrize("bad", ["--secure-port", "--insecure-listen"])
def test_a_busy_port_is_exit_2_before_anything_reaches_the_api_server(tmp_path: Path, bad: str) -> None:
    with socket.socket() as api, socket.socket() as busy:
        api.bind(("127.0.0.1", 0))
        api.listen()
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        kubeconfig = kubeconfig_for(tmp_path, f"https://127.0.0.1:{api.getsockname()[1]}")
        port = busy.getsockname()[1]
        flags = ["--bind-address", "127.0.0.1", "--secure-port", str(port) if bad == "--secure-port" else "0"]
        flags += ["--insecure-listen", f"127.0.0.1:{port}"] if bad == "--insecure-listen" else []
        argv = ["run", "--config", str(_config(tmp_path, "")), "--kubeconfig", str(kubeconfig), *flags]
        done = subprocess.run(
            [sys.executable, "-m", "kubesched.cli", *argv], capture_output=True, text=True, timeout=120
        )
        assert done.returncode == 2
        assert (
            done.stderr.strip()
            .splitlines()[-1]
            .startswith(f"kubesched: {bad}: cannot serve on 127.0.0.1:{port}")
        )
        api.settimeout(0.2)
        with pytest.raises(TimeoutError):
            api.accept()  # no connection ever came: the cluster was not touched

"""The client's parts that need no server: the qps/burst token bucket, watch line splitting, error
decoding, and finding the cluster (kubeconfig files, in-cluster config)."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest

from kubesched.cluster.kube.client import TokenBucket, _lines, error_from_body, load_connection
from kubesched.errors import InputError


class FakeTime:
    def __init__(self) -> None:
        self.now = 100.0
        self.slept: list[float] = []

    def clock(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds


def test_burst_is_free_then_requests_are_paced_at_qps() -> None:
    t = FakeTime()
    bucket = TokenBucket(qps=10, burst=3, clock=t.clock, sleep=t.sleep)
    waits = [bucket.acquire() for _ in range(5)]
    assert waits[:3] == [0.0, 0.0, 0.0]
    assert waits[3:] == pytest.approx([0.1, 0.1])
    assert t.now == pytest.approx(100.2)


def test_tokens_refill_with_time_up_to_burst() -> None:
    t = FakeTime()
    bucket = TokenBucket(qps=2, burst=2, clock=t.clock, sleep=t.sleep)
    bucket.acquire()
    bucket.acquire()
    t.now += 100  # a long idle period saves up at most `burst` tokens
    assert [bucket.acquire() for _ in range(3)] == pytest.approx([0.0, 0.0, 0.5])


def test_concurrent_reservations_queue_in_order() -> None:
    t = FakeTime()
    bucket = TokenBucket(qps=100, burst=1, clock=t.clock, sleep=lambda s: None)
    waits = sorted(bucket.reserve() for _ in range(4))
    assert waits == pytest.approx([0.0, 0.01, 0.02, 0.03])


def test_try_take_takes_a_token_only_when_one_is_there_now() -> None:
    t = FakeTime()
    bucket = TokenBucket(qps=10, burst=2, clock=t.clock, sleep=t.sleep)
    assert [bucket.try_take() for _ in range(3)] == [True, True, False]
    t.now += 0.05  # half a token: still none, and no debt taken on
    assert not bucket.try_take()
    t.now += 0.1
    assert bucket.try_take()  # 1.5 tokens saved up: one taken
    assert bucket.reserve() == pytest.approx(0.05)  # the refused tries took on no debt
    assert TokenBucket(qps=0, burst=1).try_take()


def test_qps_zero_or_negative_is_unlimited() -> None:
    bucket = TokenBucket(qps=-1, burst=1, sleep=lambda s: pytest.fail("must not sleep"))
    assert all(bucket.acquire() == 0 for _ in range(1000))


def test_bucket_is_thread_safe() -> None:
    bucket = TokenBucket(qps=1, burst=1000)
    waits: list[float] = []
    lock = threading.Lock()

    def take() -> None:
        for _ in range(100):
            w = bucket.reserve()
            with lock:
                waits.append(w)

    threads = [threading.Thread(target=take) for _ in range(8)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert len(waits) == 800 and sum(1 for w in waits if w == 0) == 800  # exactly the burst, no more


def test_lines_split_chunks_at_newlines_across_boundaries() -> None:
    chunks = [b'{"a":', b'1}\n{"b"', b":2}\n\n", b'{"c":3}']
    assert list(_lines(iter(chunks))) == [b'{"a":1}', b'{"b":2}', b'{"c":3}']


def test_error_from_body_reads_the_status_object_or_falls_back_to_text() -> None:
    err = error_from_body(
        409,
        b'{"kind":"Status","status":"Failure","message":"pod x is already assigned","reason":"Conflict",'
        b'"code":409}',
    )
    assert (err.code, err.reason, err.message) == (409, "Conflict", "pod x is already assigned")
    plain = error_from_body(502, b"<html>bad gateway</html>")
    assert plain.code == 502 and "bad gateway" in plain.message
    assert "409 Conflict" in str(err)


def _kubeconfig(
    path: Path, *, server: str = "https://127.0.0.1:6443", user: dict[str, str] | None = None
) -> Path:
    path.write_text(
        json.dumps(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{"name": "c", "cluster": {"server": server, "insecure-skip-tls-verify": True}}],
                "users": [{"name": "u", "user": user if user is not None else {"token": "secret"}}],
                "contexts": [{"name": "ctx", "context": {"cluster": "c", "user": "u"}}],
                "current-context": "ctx",
            }
        )
    )
    return path


def test_load_connection_from_a_kubeconfig_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", "10.0.0.1")  # an explicit path wins over in-cluster
    cfg = load_connection(str(_kubeconfig(tmp_path / "kc")))
    assert cfg.cluster.server == "https://127.0.0.1:6443"
    assert cfg.user is not None and cfg.user.token == "secret"


def test_load_connection_uses_the_kubeconfig_env_var(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    monkeypatch.setenv("KUBECONFIG", str(_kubeconfig(tmp_path / "kc", server="https://example:1")))
    assert load_connection().cluster.server == "https://example:1"


def test_missing_or_broken_kubeconfig_is_one_input_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    with pytest.raises(InputError, match="kubeconfig not found"):
        load_connection(str(tmp_path / "nope"))
    broken = tmp_path / "broken"
    broken.write_text("clusters: [")
    with pytest.raises(InputError, match="invalid kubeconfig") as info:
        load_connection(str(broken))
    assert str(broken) in str(info.value)


def test_in_cluster_config_without_a_service_account_is_an_input_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", "10.0.0.1")
    monkeypatch.setenv("KUBERNETES_SERVICE_PORT", "443")
    # No /var/run/secrets/kubernetes.io/serviceaccount on a test machine.
    if Path("/var/run/secrets/kubernetes.io/serviceaccount/token").exists():  # pragma: no cover
        pytest.skip("running inside a pod")
    with pytest.raises(InputError, match="in-cluster configuration"):
        load_connection(None)

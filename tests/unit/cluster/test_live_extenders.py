"""A bindVerb extender's bind passes the bind pipeline's gate; a refusal there is handed to the core
as a status it abandons, never raised through the binding cycle."""

from __future__ import annotations

from kubesched.cluster.kube.live_extenders import LiveExtenders
from kubesched.cluster.kube.pipeline import BindPipeline
from kubesched.cluster.kube.state_lock import StateLock
from kubesched.config.types import Extender
from kubesched.scheduler.ports import BindRefused
from kubesched.testing.builders import make_pod


def test_a_bind_the_gate_refuses_is_an_error_status_carrying_the_refusal() -> None:
    lock = StateLock()
    extenders = LiveExtenders([Extender(url_prefix="http://127.0.0.1:9", bind_verb="bind")], lock)
    pipeline = BindPipeline(1)
    pipeline.suspend("not leading")
    extenders.pipeline = pipeline
    with lock:
        status = extenders.bind(make_pod("a"), "n1")
        assert lock.owned()
    assert status is not None and not status.is_success()
    assert isinstance(status.error, BindRefused) and str(status.error) == "not leading"
    assert pipeline.refused == 1 and pipeline.on_wire == 0
    extenders.close()

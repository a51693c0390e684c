"""Log lines of the long-running commands: structured fields in text and JSON, no wire traces."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator

import pytest

from kubesched.cli._logging import configure_logging
from kubesched.cluster.kube.live_reports import attempt_fields
from kubesched.framework.status import Status
from kubesched.scheduler.scheduler import Attempt
from kubesched.testing.builders import make_pod


@pytest.fixture(autouse=True)
def restore_logging() -> Iterator[None]:
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    yield
    root.handlers[:] = handlers
    root.setLevel(level)


def decision(capsys: pytest.CaptureFixture[str], fmt: str, attempt: Attempt) -> str:
    configure_logging("debug", fmt)
    logging.getLogger("kubesched.decisions").debug(
        "scheduling attempt", extra={"fields": attempt_fields(attempt)}
    )
    logging.getLogger("httpcore2.http11").debug("send_request_headers.started")  # silenced
    return capsys.readouterr().err


def test_text_line_has_the_fields_after_the_message(capsys: pytest.CaptureFixture[str]) -> None:
    attempt = Attempt(
        make_pod("web", namespace="shop"),
        "default-scheduler",
        "Unschedulable",
        duration=0.0123,
        attempts=3,
        reasons=[("Insufficient cpu", 45), ("node(s) had untolerated taint(s)", 14)],
    )
    err = decision(capsys, "text", attempt)
    (line,) = err.splitlines()
    assert line.endswith(
        " D kubesched.decisions: scheduling attempt pod=shop/web profile=default-scheduler "
        'result=Unschedulable reasons="45 Insufficient cpu; 14 node(s) had untolerated taint(s)" '
        "durationMs=12.3 attempts=3"
    )


def test_json_line_per_record(capsys: pytest.CaptureFixture[str]) -> None:
    attempt = Attempt(
        make_pod("web"), "p", "Scheduled", node="n7", duration=0.002, attempts=1, evaluated=9, feasible=4
    )
    record = json.loads(decision(capsys, "json", attempt))
    assert {k: record[k] for k in ("level", "logger", "msg")} == {
        "level": "debug",
        "logger": "kubesched.decisions",
        "msg": "scheduling attempt",
    }
    assert {
        k: record[k] for k in ("pod", "result", "node", "feasibleNodes", "evaluatedNodes", "attempts")
    } == {
        "pod": "default/web",
        "result": "Scheduled",
        "node": "n7",
        "feasibleNodes": 4,
        "evaluatedNodes": 9,
        "attempts": 1,
    }
    assert record["ts"].endswith("Z")


def test_pre_filter_and_preemption_fields() -> None:
    refused = Status.unschedulable_and_unresolvable('persistentvolumeclaim "data" not found')
    refused.plugin = "VolumeRestrictions"
    fields = attempt_fields(
        Attempt(make_pod("p"), "x", "Unschedulable", pre_filter=refused, victims=["a/b"], nominated_node="n1")
    )
    assert fields["reasons"] == 'PreFilter VolumeRestrictions: persistentvolumeclaim "data" not found'
    assert (fields["victims"], fields["nominatedNode"]) == ("a/b", "n1")

"""Backoff and retries run in virtual time: minutes of scheduler time cost milliseconds.

The plugins are loaded the way users load theirs, as `module:Class` names in the configuration; the
module is written to a temporary directory put on sys.path. Each plugin records the virtual time
(`handle.now()`) at which it is called.
"""

from __future__ import annotations

import gc
import importlib
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Protocol, cast

import pytest
from tests.unit.simulate.simulate_helpers import node, pod, write_config, write_yaml

from kubesched.api.loader import load_paths
from kubesched.config import load_config
from kubesched.plugins import default_registry
from kubesched.simulate.snapshot.model import Report
from kubesched.simulate.snapshot.run import simulate
from kubesched.simulate.virtual_time import RUN_GC_THRESHOLD, long_lived_heap

MODULE = "kubesched_virtual_time_plugins"

PLUGINS = """
from kubesched.framework import Status

#: Virtual times at which the plugins were called, in order.
CALLS: list[float] = []
#: How many calls fail before the plugins start to succeed.
FAILURES = 0


class FlakyFilter:
    name = "FlakyFilter"

    def __init__(self, handle=None):
        self.handle = handle

    def filter(self, state, pod, node_info):
        CALLS.append(self.handle.now())
        if len(CALLS) <= FAILURES:
            return Status.as_error("disk on fire")
        return None


class FlakyPreBind:
    name = "FlakyPreBind"

    def __init__(self, handle=None):
        self.handle = handle

    def pre_bind(self, state, pod, node_name):
        CALLS.append(self.handle.now())
        if len(CALLS) <= FAILURES:
            return Status.as_error("volume not attached yet")
        return None


class RejectsAtPermit:
    name = "RejectsAtPermit"

    def __init__(self, handle=None):
        self.handle = handle

    def permit(self, state, pod, node_name):
        CALLS.append(self.handle.now())
        return Status.unschedulable("quota exhausted")


class WaitsInVain:
    name = "WaitsInVain"

    def permit(self, state, pod, node_name):
        return Status.wait("waiting for a partner"), 1.0
"""


class PluginModule(Protocol):
    """The generated module, as the tests use it."""

    CALLS: list[float]
    FAILURES: int


def no_real_waiting(wall: float, virtual: float) -> None:
    """The run did not wait out its virtual time. Half of it is the bound: what is tested is that
    no real time was waited for, not how fast a loaded machine simulates (2 s flaked)."""
    assert wall < virtual / 2, f"{wall:.1f} s of real time for {virtual:g} virtual seconds"


@pytest.fixture
def plugins(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[PluginModule]:
    package_dir = tmp_path / "plugins"
    package_dir.mkdir()
    (package_dir / f"{MODULE}.py").write_text(PLUGINS)
    monkeypatch.syspath_prepend(str(package_dir))
    monkeypatch.delitem(sys.modules, MODULE, raising=False)
    yield cast(PluginModule, importlib.import_module(MODULE))
    sys.modules.pop(MODULE, None)


def run(tmp_path: Path, config_body: str) -> tuple[Report, float]:
    """Simulate one node and one pod with the given config; (report, wall-clock seconds)."""
    cluster = write_yaml(tmp_path / "c.yaml", node("n1"), pod("p", requests={"cpu": "1", "memory": "1Gi"}))
    config_path = write_config(tmp_path / "sched.yaml", config_body)
    registry = default_registry()
    config = load_config(config_path, registry)
    objects = load_paths([cluster])
    started = time.perf_counter()
    report = simulate(objects, config, registry, seed=0)
    return report, time.perf_counter() - started


def filter_profile(plugin: str) -> str:
    return f"profiles:\n- plugins:\n    filter:\n      enabled: [{{name: '{MODULE}:{plugin}'}}]\n"


def test_error_backoff_doubles_in_virtual_time(tmp_path: Path, plugins: PluginModule) -> None:
    """Errors back off 1, 2, 4, 8 s, then the 10 s maximum; 35 virtual seconds, no real waiting."""
    plugins.FAILURES = 6
    report, wall = run(tmp_path, filter_profile("FlakyFilter"))
    (p,) = report.pods
    assert (p.result, p.node, p.attempts, p.message) == ("Scheduled", "n1", 7, None)
    assert plugins.CALLS == [0.0, 1.0, 3.0, 7.0, 15.0, 25.0, 35.0]
    no_real_waiting(wall, 35.0)
    no_real_waiting(report.summary.seconds, 35.0)


def test_backoff_durations_come_from_the_config(tmp_path: Path, plugins: PluginModule) -> None:
    plugins.FAILURES = 5
    body = "podInitialBackoffSeconds: 2\npodMaxBackoffSeconds: 5\n" + filter_profile("FlakyFilter")
    report, _ = run(tmp_path, body)
    assert report.pods[0].result == "Scheduled"
    assert plugins.CALLS == [0.0, 2.0, 6.0, 11.0, 16.0, 21.0]


def test_a_pod_that_always_errors_stops_at_the_idle_horizon(tmp_path: Path, plugins: PluginModule) -> None:
    """Retried every 10 s once backoff is capped, until 16 virtual minutes pass without a bind:
    attempts at 0, 1, 3, 7, 15, then 25, 35, ..., 955 (94 more); the next, at 965 s, is too late."""
    plugins.FAILURES = 10**6
    report, wall = run(tmp_path, filter_profile("FlakyFilter"))
    (p,) = report.pods
    assert (p.result, p.node) == ("Error", None)
    assert p.message == f'running "{MODULE}:FlakyFilter" filter plugin: disk on fire'
    assert p.attempts == 99
    assert plugins.CALLS[-1] == 955.0
    no_real_waiting(wall, 955.0)
    assert (report.summary.errors, report.summary.scheduled) == (1, 0)


def test_binding_cycle_failures_are_retried_without_leaking_the_assumed_pod(
    tmp_path: Path, plugins: PluginModule
) -> None:
    """A PreBind error unreserves and forgets the assumed pod, then the pod is retried after backoff."""
    plugins.FAILURES = 5
    report, wall = run(
        tmp_path, f"profiles:\n- plugins:\n    preBind:\n      enabled: [{{name: '{MODULE}:FlakyPreBind'}}]\n"
    )
    (p,) = report.pods
    assert (p.result, p.node, p.attempts) == ("Scheduled", "n1", 6)
    assert plugins.CALLS == [0.0, 1.0, 3.0, 7.0, 15.0, 25.0]
    (n1,) = report.nodes
    assert (n1.pods, n1.requested) == (1, {"cpu": "1", "memory": "1Gi"})
    no_real_waiting(wall, 25.0)


def permit_profile(plugin: str) -> str:
    return f"profiles:\n- plugins:\n    permit:\n      enabled: [{{name: '{MODULE}:{plugin}'}}]\n"


def test_permit_rejection_is_retried_by_the_leftover_flush(tmp_path: Path, plugins: PluginModule) -> None:
    """A rejected pod waits in the unschedulable pool; with no cluster event it is retried after
    5 minutes there (podMaxInUnschedulablePodsDuration), until the 16-minute idle horizon."""
    report, wall = run(tmp_path, permit_profile("RejectsAtPermit"))
    (p,) = report.pods
    assert (p.result, p.node, p.attempts) == ("Unschedulable", None, 4)
    assert p.message == "0/1 nodes are available: 1 quota exhausted."
    assert plugins.CALLS == [0.0, 300.0, 600.0, 900.0]
    # The node holds nothing: every rejection unreserved and forgot the assumed pod.
    assert (report.nodes[0].pods, report.nodes[0].requested["cpu"]) == (0, "0")
    no_real_waiting(wall, 900.0)


def test_permit_timeout_is_retried_like_a_rejection(tmp_path: Path, plugins: PluginModule) -> None:
    report, _ = run(tmp_path, permit_profile("WaitsInVain"))
    (p,) = report.pods
    assert p.result == "Unschedulable"
    assert p.message == "0/1 nodes are available: 1 rejected due to timeout after waiting 1s at plugin " + (
        f"{MODULE}:WaitsInVain."
    )
    assert p.attempts == 4


def test_long_lived_heap_raises_the_gc_threshold_for_the_run_only() -> None:
    before = gc.get_threshold()
    with long_lived_heap():
        assert gc.get_threshold() == RUN_GC_THRESHOLD
    assert gc.get_threshold() == before
    with pytest.raises(RuntimeError), long_lived_heap():
        raise RuntimeError("a failed run hands the thresholds back too")
    assert gc.get_threshold() == before

"""The fault suite: kubesched under the faults a cluster really has, judged from the API server's
audit log of every Binding (who sent it, when it arrived, to which node, the answer), not from
kubesched's own word. See `kubesched.harness.faults` for the scenarios and the figures.

It runs on a control plane of its own (it restarts the API server and compacts etcd), in its own
xdist group, so the other integration tests share the other worker. Sizes are small (a few hundred
pods, lease 4/3/1 s); `benchmarks/fault_comparison.py` runs the same scenarios at the issue's sizes
next to kube-scheduler v1.37.2.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from kubesched.harness.controlplane import ControlPlane
from kubesched.harness.fake_nodes import ApiClient
from kubesched.harness.faults import SCENARIOS, Scale, fault_control_plane, run_scenario

pytestmark = [pytest.mark.xdist_group("faults"), pytest.mark.timeout(1200)]

SCALE = Scale(nodes=30, pods=200, qps=50, burst=100, lease=(4, 3, 1), settle_timeout=90.0)


@pytest.fixture(scope="module")
def plane() -> Iterator[tuple[ControlPlane, ApiClient]]:
    with fault_control_plane(SCALE) as (cp, api, _):
        yield cp, api


@pytest.mark.parametrize("scenario", list(SCENARIOS))
def test_no_stale_decision_is_ever_bound(plane: tuple[ControlPlane, ApiClient], scenario: str) -> None:
    cp, api = plane
    f = run_scenario(cp, api, "kubesched", scenario, SCALE)
    summary = f.as_dict()
    assert f.double_binds == 0, summary
    assert f.lost_pods == 0, summary
    assert f.binds_after_loss == 0, summary
    assert f.binds_to_deleted_nodes == 0, summary
    assert f.overfilled_nodes == 0, summary
    assert f.duplicate_scheduled_events == 0, summary
    # One Scheduled Event per bound pod; only a replica that died (SIGKILL, or exit on losing the
    # Lease while the API server was down) may take unsent ones with it.
    assert f.bound_without_event == 0, summary
    assert f.bound >= SCALE.pods - 30, summary
    assert f.peak_rss_mib < 400, summary
    assert f.notes == [], summary
    if scenario in ("split-brain", "apiserver-restart-410"):
        # Lost the Lease: exits non-zero, promptly (kube-scheduler exits at once too).
        assert f.exit_code == 1 and f.exit_seconds is not None and f.exit_seconds < 6.0, summary
    if scenario == "sigterm-under-load":
        # 2 s by design under full load; the slack is for a loaded two-core CI machine.
        assert f.exit_code == 0 and f.exit_seconds is not None and f.exit_seconds < 3.0, summary

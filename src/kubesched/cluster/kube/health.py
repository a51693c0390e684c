"""What `/livez` and `/readyz` of `kubesched run` mean: small checks, whatever server answers them.

Each check returns None when fine, else a short reason (`[-]name failed: reason`). The HTTP side
(`kubesched.metrics.HealthServer`, or whatever transport serves them) only runs them.

Liveness (`/livez`, `/healthz`) fails only when a restart would help:

* `scheduling-loop` - the loop thread crashed, exited, or has not come round for
  `SchedulingLoop.stall_seconds` (a plugin or extender hanging, a state lock never let go);
* `leaderElection` - client-go's watchdog: while leading, no renewal for leaseDuration + 20 s.

Readiness (`/readyz`) adds what says whether this replica could do the work:

* `informer-sync` - every informer has listed its kind (kube-scheduler's `sched-handler-sync`);
* `shutdown` - fails from SIGTERM on, so nothing is routed to a replica on its way out.

A standby with synced caches is ready, as kube-scheduler v1.37.2's standby is (its /readyz answers
200). Were only the leader ready, a Deployment's RollingUpdate of two replicas would wait for ever
for the new pod (a standby) to become ready, and a PodDisruptionBudget of `minAvailable: 1` would
block every drain of the leader's node. Who leads is `leader_election_master_status` and the Lease.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from kubesched.cluster.kube.leader import LeaderElector
    from kubesched.cluster.kube.live import LiveCluster

__all__ = ["Check", "LiveHealth"]

Check = Callable[[], str | None]


class LiveHealth:
    """The named checks of one `kubesched run` process."""

    def __init__(
        self,
        cluster: LiveCluster,
        elector: LeaderElector | None,
        *,
        lease: str,
        stopping: threading.Event,
    ) -> None:
        self.cluster = cluster
        self.elector = elector
        self.lease = lease
        self.stopping = stopping

    def live_checks(self) -> dict[str, Check]:
        return {
            "ping": lambda: None,
            "scheduling-loop": self.cluster.loop_problem,
            "leaderElection": self.lease_renewal,
        }

    def ready_checks(self) -> dict[str, Check]:
        return {"informer-sync": self.sync, "shutdown": self.shutdown}

    # ------------------------------------------------------------------ the checks

    def lease_renewal(self) -> str | None:
        if self.elector is not None and not self.elector.healthy():
            return "the lease was not renewed in time"
        return None

    def sync(self) -> str | None:
        if not self.cluster.informers:
            return "informers not started"
        missing = self.cluster.unsynced()
        return f"not synced: {', '.join(missing)}" if missing else None

    def shutdown(self) -> str | None:
        return "shutting down" if self.stopping.is_set() else None

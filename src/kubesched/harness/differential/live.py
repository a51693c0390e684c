"""Schedule a scenario with `kubesched run` on the same API server, one pending pod at a time.

The live share of the differential run: the same scenario the upstream binary scheduled is created
again and its pending pods (with `spec.schedulerName` naming kubesched's profile, so kube-scheduler
leaves them alone) are scheduled by a real `kubesched run` subprocess: informers, the scheduling
loop, the binding pipeline, Events and status writes, exactly as a user runs it. Its outcomes are
compared like upstream's, with kubesched's simulator on the objects the API server held before each
pod (so a tie broken differently from upstream's never cascades into false mismatches).

`kubesched run` logs no informer events; its cache gauges (`scheduler_scheduler_cache_size`, served
on `--insecure-listen`) tell when it holds a scenario, and `scheduler_pending_pods` when a deleted
pod has left its queue.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

from kubesched.harness.controlplane import ControlPlane, ManagedProcess, http_get
from kubesched.harness.differential.cluster import ScenarioOnCluster, UpstreamTimeout, wait_until
from kubesched.harness.differential.gated import NO_GATES, Gates
from kubesched.harness.differential.scenario import Scenario
from kubesched.harness.fake_nodes import ApiClient
from kubesched.harness.ports import free_port

__all__ = ["LIVE_PROFILE", "KubeschedLive"]

#: The profile `kubesched run` schedules for; the upstream scheduler ignores pods naming it.
LIVE_PROFILE = "kubesched-differential"
_CONFIG = f"""\
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
percentageOfNodesToScore: 100
leaderElection:
  leaderElect: false
profiles:
- schedulerName: {LIVE_PROFILE}
"""
#: Ports tried for `--insecure-listen`: a port found free may be taken by another process before
#: `kubesched run` (seconds of imports later, on a loaded machine) binds it.
PORT_TRIES = 3
_SAMPLE = re.compile(r"^(?P<name>[a-zA-Z_:][\w:]*)(?:\{(?P<labels>[^}]*)\})? (?P<value>\S+)$")


class KubeschedLive(ScenarioOnCluster):
    """One `kubesched run` subprocess on a control plane, reused for many scenarios."""

    scheduler_name = LIVE_PROFILE

    def __init__(
        self, control_plane: ControlPlane, client: ApiClient, workdir: Path, gates: Gates = NO_GATES
    ) -> None:
        super().__init__(client)
        config = workdir / "kubesched-live.yaml"
        config.write_text(_CONFIG)
        for _ in range(PORT_TRIES):
            self.port = free_port()
            self.process = ManagedProcess(
                "kubesched-run",
                [
                    sys.executable, "-m", "kubesched.cli", "run",
                    "--config", str(config),
                    "--kubeconfig", str(control_plane.kubeconfig_path),
                    "--secure-port", "0",
                    "--insecure-listen", f"127.0.0.1:{self.port}",
                    *gates.flags(),
                ],
                workdir / "kubesched-live.log",
                port=self.port,
            )  # fmt: skip
            try:
                wait_until("kubesched run /readyz", lambda: self._get("/readyz")[0] == 200, timeout=120)
                return
            except UpstreamTimeout:
                self.process.stop()
                tail = self.process.log_tail()
                if "address in use" not in tail:
                    raise UpstreamTimeout(f"kubesched run never got ready:\n{tail}") from None
        raise UpstreamTimeout(f"kubesched run found no free port in {PORT_TRIES} tries")

    def stop(self) -> None:
        self.process.stop()

    def _get(self, path: str) -> tuple[int, str]:
        if not self.process.alive():
            raise UpstreamTimeout(f"kubesched run exited:\n{self.process.log_tail()}")
        return http_get(f"http://127.0.0.1:{self.port}{path}", None)

    def _gauges(self, name: str) -> dict[str, float]:
        """The samples of one gauge by the value of its only label."""
        _, text = self._get("/metrics")
        out: dict[str, float] = {}
        for line in text.splitlines():
            m = _SAMPLE.match(line)
            if m is None or m["name"] != name:
                continue
            label = (m["labels"] or "").partition('="')[2].rstrip('"')
            out[label] = float(m["value"])
        return out

    def _cache_is(self, nodes: int, pods: int) -> bool:
        sizes = self._gauges("scheduler_scheduler_cache_size")
        return sizes.get("nodes") == nodes and sizes.get("pods") == pods

    # ------------------------------------------------------------------ hooks
    def _wait_cache_holds(self, s: Scenario, nodes: list[str], running: list[str]) -> None:
        # The control plane holds nothing but this scenario, so the counts say it all.
        wait_until("the scenario in kubesched's cache", lambda: self._cache_is(len(nodes), len(running)))

    def _wait_cache_dropped(self, s: Scenario, nodes: list[str], pods: list[str]) -> None:
        wait_until("an empty kubesched cache", lambda: self._cache_is(0, 0))

    def _wait_pods_seen(self, keys: list[str], members: frozenset[str] = frozenset()) -> None:
        # Pods held back by PreEnqueue count as pending too (queue "gated").
        wait_until(
            "the wave's pods in kubesched's queue",
            lambda: sum(self._gauges("scheduler_pending_pods").values()) >= len(keys),
        )

    def _wait_unscheduled_pod_gone(self, key: str) -> None:
        wait_until(
            f"{key} out of kubesched's queue",
            lambda: sum(self._gauges("scheduler_pending_pods").values()) == 0,
        )

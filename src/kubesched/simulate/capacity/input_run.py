"""A fresh simulation of the input, settled, to which `capacity` adds its copies (of a pod, a
workload, or a gang with added nodes): the cluster, its workload controllers and the scheduler."""

from __future__ import annotations

import msgspec

from kubesched.api.group_claims import GROUP_CLAIMS
from kubesched.api.loader import LoadedObjects
from kubesched.api.objects import Pod, PodSpec
from kubesched.cluster.memory import MemoryCluster
from kubesched.config.types import KubeSchedulerConfiguration
from kubesched.framework.node_info import pod_key
from kubesched.framework.registry import Registry
from kubesched.scheduler.clock import VirtualClock
from kubesched.scheduler.profiles import profiles_from_config
from kubesched.scheduler.scheduler import Attempt, Scheduler
from kubesched.simulate.snapshot.run import run_with_controllers
from kubesched.simulate.virtual_time import new_scheduler, run_until_settled
from kubesched.simulate.workloads import (
    WorkloadControllers,
    has_workloads,
    with_room_for_controllers,
)

__all__ = ["InputRun", "never_preempt"]


def never_preempt(spec: PodSpec) -> PodSpec:
    """A copy's spec: it never preempts (capacity is free room) and is not bound yet."""
    return msgspec.structs.replace(spec, preemption_policy="Never", node_name="")


class InputRun:
    """A fresh simulation of the input: its cluster, its controllers (when it has workloads) and the
    scheduler of `config`; a shape's count and the gang search (capacity/gang.py) add their copies
    once `start` has placed the input's own pending pods and workloads."""

    def __init__(
        self, objects: LoadedObjects, config: KubeSchedulerConfiguration, registry: Registry, *, seed: int
    ) -> None:
        self.clock = VirtualClock()
        with_controllers = has_workloads(objects)
        self.cluster = MemoryCluster(
            with_room_for_controllers(objects) if with_controllers else objects,
            self.clock.now,
            group_claims=registry.features.enabled(GROUP_CLAIMS),
        )
        self.controllers = (
            WorkloadControllers(self.cluster, seed=seed, gates=registry.features)
            if with_controllers
            else None
        )
        self.messages: dict[str, str] = {}
        self.scheduler: Scheduler = new_scheduler(
            profiles_from_config(config, registry),
            config,
            registry,
            self.cluster,
            self.clock,
            seed=seed,
            observer=self._observe,
        )

    def _observe(self, attempt: Attempt) -> None:
        if attempt.message and attempt.result != "Scheduled":
            self.messages[pod_key(attempt.pod)] = attempt.message

    def _refuse(self, pod: Pod, exc: Exception) -> None:
        self.messages[pod_key(pod)] = str(exc)

    def start(self) -> None:
        """Deliver the input to the scheduler and place what it has pending."""
        self.cluster.subscribe(self.scheduler, on_error=self._refuse)
        if self.controllers is None:
            run_until_settled(self.scheduler, self.clock, self.cluster, retry_unschedulable=True)
        else:
            run_with_controllers(self.scheduler, self.clock, self.cluster, self.controllers, lambda _: None)

    def close(self) -> None:
        if self.scheduler.extenders is not None:
            self.scheduler.extenders.close()

    def bound(self, key: str) -> bool:
        pod = self.cluster.pods.get(key)
        return pod is not None and bool(pod.spec.node_name)

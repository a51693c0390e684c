"""Workloads as their controllers create them: Deployments, ReplicaSets, StatefulSets, DaemonSets,
Jobs, CronJobs and ReplicationControllers become pods in the simulated cluster, with the names,
labels, ownerReferences and node affinity the controllers give them (see each module)."""

from kubesched.simulate.workloads.context import PodChanges, WorkloadStatus
from kubesched.simulate.workloads.job_scheduling import WORKLOAD_WITH_JOB
from kubesched.simulate.workloads.manager import WorkloadControllers, has_workloads, with_room_for_controllers

__all__ = [
    "WORKLOAD_WITH_JOB",
    "PodChanges",
    "WorkloadControllers",
    "WorkloadStatus",
    "has_workloads",
    "with_room_for_controllers",
]

"""Workload objects (Deployment, ReplicaSet, StatefulSet, DaemonSet, Job, CronJob, ReplicationController):
the checks the API server makes before a controller ever sees them.

The simulator creates pods from these objects as the controllers would, so an object the API server
would refuse must be refused here too, with the field path, rather than producing odd pods: a missing
template, a selector that does not select its own template, a negative replica count. Replica counts
are also bounded, so that a hostile `replicas: 2147483647` is an error and not an out-of-memory.
"""

from __future__ import annotations

from typing import Final

from kubesched.api.controllers import (
    CronJob,
    DaemonSet,
    Deployment,
    Job,
    JobSpec,
    PodTemplateSpec,
    ReplicaSet,
    ReplicationController,
    StatefulSet,
)
from kubesched.api.kinds import KubeObject
from kubesched.api.meta import LabelSelector
from kubesched.api.selectors import compile_label_selector
from kubesched.errors import InputError

__all__ = ["MAX_WORKLOAD_PODS", "WORKLOAD_KINDS", "check_workload", "pod_template_of", "replicas_of"]

#: The most pods one workload may ask for in a simulation (replicas, parallelism).
MAX_WORKLOAD_PODS: Final = 1_000_000

WorkloadObject = Deployment | ReplicaSet | StatefulSet | DaemonSet | Job | CronJob | ReplicationController
WORKLOAD_KINDS: Final = (Deployment, ReplicaSet, StatefulSet, DaemonSet, Job, CronJob, ReplicationController)


def replicas_of(obj: Deployment | ReplicaSet | StatefulSet | ReplicationController) -> int:
    """`spec.replicas`, defaulted to 1 as the API server does."""
    return 1 if obj.spec.replicas is None else obj.spec.replicas


def pod_template_of(obj: WorkloadObject) -> PodTemplateSpec | None:
    """The pod template a workload's pods are made from (a CronJob's is inside its job template)."""
    if isinstance(obj, CronJob):
        return obj.spec.job_template.spec.template
    return obj.spec.template


def check_workload(obj: KubeObject) -> None:
    """Raise `InputError` (with the field path) for a workload the API server would reject.

    Objects of other kinds pass unchecked.
    """
    if isinstance(obj, Deployment | ReplicaSet | StatefulSet | DaemonSet):
        _check_count(getattr(obj.spec, "replicas", None), "spec.replicas")
        _check_selected_template(obj.spec.selector, obj.spec.template, "spec")
        _check_strategy(obj)
    elif isinstance(obj, ReplicationController):
        _check_count(obj.spec.replicas, "spec.replicas")
        template = _required_template(obj.spec.template, "spec.template")
        if obj.spec.selector and not _selects(obj.spec.selector, template):
            raise InputError(
                "`selector` does not match template `labels`", path="spec.template.metadata.labels"
            )
    elif isinstance(obj, Job):
        _check_job(obj.spec, "spec")
    elif isinstance(obj, CronJob):
        _check_job(obj.spec.job_template.spec, "spec.jobTemplate.spec")


def _check_count(value: int | None, path: str) -> None:
    if value is None:
        return
    if value < 0:
        raise InputError("must be greater than or equal to 0", path=path)
    if value > MAX_WORKLOAD_PODS:
        raise InputError(f"at most {MAX_WORKLOAD_PODS} pods per workload in a simulation", path=path)


def _required_template(template: PodTemplateSpec | None, path: str) -> PodTemplateSpec:
    if template is None:
        raise InputError("required value", path=path)
    return template


def _selects(match_labels: dict[str, str], template: PodTemplateSpec) -> bool:
    labels = template.metadata.labels
    return all(labels.get(k) == v for k, v in match_labels.items())


def _check_selected_template(
    selector: LabelSelector | None, template: PodTemplateSpec | None, path: str
) -> None:
    """apps/v1: a selector is required, not empty, and must select the template's labels."""
    if selector is None:
        raise InputError("required value", path=f"{path}.selector")
    matcher = compile_label_selector(selector, path=f"{path}.selector")
    if matcher.matches_everything:
        raise InputError("empty selector is invalid for a workload", path=f"{path}.selector")
    checked = _required_template(template, f"{path}.template")
    if not matcher.matches(checked.metadata.labels):
        raise InputError(
            "`selector` does not match template `labels`", path=f"{path}.template.metadata.labels"
        )


def _check_job(spec: JobSpec, path: str) -> None:
    _check_count(spec.parallelism, f"{path}.parallelism")
    _check_count(spec.completions, f"{path}.completions")
    if spec.backoff_limit is not None and spec.backoff_limit < 0:
        raise InputError("must be greater than or equal to 0", path=f"{path}.backoffLimit")
    _required_template(spec.template, f"{path}.template")
    if spec.completion_mode not in ("NonIndexed", "Indexed"):
        raise InputError(
            f'unsupported value "{spec.completion_mode}": supported values: "Indexed", "NonIndexed"',
            path=f"{path}.completionMode",
        )
    if spec.completion_mode == "Indexed" and spec.completions is None:
        raise InputError("required value when completionMode is Indexed", path=f"{path}.completions")
    if spec.manual_selector and spec.selector is not None and spec.template is not None:
        _check_selected_template(spec.selector, spec.template, path)
    _check_gang(spec, path)


def _check_gang(spec: JobSpec, path: str) -> None:
    """`spec.scheduling`'s gang minCount (WorkloadWithJob): at least 1, at most the parallelism."""
    policy = spec.scheduling.scheduling_policy if spec.scheduling is not None else None
    if policy is None or policy.gang is None or policy.gang.min_count is None:
        return
    where = f"{path}.scheduling.schedulingPolicy.gang.minCount"
    count = policy.gang.min_count
    if count < 1:
        raise InputError("must be greater than or equal to 1", path=where)
    parallelism = 1 if spec.parallelism is None else spec.parallelism
    if count > parallelism:
        raise InputError(f"must not be greater than parallelism ({parallelism})", path=where)


def _check_strategy(obj: Deployment | ReplicaSet | StatefulSet | DaemonSet) -> None:
    """The rollout knobs the controllers compute with: ints or percentages, never negative."""
    if isinstance(obj, Deployment) and obj.spec.strategy.rolling_update is not None:
        rolling = obj.spec.strategy.rolling_update
        path = "spec.strategy.rollingUpdate"
        _check_int_or_percent(rolling.max_surge, f"{path}.maxSurge")
        _check_int_or_percent(rolling.max_unavailable, f"{path}.maxUnavailable")
    elif isinstance(obj, DaemonSet) and obj.spec.update_strategy.rolling_update is not None:
        daemon = obj.spec.update_strategy.rolling_update
        path = "spec.updateStrategy.rollingUpdate"
        _check_int_or_percent(daemon.max_surge, f"{path}.maxSurge")
        _check_int_or_percent(daemon.max_unavailable, f"{path}.maxUnavailable")
    elif isinstance(obj, StatefulSet):
        ordered = obj.spec.update_strategy.rolling_update
        if ordered is not None and ordered.partition < 0:
            raise InputError(
                "must be greater than or equal to 0", path="spec.updateStrategy.rollingUpdate.partition"
            )


def _check_int_or_percent(value: int | str | None, path: str) -> None:
    if isinstance(value, str):
        digits = value.removesuffix("%")
        if not value.endswith("%") or not digits.isdigit():
            raise InputError(
                f"invalid value {value!r}: a percentage is a whole number followed by '%'", path=path
            )
    elif value is not None and value < 0:
        raise InputError("must be greater than or equal to 0", path=path)

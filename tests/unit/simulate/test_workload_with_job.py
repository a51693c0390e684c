"""WorkloadWithJob: the simulated Job controller makes a Job's Workload and PodGroup as v1.37.2's does.

One test per rule of pkg/controller/job/job_scheduling_manager.go (which Jobs, names, the compiled
template, owners, when objects are made or only reused, minCount following parallelism, the
garbage collector), and end to end through simulate and a replay. The hashes in the names were
computed with the v1.37.2 Go code (DeepHashObject of the uid, FNV-1a of the two names).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import msgspec
import pytest
from hypothesis import given
from hypothesis import strategies as st
from tests.unit.simulate.simulate_helpers import Obj, node, run_cli, write_yaml
from tests.unit.simulate.test_workloads import job, loaded

from kubesched.api.loader import LoadedObjects, load_documents
from kubesched.api.objects import Pod
from kubesched.api.scheduling_groups import PodGroup, Workload
from kubesched.cluster.memory import MemoryCluster
from kubesched.config import FeatureGates, default_config, parse_feature_gates
from kubesched.plugins import default_registry
from kubesched.simulate.replay.run import replay
from kubesched.simulate.scenario import API_VERSION, parse_scenario
from kubesched.simulate.snapshot.run import simulate
from kubesched.simulate.workloads import WorkloadControllers
from kubesched.simulate.workloads.job_scheduling import pod_group_name, workload_name
from kubesched.simulate.workloads.naming import object_uid

GATES = ["GenericWorkload=true,TopologyAwareWorkloadScheduling=true,WorkloadWithJob=true"]
GATE_SET = parse_feature_gates(GATES)
JOB_UID = object_uid("Job", "default", "train")


def gang_job(name: str = "train", parallelism: int = 3, min_count: int | None = None, **spec: Any) -> Obj:
    """A Job of 1-CPU pods whose Workload is a gang (minCount: its parallelism unless given)."""
    gang: Obj = {} if min_count is None else {"minCount": min_count}
    made = job(name, parallelism=parallelism, **{"scheduling": {"schedulingPolicy": {"gang": gang}}, **spec})
    made["spec"]["template"]["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "1"
    return made


def controllers(*docs: Obj, gates: FeatureGates = GATE_SET) -> tuple[MemoryCluster, WorkloadControllers]:
    cluster = MemoryCluster(loaded(*docs))
    return cluster, WorkloadControllers(cluster, gates=gates)


def round_one(*docs: Obj, gates: FeatureGates = GATE_SET) -> tuple[MemoryCluster, list[Pod]]:
    cluster, made = controllers(*docs, gates=gates)
    return cluster, made.reconcile().created


def as_doc(obj: Workload | PodGroup) -> Obj:
    """`obj` as a manifest (to_builtins leaves out the defaults, apiVersion and kind among them)."""
    doc: Obj = msgspec.to_builtins(obj)
    return {"apiVersion": obj.api_version, "kind": obj.kind, **doc}


def only(cluster: MemoryCluster) -> tuple[Workload, PodGroup]:
    (workload,) = cluster.groups.workloads.values()
    (pod_group,) = cluster.groups.pod_groups.values()
    return workload, pod_group


# --------------------------------------------------------------------------- names


def test_names_carry_the_hashes_the_v1_37_job_controller_computes() -> None:
    assert workload_name("train", "abc") == "train-54b6d87f7"
    assert workload_name("train", "0b5cfb0e-4c55-4a43-9a8e-5e0f2a6c2d11") == "train-5b9fccb9bd"
    assert pod_group_name("wl-name", "tpl") == "wl-name-tpl-59f4c9bcd"


@given(st.text("abc", min_size=1, max_size=260), st.text("xyz", min_size=1, max_size=260))
def test_a_pod_group_name_fits_a_dns_subdomain_cutting_the_longer_part_first(
    workload: str, template: str
) -> None:
    name = pod_group_name(workload, template)
    kept_workload, kept_template, digest = name.split("-")
    assert len(name) <= 253 and len(digest) >= 6
    assert workload.startswith(kept_workload) and template.startswith(kept_template)
    room = 253 - len(digest) - 2
    if len(workload) + len(template) <= room:
        assert (kept_workload, kept_template) == (workload, template)
    else:
        assert len(kept_workload) + len(kept_template) == room
        half = room // 2
        assert len(kept_workload) >= min(len(workload), half)
        assert len(kept_template) >= min(len(template), half)


# --------------------------------------------------------------------------- which Jobs


def test_with_the_gate_off_a_job_gets_no_workload_and_its_pods_no_group() -> None:
    cluster, pods = round_one(gang_job(), gates=parse_feature_gates(["GenericWorkload=true"]))
    assert not cluster.groups.workloads and not cluster.groups.pod_groups
    assert len(pods) == 3 and all(p.spec.scheduling_group is None for p in pods)


def test_a_job_without_scheduling_gets_a_basic_workload_and_pod_group() -> None:
    cluster, pods = round_one(job("train", parallelism=2))
    workload, pod_group = only(cluster)
    assert workload.metadata.name == workload_name("train", JOB_UID)
    (template,) = workload.spec.pod_group_templates
    assert template.name == "train-pgt-0"
    assert template.scheduling_policy.basic is not None and template.scheduling_policy.gang is None
    assert pod_group.metadata.name == pod_group_name(workload.metadata.name, "train-pgt-0")
    assert pod_group.spec.scheduling_policy.basic is not None
    assert [p.spec.scheduling_group.pod_group_name for p in pods if p.spec.scheduling_group] == [
        pod_group.metadata.name
    ] * 2


def test_the_workload_and_pod_group_are_owned_as_upstream_owns_them() -> None:
    cluster, pods = round_one(gang_job())
    workload, pod_group = only(cluster)
    (owner,) = workload.metadata.owner_references
    assert (owner.api_version, owner.kind, owner.name, owner.uid) == ("batch/v1", "Job", "train", JOB_UID)
    assert owner.controller is True and owner.block_owner_deletion is True
    ref = workload.spec.controller_ref
    assert ref is not None and (ref.api_group, ref.kind, ref.name) == ("batch", "Job", "train")
    job_ref, workload_ref = pod_group.metadata.owner_references
    assert job_ref == owner
    assert (workload_ref.api_version, workload_ref.kind, workload_ref.name) == (
        "scheduling.k8s.io/v1beta1",
        "Workload",
        workload.metadata.name,
    )
    assert workload_ref.uid == workload.metadata.uid and not workload_ref.controller
    assert workload_ref.block_owner_deletion is None
    spec_ref = pod_group.spec.workload_ref
    assert spec_ref is not None and (spec_ref.workload_name, spec_ref.template_name) == (
        workload.metadata.name,
        "train-pgt-0",
    )
    for pod in pods:  # the pod factory drops the template's PodGroup reference: the Job's only
        assert [(r.kind, r.name) for r in pod.metadata.owner_references] == [("Job", "train")]


@pytest.mark.parametrize(
    ("parallelism", "min_count", "expected"),
    [(3, None, 3), (3, 2, 2), (0, None, 1), (None, None, 1)],
)
def test_a_gang_without_min_count_takes_the_parallelism_at_least_one(
    parallelism: int | None, min_count: int | None, expected: int
) -> None:
    spec = gang_job(parallelism=parallelism or 0, min_count=min_count)
    if parallelism is None:
        del spec["spec"]["parallelism"]
    cluster, _ = round_one(spec)
    workload, pod_group = only(cluster)
    gang = workload.spec.pod_group_templates[0].scheduling_policy.gang
    assert gang is not None and gang.min_count == expected
    assert pod_group.spec.scheduling_policy.gang == gang


def test_constraints_disruption_mode_claims_and_priority_class_are_copied() -> None:
    spec = job(
        "train",
        parallelism=2,
        scheduling={
            "schedulingPolicy": {"gang": {"minCount": 2}},
            "schedulingConstraints": {"topology": [{"key": "rack"}]},
            "disruptionMode": {"all": {}},
            "resourceClaims": [{"name": "fabric", "resourceClaimTemplateName": "nvlink"}],
        },
    )
    spec["spec"]["template"]["spec"]["priorityClassName"] = "training"
    high = {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "training"}}
    with_claims = parse_feature_gates([*GATES, "DRAWorkloadResourceClaims=true"])
    cluster, _ = round_one({**high, "value": 1000}, spec, gates=with_claims)
    workload, pod_group = only(cluster)
    template = workload.spec.pod_group_templates[0]
    assert template.scheduling_constraints is not None
    assert [t.key for t in template.scheduling_constraints.topology] == ["rack"]
    assert template.disruption_mode is not None and template.disruption_mode.all is not None
    assert [(c.name, c.resource_claim_template_name) for c in template.resource_claims] == [
        ("fabric", "nvlink")
    ]
    assert template.priority_class_name == "training" and template.priority is None
    assert pod_group.spec.scheduling_constraints == template.scheduling_constraints
    assert pod_group.spec.disruption_mode == template.disruption_mode
    assert pod_group.spec.resource_claims == template.resource_claims
    assert (pod_group.spec.priority_class_name, pod_group.spec.priority) == ("training", 1000)  # admission


def test_fields_of_a_gate_that_is_off_are_dropped_as_the_api_server_drops_them() -> None:
    spec = job(
        "train",
        scheduling={
            "schedulingConstraints": {"topology": [{"key": "rack"}]},
            "disruptionMode": {"all": {}},
            "resourceClaims": [{"name": "fabric", "resourceClaimTemplateName": "nvlink"}],
        },
    )
    cluster, _ = round_one(spec, gates=parse_feature_gates(["GenericWorkload=true,WorkloadWithJob=true"]))
    workload, pod_group = only(cluster)
    template = workload.spec.pod_group_templates[0]
    assert template.scheduling_constraints is None and template.resource_claims == []
    assert template.disruption_mode is not None and template.disruption_mode.all is not None  # not gated
    assert pod_group.spec.scheduling_constraints is None and pod_group.spec.resource_claims == []


def test_empty_topology_and_no_disruption_mode_are_left_unset() -> None:
    spec = job("train", scheduling={"schedulingConstraints": {"topology": []}})
    cluster, _ = round_one(spec)
    workload, pod_group = only(cluster)
    template = workload.spec.pod_group_templates[0]
    assert template.scheduling_constraints is None and template.disruption_mode is None
    assert pod_group.spec.scheduling_constraints is None and pod_group.spec.disruption_mode is None


def test_a_job_whose_template_names_a_pod_group_is_left_to_it() -> None:
    spec = gang_job()
    spec["spec"]["template"]["spec"]["schedulingGroup"] = {"podGroupName": "mine"}
    cluster, pods = round_one(spec)
    assert not cluster.groups.workloads and not cluster.groups.pod_groups
    assert {p.spec.scheduling_group.pod_group_name for p in pods if p.spec.scheduling_group} == {"mine"}


def test_a_job_owned_by_another_controller_gets_nothing_a_cron_jobs_included() -> None:
    owned = gang_job()
    owned["metadata"]["ownerReferences"] = [
        {"apiVersion": "x.io/v1", "kind": "Trainer", "name": "t", "uid": "t-1", "controller": True}
    ]
    cron = {
        "apiVersion": "batch/v1",
        "kind": "CronJob",
        "metadata": {"name": "nightly"},
        "spec": {"schedule": "0 0 * * *", "jobTemplate": {"spec": gang_job("x")["spec"]}},
    }
    cluster, pods = round_one(owned, cron)
    assert len(pods) == 6
    assert not cluster.groups.workloads and not cluster.groups.pod_groups
    assert all(p.spec.scheduling_group is None for p in pods)


def test_a_delegated_job_gets_a_pod_group_from_its_owners_workload_template() -> None:
    owned = gang_job()
    owned["metadata"]["ownerReferences"] = [
        {"apiVersion": "x.io/v1", "kind": "Trainer", "name": "t", "uid": "t-1", "controller": True}
    ]
    owned["metadata"]["annotations"] = {"scheduling.k8s.io/group-template-name": "workers"}
    parent = {
        "apiVersion": "scheduling.k8s.io/v1beta1",
        "kind": "Workload",
        "metadata": {"name": "t-wl", "uid": "wl-1"},
        "spec": {
            "controllerRef": {"apiGroup": "x.io", "kind": "Trainer", "name": "t"},
            "podGroupTemplates": [
                {"name": "driver", "schedulingPolicy": {"basic": {}}},
                {"name": "workers", "schedulingPolicy": {"gang": {"minCount": 2}}},
            ],
        },
    }
    cluster, pods = round_one(parent, owned)
    assert list(cluster.groups.workloads) == [("default", "t-wl")]  # the parent's, nothing new
    (pod_group,) = cluster.groups.pod_groups.values()
    assert pod_group.metadata.name == pod_group_name("t-wl", "workers")
    assert [(r.kind, r.name) for r in pod_group.metadata.owner_references] == [("Job", "train")]
    gang = pod_group.spec.scheduling_policy.gang
    assert gang is not None and gang.min_count == 2  # the template's, not the Job's parallelism
    assert {p.spec.scheduling_group.pod_group_name for p in pods if p.spec.scheduling_group} == {
        pod_group.metadata.name
    }


def test_a_delegated_job_without_its_owners_workload_waits_with_plain_pods() -> None:
    owned = gang_job()
    owned["metadata"]["ownerReferences"] = [
        {"apiVersion": "x.io/v1", "kind": "Trainer", "name": "t", "uid": "t-1", "controller": True}
    ]
    owned["metadata"]["annotations"] = {"scheduling.k8s.io/group-template-name": "workers"}
    cluster, pods = round_one(owned)
    assert not cluster.groups.pod_groups and all(p.spec.scheduling_group is None for p in pods)


# --------------------------------------------------------------------------- new Jobs only


def _started(**status: Any) -> Obj:
    return {**gang_job(), "status": status}


@pytest.mark.parametrize(
    "started",
    [
        _started(startTime="2026-01-01T00:00:00Z"),
        _started(succeeded=1),
        _started(failed=1),
        _started(conditions=[{"type": "Suspended", "status": "False"}]),
    ],
)
def test_a_job_that_has_started_gets_no_new_objects(started: Obj) -> None:
    cluster, pods = round_one(started)
    assert not cluster.groups.workloads and not cluster.groups.pod_groups
    assert pods and all(p.spec.scheduling_group is None for p in pods)


def test_a_job_with_pods_already_gets_no_new_objects() -> None:
    owner = {"apiVersion": "batch/v1", "kind": "Job", "name": "train", "uid": JOB_UID, "controller": True}
    running = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "train-a", "ownerReferences": [owner]},
        "spec": {"nodeName": "n1", "containers": [{"name": "c", "image": "x"}]},
    }
    cluster, pods = round_one(node("n1"), running, gang_job())
    assert not cluster.groups.workloads and len(pods) == 2
    assert all(p.spec.scheduling_group is None for p in pods)


def test_a_started_job_reuses_the_objects_it_controls() -> None:
    fresh, _ = round_one(gang_job())
    workload, pod_group = only(fresh)
    objects = [as_doc(workload), as_doc(pod_group)]
    cluster, pods = round_one(*objects, _started(startTime="2026-01-01T00:00:00Z"))
    assert only(cluster)[1].metadata.name == pod_group.metadata.name
    assert {p.spec.scheduling_group.pod_group_name for p in pods if p.spec.scheduling_group} == {
        pod_group.metadata.name
    }


def test_objects_controlled_by_another_job_of_the_name_are_not_reused() -> None:
    fresh, _ = round_one(gang_job())
    workload, _ = only(fresh)
    other = as_doc(workload)
    other["metadata"]["ownerReferences"][0]["uid"] = "someone-else"
    other["metadata"]["name"] = "train-before"
    cluster, _ = round_one(other, gang_job())
    assert len(cluster.groups.workloads) == 2  # the Job made its own


def test_a_workload_name_in_use_fails_the_sync_and_no_pod_is_made() -> None:
    fresh, _ = round_one(gang_job())
    workload, _ = only(fresh)
    other = as_doc(workload)
    other["metadata"]["ownerReferences"][0]["uid"] = "someone-else"
    cluster, made = controllers(other, gang_job())
    assert made.reconcile().created == [] and not cluster.groups.pod_groups
    status = made.status_of("Job", "default", "train")
    assert status is not None and status.waiting_for is not None
    assert f'workloads.scheduling.k8s.io "{workload.metadata.name}" already exists' in status.waiting_for


def test_a_suspended_job_gets_its_objects_at_once_and_its_pods_join_when_resumed() -> None:
    cluster, made = controllers(gang_job(suspend=True))
    assert made.reconcile().created == []
    _, pod_group = only(cluster)
    resumed = load_documents(msgspec.json.encode(gang_job()).decode(), "j.json")[0]
    made.apply(resumed)  # type: ignore[arg-type]
    pods = made.reconcile().created
    assert len(pods) == 3 and len(cluster.groups.pod_groups) == 1
    assert {p.spec.scheduling_group.pod_group_name for p in pods if p.spec.scheduling_group} == {
        pod_group.metadata.name
    }


# --------------------------------------------------------------------------- over time


def scaled(job_doc: Obj, pods: int) -> MemoryCluster:
    """The cluster after the Job's first round, a scale to `pods`, and a second round."""
    cluster, made = controllers(job_doc)
    made.reconcile()
    controller = made.find("Job", "default", "train")
    assert controller is not None
    controller.scale(pods)
    made.reconcile()
    return cluster


def test_a_gangs_min_count_follows_the_jobs_parallelism() -> None:
    workload, pod_group = only(scaled(gang_job(parallelism=3), 5))
    gang = workload.spec.pod_group_templates[0].scheduling_policy.gang
    assert gang is not None and gang.min_count == 5
    assert pod_group.spec.scheduling_policy.gang == gang


def test_a_basic_groups_policy_stays_when_the_job_scales() -> None:
    _, pod_group = only(scaled(job("train", parallelism=2), 4))
    policy = pod_group.spec.scheduling_policy
    assert policy.basic is not None and policy.gang is None


def test_deleting_the_job_deletes_its_workload_and_pod_group() -> None:
    cluster, made = controllers(gang_job())
    made.reconcile()
    made.remove("Job", "default", "train")
    assert not cluster.groups.workloads and not cluster.groups.pod_groups


# --------------------------------------------------------------------------- end to end


def _simulate(*docs: Obj, gates: list[str]) -> Any:
    gate_set = parse_feature_gates(gates)
    registry = default_registry(features=gate_set)
    return simulate(loaded(*docs), default_config(registry, gate_set), registry)


def test_a_gang_job_is_placed_all_or_nothing_in_one_rack() -> None:
    racks = [node(f"n{i}", cpu="2", labels={"rack": f"r{i % 2}"}) for i in range(4)]
    fits = gang_job(
        parallelism=4,
        scheduling={
            "schedulingPolicy": {"gang": {}},
            "schedulingConstraints": {"topology": [{"key": "rack"}]},
        },
    )
    report = _simulate(*racks, fits, gates=GATES)
    (group,) = report.pod_groups
    assert group.result == "Scheduled" and group.min_count == 4 and group.pods == 4
    bound = {p.node for p in report.pods}
    assert len({f"r{int(n[1:]) % 2}" for n in bound if n}) == 1


def test_a_gang_job_too_big_for_the_cluster_binds_nothing() -> None:
    report = _simulate(node("n1", cpu="2"), node("n2", cpu="2"), gang_job(parallelism=5), gates=GATES)
    (group,) = report.pod_groups
    assert group.result == "Unschedulable"
    assert "minCount (5) cannot be satisfied" in (group.message or "")
    assert all(p.node is None for p in report.pods)
    without = _simulate(node("n1", cpu="2"), node("n2", cpu="2"), gang_job(parallelism=5), gates=[])
    assert sum(1 for p in without.pods if p.node) == 4 and not without.pod_groups


def test_a_replayed_gang_job_is_created_with_its_group() -> None:
    events = [
        {"at": 0, "create": node("n1", cpu="2")},
        {"at": 0, "create": node("n2", cpu="2")},
        {"at": 10, "create": gang_job(parallelism=4)},
    ]
    doc = {"apiVersion": API_VERSION, "kind": "Scenario", "spec": {"until": 60, "events": events}}
    scenario = parse_scenario(msgspec.json.encode(doc).decode(), "s.json")
    gate_set = parse_feature_gates(GATES)
    registry = default_registry(features=gate_set)
    report = replay(scenario, default_config(registry, gate_set), registry, initial=LoadedObjects())
    pods = [p for p in report.pods if p.name.startswith("train-")]
    assert len(pods) == 4 and all(p.bound_at == 10.0 for p in pods)


# --------------------------------------------------------------------------- the API server's checks


@pytest.mark.parametrize(
    ("min_count", "parallelism", "error"),
    [
        (3, 2, "spec.scheduling.schedulingPolicy.gang.minCount: must not be greater than parallelism (2)"),
        (0, 2, "spec.scheduling.schedulingPolicy.gang.minCount: must be greater than or equal to 1"),
    ],
)
def test_a_gang_min_count_the_api_server_refuses_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], min_count: int, parallelism: int, error: str
) -> None:
    path = write_yaml(
        tmp_path / "bad.yaml", node("n"), gang_job(parallelism=parallelism, min_count=min_count)
    )
    code, out, err = run_cli(capsys, "simulate", str(path))
    assert code == 2 and out == ""
    assert err.startswith(f"kubesched: {path}: document 2: {error}"), err


def test_the_gate_is_followed_not_logged_as_ignored() -> None:
    gates = parse_feature_gates(GATES)
    gates.refuse_unimplemented()
    assert gates.enabled("WorkloadWithJob") and gates.ignored_notice() == ""


def test_a_jobs_group_claim_template_becomes_a_claim_before_its_pods() -> None:
    """DRAWorkloadResourceClaims on: the resourceclaim controller makes the PodGroup's template claim."""
    spec = job(
        "train",
        parallelism=2,
        scheduling={"resourceClaims": [{"name": "fabric", "resourceClaimTemplateName": "nvlink"}]},
    )
    template = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaimTemplate",
        "metadata": {"name": "nvlink"},
        "spec": {"spec": {"devices": {"requests": [{"name": "r", "exactly": {"deviceClassName": "nv"}}]}}},
    }
    gates = parse_feature_gates([*GATES, "DRAWorkloadResourceClaims=true"])
    cluster = MemoryCluster(loaded(template, spec), group_claims=True)
    WorkloadControllers(cluster, gates=gates).reconcile()
    _, pod_group = only(cluster)
    (status,) = pod_group.status.resource_claim_statuses
    assert status.name == "fabric" and status.resource_claim_name
    assert [c.metadata.name for c in cluster.claims.all()] == [status.resource_claim_name]


def test_explain_of_a_job_with_the_gate_explains_the_pod_group_its_controller_makes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cluster = write_yaml(tmp_path / "cluster.yaml", node("n1", cpu="2"), node("n2", cpu="2"))
    manifest = write_yaml(tmp_path / "job.yaml", gang_job(parallelism=5))
    args = ["explain", "-f", str(manifest), "--snapshot", str(cluster), "-o", "json"]
    code, out, _ = run_cli(capsys, *args, "--feature-gates", GATES[0])
    report = json.loads(out)
    workload = workload_name("train", JOB_UID)
    assert code == 0 and report["podGroup"] == f"default/{pod_group_name(workload, 'train-pgt-0')}"
    assert report["verdict"] == "Unschedulable" and len(report["members"]) == 5
    assert "minCount (5) cannot be satisfied: 4 scheduled" in report["message"]
    code, out, _ = run_cli(capsys, *args, "--feature-gates", "GenericWorkload=true")
    assert code == 0 and "podGroup" not in json.loads(out)  # without the gate: one pod, on its own

"""Workloads in a scenario timeline behave as their controllers would, in virtual time.

Each test replays a small timeline and pins one controller behaviour to exact times and pod
names: pods created at the workload's create, scaling (with the ReplicaSet controller's deletion
order), rollouts, StatefulSet ordinals, DaemonSets following nodes, deletes, Jobs running to their
completions, and pods recreated after evictions.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import msgspec
import pytest
from tests.unit.simulate.simulate_helpers import Obj, node, run_cli, taint, write_yaml
from tests.unit.simulate.test_workloads import daemon_set, deployment, job, loaded, stateful_set

from kubesched.api.loader import LoadedObjects, load_documents
from kubesched.api.meta import ObjectMeta
from kubesched.api.objects import Pod, PodSpec
from kubesched.cluster.memory import MemoryCluster
from kubesched.config import default_config
from kubesched.errors import InputError
from kubesched.plugins import default_registry
from kubesched.simulate.replay.model import ReplayPod, ReplayReport
from kubesched.simulate.replay.run import replay
from kubesched.simulate.replay.workloads import ROUNDS_PER_OBJECT, TimelineControllers
from kubesched.simulate.scenario import API_VERSION, parse_scenario
from kubesched.simulate.snapshot.run import simulate
from kubesched.simulate.workloads.context import PodChanges, PodTimes
from kubesched.simulate.workloads.ranking import DELETION_COST, deletion_order


def replica_set(name: str, replicas: int, cpu: str = "1", **meta: Any) -> Obj:
    labels = {"app": name}
    container = {"name": "c", "image": "x", "resources": {"requests": {"cpu": cpu}}}
    return {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {"name": name, **meta},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": labels},
            "template": {"metadata": {"labels": labels}, "spec": {"containers": [container]}},
        },
    }


def replication_controller(name: str, replicas: int) -> Obj:
    rc = replica_set(name, replicas)
    spec = {**rc["spec"], "selector": {"app": name}}
    return {**rc, "apiVersion": "v1", "kind": "ReplicationController", "spec": spec}


def pod(name: str, cpu: str = "1", priority: int = 0) -> Obj:
    container = {"name": "c", "image": "x", "resources": {"requests": {"cpu": cpu}}}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {"containers": [container], "priority": priority},
    }


def at(t: float, action: str, body: Obj, **extra: Any) -> Obj:
    return {"at": t, action: body, **extra}


def run(*events: Obj, until: float = 600, snapshot: list[Obj] | None = None) -> ReplayReport:
    doc = {"apiVersion": API_VERSION, "kind": "Scenario", "spec": {"until": until, "events": list(events)}}
    scenario = parse_scenario(msgspec.json.encode(doc).decode(), "s.json")
    registry = default_registry()
    initial = LoadedObjects()
    for obj in load_documents(msgspec.json.encode({"kind": "List", "items": snapshot or []}).decode(), "in"):
        initial.add(obj)
    return replay(scenario, default_config(registry), registry, initial=initial)


def of(report: ReplayReport, prefix: str) -> list[ReplayPod]:
    return [p for p in report.pods if p.name.startswith(prefix)]


def alive(report: ReplayReport, prefix: str) -> list[str]:
    return sorted(p.name for p in of(report, prefix) if p.ended is None)


def scaled(obj: Obj, replicas: int) -> Obj:
    return {**obj, "spec": {**obj["spec"], "replicas": replicas}}


# --------------------------------------------------------------------------- create


def test_a_deployment_created_at_t_gets_the_pods_simulate_gives_it_at_t() -> None:
    web = deployment("web", replicas=3)
    report = run(at(0, "create", node("n1")), at(42, "create", web))
    pods = of(report, "web-")
    registry = default_registry()
    snapshot = LoadedObjects()
    for obj in load_documents(
        msgspec.json.encode({"kind": "List", "items": [node("n1"), web]}).decode(), "x"
    ):
        snapshot.add(obj)
    expected = simulate(snapshot, default_config(registry), registry)
    # Same names (same seed), labels and owners as the snapshot path, created and bound at 42 s.
    assert sorted(p.name for p in pods) == sorted(p.name for p in expected.pods)
    assert [(p.created_at, p.bound_at, p.result) for p in pods] == [(42.0, 42.0, "Scheduled")] * 3
    assert all(re.fullmatch(r"web-[a-z0-9]+-[a-z0-9]{5}", p.name) for p in pods)


def test_a_daemon_set_pins_one_pod_per_node_with_match_fields() -> None:
    report = run(
        at(0, "create", node("n1")), at(0, "create", node("n2")), at(5, "create", daemon_set("agent"))
    )
    pods = of(report, "agent-")
    assert sorted(p.node or "" for p in pods) == ["n1", "n2"]
    assert {p.bound_at for p in pods} == {5.0}


# --------------------------------------------------------------------------- scaling


@pytest.mark.parametrize(
    ("workload", "prefix"),
    [
        (replica_set("rs", 3), "rs-"),
        (replication_controller("rc", 3), "rc-"),
        (deployment("dep", replicas=3, cpu="1"), "dep-"),
    ],
)
def test_scaling_up_and_down_over_time(workload: Obj, prefix: str) -> None:
    report = run(
        at(0, "create", node("n1", cpu="8")),
        at(10, "create", workload),
        at(20, "update", scaled(workload, 5)),
        at(30, "update", scaled(workload, 2)),
    )
    pods = of(report, prefix)
    assert sorted(p.created_at for p in pods) == [10.0] * 3 + [20.0] * 2
    # Scaled down at 30 s: the two newest (created at 20 s) and one of the oldest go, as Deleted.
    ended = sorted((p.created_at, p.ended_at, p.ended) for p in pods if p.ended)
    assert ended == [(10.0, 30.0, "Deleted"), (20.0, 30.0, "Deleted"), (20.0, 30.0, "Deleted")]
    assert report.summary.evictions == {"Preempted": 0, "NodeDeleted": 0}


@pytest.mark.parametrize(
    ("nodes", "scale_to", "deleted_first"),
    [
        # Unscheduled before scheduled: the pod that did not fit goes, the running ones stay.
        ([node("n1", cpu="2")], 2, "the pending pod"),
        # Doubled up first: a pod sharing its node with another of the set goes before a lone one.
        ([node("n1", cpu="2"), node("n2", cpu="1")], 2, "a pod on n1"),
    ],
)
def test_scale_down_deletes_as_the_replica_set_controller_ranks(
    nodes: list[Obj], scale_to: int, deleted_first: str
) -> None:
    rs = replica_set("rs", 3)
    report = run(
        *[at(0, "create", n) for n in nodes], at(0, "create", rs), at(10, "update", scaled(rs, scale_to))
    )
    gone = [p for p in of(report, "rs-") if p.ended == "Deleted"]
    assert len(gone) == 1
    if deleted_first == "the pending pod":
        assert gone[0].bound_at is None
        assert all(p.bound_at == 0.0 for p in of(report, "rs-") if p.ended is None)
    else:
        assert gone[0].node == "n1"
        assert sorted(p.node or "" for p in of(report, "rs-") if p.ended is None) == ["n1", "n2"]


def test_scale_down_prefers_the_newer_pod_on_a_log_scale_of_age() -> None:
    rs = replica_set("rs", 1)
    report = run(
        at(0, "create", node("n1", cpu="8")),
        at(0, "create", rs),
        at(100, "update", scaled(rs, 2)),
        at(200, "update", scaled(rs, 1)),
    )
    # Ready for 100 s (log2 bucket 36) against 200 s (bucket 37): the newer one goes.
    assert [(p.created_at, p.ended) for p in of(report, "rs-")] == [(0.0, None), (100.0, "Deleted")]


def test_a_stateful_set_scales_in_ordinal_order() -> None:
    sts = stateful_set("db", replicas=2)
    report = run(
        at(0, "create", node("n1")),
        at(0, "create", sts),
        at(10, "update", scaled(sts, 4)),
        at(20, "update", scaled(sts, 1)),
    )
    lives = {p.name: (p.created_at, p.ended_at) for p in of(report, "db-")}
    assert lives == {"db-0": (0.0, None), "db-1": (0.0, 20.0), "db-2": (10.0, 20.0), "db-3": (10.0, 20.0)}
    assert alive(report, "db-") == ["db-0"]


# --------------------------------------------------------------------------- rollouts


@pytest.mark.parametrize(
    ("strategy", "old_left", "new_bound"),
    [
        # 3 CPUs hold 3 pods: maxSurge 1 / maxUnavailable 0 cannot make room, the rollout stops.
        ({"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1, "maxUnavailable": 0}}, 3, 0),
        # maxUnavailable 1 lets one old pod go at a time: the rollout completes at the same instant.
        ({"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 0, "maxUnavailable": 1}}, 0, 3),
        # Recreate: every old pod goes, then the new ones come.
        ({"type": "Recreate"}, 0, 3),
    ],
)
def test_a_template_change_rolls_out_a_new_replica_set(strategy: Obj, old_left: int, new_bound: int) -> None:
    web = deployment("web", replicas=3, cpu="1", strategy=strategy)
    changed = msgspec.json.decode(msgspec.json.encode(web))
    changed["spec"]["template"]["spec"]["containers"][0]["image"] = "web:2"
    report = run(at(0, "create", node("n1", cpu="3")), at(0, "create", web), at(60, "update", changed))
    # Pods are named <replica set>-<random>, the ReplicaSet <deployment>-<pod-template-hash>.
    replica_sets = {p.name.rsplit("-", 1)[0] for p in of(report, "web-")}
    assert len(replica_sets) == 2  # the new template hashes differently
    first = next(p.name.rsplit("-", 1)[0] for p in of(report, "web-") if p.created_at == 0.0)
    old = [p for p in of(report, "web-") if p.name.startswith(f"{first}-")]
    new = [p for p in of(report, "web-") if not p.name.startswith(f"{first}-")]
    assert sum(1 for p in old if p.ended is None) == old_left
    assert sum(1 for p in new if p.bound_at == 60.0 and p.ended is None) == new_bound
    assert all(p.ended in (None, "Deleted") for p in old)


# --------------------------------------------------------------------------- nodes, deletes, evictions


def test_daemon_pods_follow_nodes_that_join_and_leave() -> None:
    report = run(
        at(0, "create", node("n1")),
        at(0, "create", daemon_set("agent")),
        at(30, "create", node("n2")),
        at(60, "delete", {"kind": "Node", "name": "n1"}),
    )
    lives = sorted((p.node, p.created_at, p.ended_at, p.ended) for p in of(report, "agent-"))
    assert lives == [("n1", 0.0, 60.0, "NodeDeleted"), ("n2", 30.0, None, None)]
    assert report.summary.recreated == 0  # a DaemonSet does not replace the pod of a node that is gone


def test_deleting_a_workload_deletes_its_pods() -> None:
    report = run(
        at(0, "create", node("n1")),
        at(0, "create", deployment("web", replicas=2)),
        at(50, "delete", {"kind": "Deployment", "name": "web"}),
        at(60, "delete", {"kind": "Job", "name": "never-created"}),
    )
    assert [(p.ended_at, p.ended) for p in of(report, "web-")] == [(50.0, "Deleted")] * 2
    assert report.summary.deleted == 2
    assert report.summary.skipped_events == {"delete of a Job that does not exist": 1}


def test_pods_lost_with_their_node_are_recreated_elsewhere_and_counted() -> None:
    report = run(
        at(0, "create", node("n1", cpu="2")),
        at(0, "create", replica_set("rs", 2)),
        at(0, "create", stateful_set("db", replicas=1, cpu="1")),
        at(10, "create", node("n2", cpu="4")),
        at(20, "delete", {"kind": "Node", "name": "n1"}),
    )
    lost = [p for p in report.pods if p.ended == "NodeDeleted"]
    assert len(lost) == 2  # n1 held two of the three pods (2 CPUs)
    replacements = [p for p in report.pods if p.created_at == 20.0]
    assert len(replacements) == 2 and all(p.node == "n2" for p in replacements)
    assert report.summary.recreated == 2


def test_preempted_pods_are_recreated_by_their_controller() -> None:
    report = run(
        at(0, "create", node("n1", cpu="2")),
        at(0, "create", replica_set("rs", 2)),
        at(10, "create", pod("urgent", priority=1000)),
    )
    victims = [p for p in of(report, "rs-") if p.ended == "Preempted"]
    assert len(victims) == 1
    replacement = [p for p in of(report, "rs-") if p.created_at == 10.0]
    assert len(replacement) == 1 and replacement[0].bound_at is None  # no room left: pending
    assert report.summary.recreated == 1


# --------------------------------------------------------------------------- Jobs


@pytest.mark.parametrize(
    ("spec", "starts"),
    [
        ({"parallelism": 2, "completions": 5}, [0.0, 0.0, 60.0, 60.0, 120.0]),
        ({"parallelism": 3, "completions": 2}, [0.0, 0.0]),
        ({"parallelism": 2, "completions": 3, "completionMode": "Indexed"}, [0.0, 0.0, 60.0]),
        ({"parallelism": 1}, [0.0]),  # no completions: one success ends the Job
    ],
)
def test_a_job_runs_its_pods_for_run_for_until_its_completions(spec: Obj, starts: list[float]) -> None:
    report = run(at(0, "create", node("n1")), at(0, "create", job("batch", **spec), runFor="1m"))
    pods = of(report, "batch-")
    assert sorted(p.created_at for p in pods) == starts
    assert all(p.ended == "Completed" and p.ended_at == p.bound_at + 60 for p in pods)  # type: ignore[operator]
    assert report.summary.completed == len(starts)


def test_lowering_a_jobs_parallelism_deletes_the_surplus() -> None:
    batch = job("batch", parallelism=3, completions=9)
    lowered = {**batch, "spec": {**batch["spec"], "parallelism": 1}}
    report = run(at(0, "create", node("n1")), at(0, "create", batch, runFor="1m"), at(30, "update", lowered))
    assert sorted((p.created_at, p.ended) for p in of(report, "batch-") if p.created_at == 0.0) == [
        (0.0, "Completed"),
        (0.0, "Deleted"),
        (0.0, "Deleted"),
    ]


def test_a_job_without_run_for_keeps_its_pods_running() -> None:
    report = run(at(0, "create", node("n1")), at(0, "create", job("batch", parallelism=2, completions=4)))
    assert [(p.created_at, p.ended) for p in of(report, "batch-")] == [(0.0, None)] * 2


def test_pods_of_a_snapshot_workload_count_and_the_replay_runs_its_controller() -> None:
    rs = replica_set("rs", 2)
    report = run(at(0, "create", node("n1")), at(10, "update", scaled(rs, 3)), snapshot=[rs])
    assert sorted(p.created_at for p in of(report, "rs-")) == [0.0, 0.0, 10.0]


def test_a_daemon_pod_goes_when_its_node_stops_matching_but_not_for_a_no_schedule_taint() -> None:
    agent = daemon_set("agent", nodeSelector={"role": "edge"})
    edge = node("n1", labels={"role": "edge"})
    report = run(
        at(0, "create", edge),
        at(0, "create", agent),
        at(10, "update", node("n1", labels={"role": "edge"}, taints=[taint("k", "NoSchedule")])),
        at(20, "update", node("n1", labels={"role": "core"})),
    )
    assert [(p.created_at, p.ended_at, p.ended) for p in of(report, "agent-")] == [(0.0, 20.0, "Deleted")]


# --------------------------------------------------------------------------- the deletion ranking


def ranked_pod(name: str, node_name: str = "", cost: str | None = None) -> Pod:
    annotations = {DELETION_COST: cost} if cost is not None else {}
    meta = ObjectMeta(name=name, namespace="default", uid=name, annotations=annotations)
    return Pod(metadata=meta, spec=PodSpec(node_name=node_name))


_TIMES = {
    "new": PodTimes(created=990.0, ready=995.0),
    "old": PodTimes(created=0.0, ready=1.0),
    "input": PodTimes(created=None, ready=None),
}


@pytest.mark.parametrize(
    ("pods", "first"),
    [
        ([ranked_pod("bound", "n1"), ranked_pod("pending")], "pending"),  # rule 1
        ([ranked_pod("dear", "n1", cost="10"), ranked_pod("cheap", "n1", cost="-5")], "cheap"),  # rule 4
        ([ranked_pod("bad", "n1", cost="x"), ranked_pod("dear", "n1", cost="1")], "bad"),  # invalid = 0
        ([ranked_pod("lone", "n2"), ranked_pod("doubled", "n1"), ranked_pod("other", "n1")], "doubled"),  # 5
        ([ranked_pod("old", "n1"), ranked_pod("new", "n2")], "new"),  # rules 6 and 8: newer first
        ([ranked_pod("input", "n1"), ranked_pod("old", "n2")], "old"),  # the input's pods are the oldest
    ],
)
def test_the_deletion_ranking_rule_by_rule(pods: list[Pod], first: str) -> None:
    def times(p: Pod) -> PodTimes:
        return _TIMES.get(p.metadata.name, PodTimes(500.0, 500.0))

    assert deletion_order(pods, pods, times, now=1000.0)[0].metadata.name == first


def with_image(obj: Obj, image: str, cpu: str | None = None, **spec: Any) -> Obj:
    changed: Obj = msgspec.json.decode(msgspec.json.encode(obj))
    container = changed["spec"]["template"]["spec"]["containers"][0]
    container["image"] = image
    if cpu is not None:
        container["resources"] = {"requests": {"cpu": cpu}}
    changed["spec"].update(spec)
    return changed


@pytest.mark.parametrize(
    ("strategy", "replaced"),
    [
        ({}, ["db-0", "db-1", "db-2"]),  # RollingUpdate: every ordinal, highest first
        ({"type": "RollingUpdate", "rollingUpdate": {"partition": 2}}, ["db-2"]),
        ({"type": "OnDelete"}, []),
    ],
)
def test_a_stateful_set_template_change_rolls_out_from_the_highest_ordinal(
    strategy: Obj, replaced: list[str]
) -> None:
    sts = stateful_set("db", replicas=3)
    report = run(
        at(0, "create", node("n1")),
        at(0, "create", sts),
        at(30, "update", with_image(sts, "db:2", updateStrategy=strategy)),
    )
    # The replaced ordinals end at 30 s (Deleted) and come back at 30 s with the new revision.
    gone = [p.name for p in of(report, "db-") if p.ended == "Deleted"]
    assert sorted(gone) == replaced
    again = sorted(p.name for p in of(report, "db-") if p.created_at == 30.0 and p.bound_at == 30.0)
    assert again == replaced
    assert alive(report, "db-") == ["db-0", "db-1", "db-2"]


@pytest.mark.parametrize(
    ("strategy", "rolled"),
    [
        ({}, 3),  # RollingUpdate, maxUnavailable 1: one node at a time, all at the same instant
        ({"type": "OnDelete"}, 0),
    ],
)
def test_a_daemon_set_template_change_rolls_out_node_by_node(strategy: Obj, rolled: int) -> None:
    agent = daemon_set("agent")
    report = run(
        *[at(0, "create", node(n)) for n in ("n1", "n2", "n3")],
        at(0, "create", agent),
        at(30, "update", with_image(agent, "agent:2", updateStrategy=strategy)),
    )
    assert sum(1 for p in of(report, "agent-") if p.ended == "Deleted" and p.ended_at == 30.0) == rolled
    assert sum(1 for p in of(report, "agent-") if p.created_at == 30.0) == rolled
    assert sorted(p.node or "" for p in of(report, "agent-") if p.ended is None) == ["n1", "n2", "n3"]


def test_a_daemon_set_rollout_never_has_more_than_max_unavailable_nodes_without_a_pod() -> None:
    # n1 is full: its new daemon pod cannot be bound, so the rollout stops after n1 (maxUnavailable 1).
    agent = daemon_set("agent", cpu="1")
    report = run(
        at(0, "create", node("n1", cpu="2")),
        at(0, "create", node("n2", cpu="2")),
        at(0, "create", agent),
        at(
            10,
            "create",
            {**pod("filler", cpu="1"), "spec": {**pod("filler", cpu="1")["spec"], "nodeName": "n1"}},
        ),
        at(30, "update", with_image(agent, "agent:2", cpu="2")),
    )
    ended = sorted((p.node, p.ended) for p in of(report, "agent-") if p.ended)
    assert ended == [("n1", "Deleted")]
    pending = [p for p in of(report, "agent-") if p.bound_at is None]
    assert len(pending) == 1


def test_a_workload_pod_deleted_by_the_timeline_is_created_again_by_its_controller() -> None:
    report = run(
        at(0, "create", node("n1")),
        at(0, "create", stateful_set("db", replicas=2)),
        at(40, "delete", {"kind": "Pod", "name": "db-1"}),
    )
    assert [(p.name, p.created_at, p.ended) for p in of(report, "db-1")] == [
        ("db-1", 0.0, "Deleted"),
        ("db-1", 40.0, None),
    ]
    assert report.summary.recreated == 0  # only evictions count as recreations


def test_a_create_of_an_existing_workload_or_an_update_of_a_missing_one_applies_and_is_counted() -> None:
    rs = replica_set("rs", 1)
    report = run(
        at(0, "create", node("n1", cpu="8")),
        at(0, "update", rs),
        at(10, "create", scaled(rs, 2)),
    )
    assert sorted(p.created_at for p in of(report, "rs-")) == [0.0, 10.0]
    assert report.summary.skipped_events == {
        "create of a ReplicaSet that exists (applied as an update)": 1,
        "update of a ReplicaSet that does not exist (applied as a create)": 1,
    }


def test_a_cron_job_among_the_snapshot_paths_is_refused_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cron = {
        "apiVersion": "batch/v1",
        "kind": "CronJob",
        "metadata": {"name": "nightly"},
        "spec": {"schedule": "0 2 * * *", "jobTemplate": {"spec": job("j")["spec"]}},
    }
    snapshot = write_yaml(tmp_path / "snap.yaml", node("n1"), cron)
    scenario = tmp_path / "s.json"
    scenario.write_bytes(
        msgspec.json.encode({"apiVersion": API_VERSION, "kind": "Scenario", "spec": {"events": []}})
    )
    code, out, err = run_cli(capsys, "simulate", "--scenario", str(scenario), str(snapshot))
    assert (code, out) == (2, "")
    assert err.startswith("kubesched: CronJob nightly: not replayed"), err
    assert len(err.strip().splitlines()) == 1


def test_the_report_says_where_each_workload_stands_at_the_end() -> None:
    web = deployment(
        "web", replicas=3, cpu="1", strategy={"rollingUpdate": {"maxSurge": 1, "maxUnavailable": 0}}
    )
    report = run(
        at(0, "create", node("n1", cpu="3")),
        at(0, "create", web),
        at(60, "update", with_image(web, "web:2")),
    )
    (result,) = report.workloads
    assert (result.kind, result.name, result.desired, result.scheduled, result.pending, result.old) == (
        "Deployment",
        "web",
        3,
        0,
        1,
        3,
    )
    assert not result.complete
    assert result.message is not None and "Insufficient cpu" in result.message


def test_pods_that_name_a_workload_as_their_controller_are_adopted_not_created_twice() -> None:
    rs = replica_set("rs", 2, uid="rs-uid")
    owned = pod("rs-recorded")
    owned["metadata"]["ownerReferences"] = [
        {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "rs", "uid": "rs-uid", "controller": True}
    ]
    owned["metadata"]["labels"] = {"app": "rs"}
    report = run(at(0, "create", node("n1")), at(0, "create", owned), snapshot=[rs])
    assert sorted(p.name.startswith("rs-recorded") for p in of(report, "rs-")) == [False, True]
    assert all(p.ended is None for p in of(report, "rs-"))


def test_a_deployments_replica_set_is_one_controller_whether_given_before_or_updated_after() -> None:
    # The Deployment's own ReplicaSet, given first with its ownerReference, is adopted as its
    # revision; a later update of it is applied to that one controller (no second one fighting it).
    web = deployment("web", replicas=2, cpu="1")
    made = run(at(0, "create", node("n1")), at(0, "create", web))
    rs_name = made.pods[0].name.rsplit("-", 1)[0]
    rs = replica_set(
        rs_name, 2, ownerReferences=[{"kind": "Deployment", "name": "web", "uid": "u", "controller": True}]
    )
    rs["spec"]["template"] = deployment("web", cpu="1")["spec"]["template"]
    rs["spec"]["selector"] = {"matchLabels": {"app": "web"}}
    report = run(
        at(0, "create", node("n1")),
        at(0, "create", rs),
        at(0, "create", web),
        at(10, "delete", {"kind": "ReplicaSet", "name": rs_name}),
        at(20, "update", scaled(rs, 5)),
    )
    assert sorted(p.created_at for p in of(report, "web-")) == [0.0, 0.0, 10.0, 10.0]
    assert sum(1 for p in of(report, "web-") if p.ended is None) == 2  # the Deployment keeps 2
    assert report.summary.skipped_events == {}


@pytest.mark.parametrize(
    ("backoff_limit", "job_pods", "failed"),
    [
        (1, 2, True),  # the second failure exceeds backoffLimit 1: the Job fails, no third pod
        (3, 4, False),  # three failures are within 3: the fourth pod runs
    ],
)
def test_evicted_job_pods_count_against_its_backoff_limit(
    backoff_limit: int, job_pods: int, failed: bool
) -> None:
    urgent = [{**pod(f"urgent-{i}", cpu="2", priority=1000)} for i in range(3)]
    report = run(
        at(0, "create", node("n1", cpu="2")),
        at(0, "create", job("batch", completions=1, backoffLimit=backoff_limit), runFor="1h"),
        *[at(10 + 20 * i, "create", u, runFor="10s") for i, u in enumerate(urgent)],
        until=300,
    )
    # Each urgent pod preempts the Job's pod (a failure); the Job replaces it until it has failed.
    pods = of(report, "batch-")
    assert len(pods) == job_pods
    assert sum(1 for p in pods if p.ended == "Preempted") == (2 if failed else 3)
    (status,) = report.workloads
    assert status.complete is not failed
    assert (status.message is not None and "the Job failed" in status.message) == failed


def test_controllers_that_never_settle_stop_with_an_input_error_instead_of_hanging() -> None:
    """Every round changing a pod for ever (controllers undoing each other) is bounded per instant."""
    cluster = MemoryCluster(loaded(node("n1", cpu="4"), node("n2", cpu="4")))
    timeline = TimelineControllers(cluster, seed=1, now=lambda: 30.0)
    churn = Pod(metadata=ObjectMeta(name="churn", namespace="default"), spec=PodSpec())
    rounds = 0

    def reconcile() -> PodChanges:
        nonlocal rounds
        rounds += 1
        return PodChanges(deleted=[(churn, "fighting")])  # a change every round, as fighting controllers make

    timeline.controllers.reconcile = reconcile  # type: ignore[method-assign]
    with pytest.raises(InputError, match=r"did not settle at 30s after \d+ rounds"):
        timeline.settle(lambda: None, lambda act: act())
    limit = ROUNDS_PER_OBJECT * 2 + 100  # no pods, two nodes
    assert rounds == limit

"""Workloads become pods as their controllers would make them, and the report says whether they fit.

Pod shapes (names, labels, ownerReferences, the DaemonSet node pin) are checked on the in-memory
cluster after the controllers' first round; scheduling outcomes through `kubesched simulate`.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import msgspec
import pytest
from tests.unit.simulate.simulate_helpers import Obj, node, run_cli, simulate_json, taint, write_yaml

from kubesched.api.controllers import PodTemplateSpec
from kubesched.api.loader import LoadedObjects, load_documents, load_paths
from kubesched.api.objects import Pod
from kubesched.cluster.memory import MemoryCluster
from kubesched.config import default_config
from kubesched.plugins import default_registry
from kubesched.simulate.snapshot.run import simulate
from kubesched.simulate.workloads import WorkloadControllers
from kubesched.simulate.workloads.naming import template_hash

ZONE = "topology.kubernetes.io/zone"
SUFFIX = "[bcdfghjklmnpqrstvwxz2456789]{5}"


def template(app: str, cpu: str = "100m", **spec: Any) -> Obj:
    container: Obj = {"name": "c", "image": f"{app}:1", "resources": {"requests": {"cpu": cpu}}}
    return {"metadata": {"labels": {"app": app}}, "spec": {"containers": [container], **spec}}


def deployment(name: str, replicas: int | None = 3, cpu: str = "100m", **spec: Any) -> Obj:
    body: Obj = {"selector": {"matchLabels": {"app": name}}, "template": template(name, cpu), **spec}
    if replicas is not None:
        body["replicas"] = replicas
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name}, "spec": body}


def stateful_set(name: str, replicas: int = 3, cpu: str = "100m", **spec: Any) -> Obj:
    body: Obj = {
        "replicas": replicas,
        "selector": {"matchLabels": {"app": name}},
        "template": template(name, cpu),
    }
    return {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": {"name": name},
        "spec": {**body, **spec},
    }


def daemon_set(name: str, **pod_spec: Any) -> Obj:
    return {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": name, "namespace": "kube-system"},
        "spec": {"selector": {"matchLabels": {"app": name}}, "template": template(name, **pod_spec)},
    }


def job(name: str, **spec: Any) -> Obj:
    body = {"template": template(name, restartPolicy="Never"), **spec}
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name}, "spec": body}


def three_nodes() -> list[Obj]:
    return [
        node("a1", labels={ZONE: "a"}),
        node("b1", labels={ZONE: "b"}),
        node("gpu", labels={ZONE: "b"}, taints=[taint("dedicated", "NoSchedule", "gpu")]),
    ]


def loaded(*docs: Obj) -> LoadedObjects:
    objects = LoadedObjects()
    for obj in load_documents(msgspec.json.encode({"kind": "List", "items": docs}).decode(), "in.json"):
        objects.add(obj)
    return objects


def first_round(*docs: Obj, seed: int = 0) -> tuple[MemoryCluster, list[Pod]]:
    """The pods the controllers create in their first round, before any scheduling."""
    cluster = MemoryCluster(loaded(*docs))
    changes = WorkloadControllers(cluster, seed=seed).reconcile()
    return cluster, changes.created


# --------------------------------------------------------------------------- pod shapes


def test_deployment_pods_are_named_and_labelled_by_their_replica_set() -> None:
    _, pods = first_round(*three_nodes(), deployment("web", replicas=2))
    assert len(pods) == 2
    hash_ = pods[0].metadata.labels["pod-template-hash"]
    assert re.fullmatch("[bcdfghjklmnpqrstvwxz2456789]{6,10}", hash_)
    for pod in pods:
        assert re.fullmatch(f"web-{hash_}-{SUFFIX}", pod.metadata.name)
        assert pod.metadata.generate_name == f"web-{hash_}-"
        assert pod.metadata.labels == {"app": "web", "pod-template-hash": hash_}
        (ref,) = pod.metadata.owner_references
        assert (ref.api_version, ref.kind, ref.name) == ("apps/v1", "ReplicaSet", f"web-{hash_}")
        assert ref.controller is True and ref.block_owner_deletion is True and ref.uid
        assert pod.metadata.namespace == "default" and pod.metadata.uid  # admission defaults
    assert pods[0].metadata.name != pods[1].metadata.name


def test_the_replica_set_a_deployment_creates_is_listed_for_spreading() -> None:
    cluster, _ = first_round(*three_nodes(), deployment("web", replicas=1))
    (rs,) = cluster.lister("ReplicaSet")
    assert rs.metadata.owner_references[0].kind == "Deployment"
    assert rs.spec.selector.match_labels == {
        "app": "web",
        "pod-template-hash": rs.metadata.name.split("-")[1],
    }


def test_names_are_reproducible_per_seed() -> None:
    names = [sorted(p.metadata.name for p in first_round(deployment("web"), seed=s)[1]) for s in (1, 1, 2)]
    assert names[0] == names[1] != names[2]


def test_template_hash_ignores_spelling_and_the_revision_label_but_not_the_image() -> None:
    t = template("web", cpu="0.5")
    base = msgspec.convert(t, PodTemplateSpec)
    spelled = msgspec.convert(template("web", cpu="500m"), PodTemplateSpec)
    labelled = msgspec.convert(
        {**template("web", cpu="500m"), "metadata": {"labels": {"app": "web", "pod-template-hash": "x"}}},
        PodTemplateSpec,
    )
    other = msgspec.convert({**t, "spec": {"containers": [{"name": "c", "image": "web:2"}]}}, PodTemplateSpec)
    assert template_hash(base) == template_hash(spelled) == template_hash(labelled) != template_hash(other)


def test_stateful_set_pods_carry_their_identity_and_claims() -> None:
    claim = {
        "metadata": {"name": "data"},
        "spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": "ssd"},
    }
    cluster, pods = first_round(
        *three_nodes(),
        stateful_set("db", replicas=2, podManagementPolicy="Parallel", volumeClaimTemplates=[claim]),
    )
    assert [p.metadata.name for p in pods] == ["db-0", "db-1"]
    revision = pods[0].metadata.labels["controller-revision-hash"]
    assert re.fullmatch("db-[bcdfghjklmnpqrstvwxz2456789]+", revision)
    for ordinal, pod in enumerate(pods):
        assert pod.metadata.labels == {
            "app": "db",
            "controller-revision-hash": revision,
            "statefulset.kubernetes.io/pod-name": f"db-{ordinal}",
            "apps.kubernetes.io/pod-index": str(ordinal),
        }
        assert pod.metadata.owner_references[0].kind == "StatefulSet"
        (volume,) = pod.spec.volumes
        assert volume.name == "data" and volume.persistent_volume_claim is not None
        assert volume.persistent_volume_claim.claim_name == f"data-db-{ordinal}"
    claims = {c.metadata.name: c for c in cluster.lister("PersistentVolumeClaim")}
    assert set(claims) == {"data-db-0", "data-db-1"}
    assert claims["data-db-0"].metadata.labels == {"app": "db"}
    assert claims["data-db-0"].spec.storage_class_name == "ssd"


def test_ordered_ready_creates_one_ordinal_at_a_time() -> None:
    _, pods = first_round(*three_nodes(), stateful_set("db", replicas=3))
    assert [p.metadata.name for p in pods] == ["db-0"]


def test_daemon_pods_go_to_the_nodes_that_should_run_them_pinned_by_match_fields() -> None:
    nodes = [
        *three_nodes(),
        node("cordoned", unschedulable=True),
        node("pressure", taints=[taint("node.kubernetes.io/memory-pressure", "NoSchedule")]),
        node("windows", labels={"kubernetes.io/os": "windows"}),
    ]
    affinity = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {
                        "matchExpressions": [
                            {"key": "kubernetes.io/os", "operator": "NotIn", "values": ["windows"]}
                        ]
                    }
                ]
            },
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {
                    "weight": 1,
                    "preference": {"matchExpressions": [{"key": ZONE, "operator": "In", "values": ["a"]}]},
                }
            ],
        }
    }
    _, pods = first_round(*nodes, daemon_set("agent", affinity=affinity))
    by_node = {}
    for pod in pods:
        assert re.fullmatch(f"agent-{SUFFIX}", pod.metadata.name)
        assert pod.metadata.namespace == "kube-system"
        assert pod.metadata.owner_references[0].kind == "DaemonSet"
        assert set(pod.metadata.labels) == {"app", "controller-revision-hash", "pod-template-generation"}
        assert pod.metadata.labels["pod-template-generation"] == "1"
        node_affinity = pod.spec.affinity.node_affinity
        (term,) = node_affinity.required_during_scheduling_ignored_during_execution.node_selector_terms
        assert term.match_expressions == []  # replaced by the pin, as upstream does
        (field,) = term.match_fields
        assert (field.key, field.operator) == ("metadata.name", "In")
        by_node[field.values[0]] = pod
        assert len(node_affinity.preferred_during_scheduling_ignored_during_execution) == 1  # kept
        keys = {(t.key, t.effect) for t in pod.spec.tolerations}
        assert ("node.kubernetes.io/unschedulable", "NoSchedule") in keys
        assert ("node.kubernetes.io/not-ready", "NoExecute") in keys
    # not on the tainted node nor the Windows node; on the cordoned and the pressured ones
    assert sorted(by_node) == ["a1", "b1", "cordoned", "pressure"]


def test_host_network_daemon_pods_tolerate_network_unavailable() -> None:
    _, pods = first_round(node("n"), daemon_set("cni", hostNetwork=True))
    assert ("node.kubernetes.io/network-unavailable", "NoSchedule") in {
        (t.key, t.effect) for t in pods[0].spec.tolerations
    }


@pytest.mark.parametrize(
    ("spec", "pods"),
    [
        ({}, 1),
        ({"parallelism": 3}, 3),
        ({"parallelism": 3, "completions": 2}, 2),
        ({"parallelism": 0, "completions": 5}, 0),
        ({"completions": 5}, 1),
        ({"parallelism": 4, "suspend": True}, 0),
    ],
)
def test_a_job_runs_min_of_parallelism_and_completions(spec: Obj, pods: int) -> None:
    _, created = first_round(node("n"), job("batch", **spec))
    assert len(created) == pods
    for pod in created:
        assert re.fullmatch(f"batch-{SUFFIX}", pod.metadata.name)
        uid = pod.metadata.owner_references[0].uid
        assert pod.metadata.labels == {
            "app": "batch",
            "batch.kubernetes.io/controller-uid": uid,
            "batch.kubernetes.io/job-name": "batch",
            "controller-uid": uid,
            "job-name": "batch",
        }


def test_an_indexed_job_names_its_pods_by_index() -> None:
    _, pods = first_round(node("n"), job("train", completionMode="Indexed", completions=5, parallelism=3))
    for index, pod in enumerate(pods):
        assert re.fullmatch(f"train-{index}-{SUFFIX}", pod.metadata.name)
        assert pod.metadata.annotations["batch.kubernetes.io/job-completion-index"] == str(index)
        assert pod.metadata.labels["batch.kubernetes.io/job-completion-index"] == str(index)
    assert len(pods) == 3


def test_a_cron_job_runs_once_through_a_job_named_by_its_minute() -> None:
    running = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "old", "creationTimestamp": "2026-03-01T10:00:30Z"},
        "spec": {"nodeName": "n", "containers": [{"name": "c"}]},
    }
    cron = {
        "apiVersion": "batch/v1",
        "kind": "CronJob",
        "metadata": {"name": "nightly"},
        "spec": {"schedule": "@daily", "jobTemplate": {"spec": {"parallelism": 2, **job("x")["spec"]}}},
    }
    _, pods = first_round(node("n"), running, cron)
    minute = 1772359200 // 60  # 2026-03-01T10:00:00Z
    assert len(pods) == 2
    for pod in pods:
        ref = pod.metadata.owner_references[0]
        assert (ref.kind, ref.name) == ("Job", f"nightly-{minute}")
        assert pod.metadata.labels["job-name"] == f"nightly-{minute}"
    suspended = {**cron, "spec": {**cron["spec"], "suspend": True}}
    assert first_round(node("n"), suspended)[1] == []


def test_a_replication_controller_selects_its_template_labels() -> None:
    rc = {
        "apiVersion": "v1",
        "kind": "ReplicationController",
        "metadata": {"name": "legacy"},
        "spec": {"replicas": 2, "template": template("legacy")},
    }
    _, pods = first_round(node("n"), rc)
    assert len(pods) == 2
    assert all(re.fullmatch(f"legacy-{SUFFIX}", p.metadata.name) for p in pods)
    assert {p.metadata.owner_references[0].api_version for p in pods} == {"v1"}


def test_existing_pods_of_a_replica_set_count_towards_its_replicas() -> None:
    rs = {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {"name": "web-abc"},
        "spec": {"replicas": 3, "selector": {"matchLabels": {"app": "web"}}, "template": template("web")},
    }
    owned = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": "web-abc-1",
            "labels": {"app": "web"},
            "ownerReferences": [
                {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web-abc", "controller": True}
            ],
        },
        "spec": {"nodeName": "n", "containers": [{"name": "c"}]},
    }
    _, pods = first_round(
        node("n"), rs, owned, {**owned, "metadata": {**owned["metadata"], "name": "web-abc-2"}}
    )
    assert len(pods) == 1


# --------------------------------------------------------------------------- does it fit, and where


def workloads(report: Obj) -> dict[str, Obj]:
    return {f"{w['kind']}/{w['name']}": w for w in report["workloads"]}


def test_a_new_deployment_fits_and_the_report_says_where(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write_yaml(tmp_path / "in.yaml", *three_nodes(), deployment("web", replicas=4, cpu="1"))
    report = simulate_json(capsys, str(path))
    web = workloads(report)["Deployment/web"]
    assert web | {"nodes": None} == {
        "kind": "Deployment",
        "namespace": "default",
        "name": "web",
        "desired": 4,
        "scheduled": 4,
        "pending": 0,
        "old": 0,
        "created": 4,
        "deleted": 0,
        "complete": True,
        "nodes": None,
        "zones": {"a": 2, "b": 2},  # the default spreading of a ReplicaSet's pods over zones
        "message": None,
    }
    assert web["nodes"] == {"a1": 2, "b1": 2}
    assert report["summary"]["scheduled"] == 4


def snapshot_with_running_deployment(cpu: str = "500m") -> list[Obj]:
    """Two 4-CPU nodes running Deployment web (3 replicas of 500m), as `kubectl get -o yaml` shows it."""
    old = deployment("web", replicas=3, cpu=cpu)
    old["metadata"]["uid"] = "d-1"
    rs_template = template("web", cpu=cpu)
    rs_template["metadata"]["labels"]["pod-template-hash"] = "5d8f7c9b4"
    rs_template["spec"]["containers"][0]["ports"] = [{"containerPort": 80, "protocol": "TCP"}]
    owner = {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web", "uid": "d-1", "controller": True}
    rs = {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {"name": "web-5d8f7c9b4", "uid": "rs-1", "ownerReferences": [owner]},
        "spec": {
            "replicas": 3,
            "selector": {"matchLabels": {"app": "web", "pod-template-hash": "5d8f7c9b4"}},
            "template": rs_template,
        },
    }
    rs_ref = {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "name": "web-5d8f7c9b4",
        "uid": "rs-1",
        "controller": True,
    }
    pods = [
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": f"web-5d8f7c9b4-p{i}",
                "labels": rs_template["metadata"]["labels"],
                "ownerReferences": [rs_ref],
            },
            "spec": {"nodeName": f"n{i % 2 + 1}", "containers": rs_template["spec"]["containers"]},
        }
        for i in range(3)
    ]
    old["spec"]["template"]["spec"]["containers"][0]["ports"] = [{"containerPort": 80}]
    return [node("n1", labels={ZONE: "a"}), node("n2", labels={ZONE: "b"}), old, rs, *pods]


@pytest.mark.parametrize(
    ("cpu", "strategy", "expected"),
    [
        # the same template, spelled differently: nothing to roll out
        ("0.5", None, {"scheduled": 3, "pending": 0, "old": 0, "created": 0, "deleted": 0, "complete": True}),
        ("2", None, {"scheduled": 3, "pending": 0, "old": 0, "created": 3, "deleted": 3, "complete": True}),
        # 3-CPU pods: two fit beside one old pod; the third never does, so one old pod stays
        ("3", None, {"scheduled": 2, "pending": 1, "old": 1, "created": 3, "deleted": 2, "complete": False}),
        # too big for any node: the surge pod waits and no old pod is removed
        ("5", None, {"scheduled": 0, "pending": 1, "old": 3, "created": 1, "deleted": 0, "complete": False}),
        # Recreate removes every old pod first, so the 3-CPU rollout gets two of three
        (
            "3",
            "Recreate",
            {"scheduled": 2, "pending": 1, "old": 0, "created": 3, "deleted": 3, "complete": False},
        ),
    ],
)
def test_a_rollout_over_a_snapshot_shows_whether_it_fits(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], cpu: str, strategy: str | None, expected: Obj
) -> None:
    snapshot = write_yaml(tmp_path / "snapshot.yaml", *snapshot_with_running_deployment())
    edited = deployment("web", replicas=3, cpu=cpu)
    # the port's protocol is left to the API server's default
    edited["spec"]["template"]["spec"]["containers"][0]["ports"] = [{"containerPort": 80}]
    if strategy:
        edited["spec"]["strategy"] = {"type": strategy}
    manifest = write_yaml(tmp_path / "rollout.yaml", edited)
    report = simulate_json(capsys, str(snapshot), str(manifest))
    web = workloads(report)["Deployment/web"]
    assert {k: web[k] for k in expected} == expected
    if expected["pending"]:
        assert web["message"].startswith("0/2 nodes are available: 2 Insufficient cpu.")
    requested = {n["name"]: n["requested"]["cpu"] for n in report["nodes"]}
    assert all(float(c.rstrip("m")) / (1000 if c.endswith("m") else 1) <= 4 for c in requested.values())


def test_an_ordered_ready_stateful_set_stops_at_the_first_pod_that_does_not_fit(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    nodes = [node("n1"), node("n2")]
    ordered = write_yaml(tmp_path / "o.yaml", *nodes, stateful_set("db", replicas=4, cpu="3"))
    report = simulate_json(capsys, str(ordered))
    db = workloads(report)["StatefulSet/db"]
    assert (db["scheduled"], db["pending"], db["created"]) == (2, 1, 3)  # db-3 never created
    assert sorted(p["name"] for p in report["pods"]) == ["db-0", "db-1", "db-2"]
    parallel = write_yaml(
        tmp_path / "p.yaml", *nodes, stateful_set("db", replicas=4, cpu="3", podManagementPolicy="Parallel")
    )
    db = workloads(simulate_json(capsys, str(parallel)))["StatefulSet/db"]
    assert (db["scheduled"], db["pending"], db["created"]) == (2, 2, 4)


def test_daemon_pods_are_scheduled_on_their_own_node_even_when_cordoned(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write_yaml(
        tmp_path / "in.yaml", *three_nodes(), node("cordoned", unschedulable=True), daemon_set("agent")
    )
    report = simulate_json(capsys, str(path))
    agent = workloads(report)["DaemonSet/agent"]
    assert agent["desired"] == 3 and agent["complete"] is True
    assert agent["nodes"] == {"a1": 1, "b1": 1, "cordoned": 1}


def test_simulating_does_not_change_the_given_objects() -> None:
    objects = loaded(node("n"), deployment("web"))
    registry = default_registry()
    first = simulate(objects, default_config(registry), registry)
    assert objects.replica_sets == [] and objects.pods == []
    second = simulate(objects, default_config(registry), registry)
    assert [p.name for p in first.pods] == [p.name for p in second.pods]


@pytest.mark.parametrize(
    ("doc", "error"),
    [
        (
            {**deployment("web"), "spec": {**deployment("web")["spec"], "replicas": -1}},
            "spec.replicas: must be greater than or equal to 0",
        ),
        (
            {**deployment("web"), "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "web"}}}},
            "spec.template: required value",
        ),
        ({**deployment("web"), "spec": {"template": template("web")}}, "spec.selector: required value"),
        (
            {
                **deployment("web"),
                "spec": {"selector": {"matchLabels": {"app": "other"}}, "template": template("web")},
            },
            "spec.template.metadata.labels: `selector` does not match template `labels`",
        ),
        (
            {**stateful_set("db"), "spec": {**stateful_set("db")["spec"], "replicas": 10**9}},
            "spec.replicas: at most 1000000 pods",
        ),
        (
            {
                **deployment("web"),
                "spec": {**deployment("web")["spec"], "strategy": {"rollingUpdate": {"maxSurge": "abc"}}},
            },
            "spec.strategy.rollingUpdate.maxSurge: invalid value 'abc'",
        ),
        (
            {
                **daemon_set("agent"),
                "spec": {
                    **daemon_set("agent")["spec"],
                    "updateStrategy": {"rollingUpdate": {"maxUnavailable": -1}},
                },
            },
            "spec.updateStrategy.rollingUpdate.maxUnavailable: must be greater than or equal to 0",
        ),
        (
            {
                **stateful_set("db"),
                "spec": {
                    **stateful_set("db")["spec"],
                    "updateStrategy": {"rollingUpdate": {"partition": -1}},
                },
            },
            "spec.updateStrategy.rollingUpdate.partition: must be greater than or equal to 0",
        ),
        (
            {**job("j"), "spec": {**job("j")["spec"], "parallelism": -2}},
            "spec.parallelism: must be greater than or equal to 0",
        ),
        (
            {**job("j"), "spec": {**job("j")["spec"], "completionMode": "Indexed"}},
            "spec.completions: required value",
        ),
        (
            {
                "apiVersion": "batch/v1",
                "kind": "CronJob",
                "metadata": {"name": "c"},
                "spec": {"jobTemplate": {"spec": {}}},
            },
            "spec.jobTemplate.spec.template: required value",
        ),
    ],
)
def test_invalid_workloads_are_refused_with_their_field_path(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], doc: Obj, error: str
) -> None:
    path = write_yaml(tmp_path / "bad.yaml", node("n"), doc)
    code, out, err = run_cli(capsys, "simulate", str(path))
    assert code == 2 and out == ""
    assert err.startswith(f"kubesched: {path}: document 2: {error}"), err
    assert len(err.strip().splitlines()) == 1


def test_the_bundled_examples_load_unchanged() -> None:
    repo = Path(__file__).resolve().parents[3]
    objects = load_paths([repo / "examples" / "demo" / "cluster"])
    assert objects.deployments == [] and objects.skipped == {}


def test_a_job_counts_its_succeeded_pods_towards_completions() -> None:
    batch = job("batch", parallelism=3, completions=5)
    batch["metadata"]["uid"] = "j-1"
    ref = {"apiVersion": "batch/v1", "kind": "Job", "name": "batch", "uid": "j-1", "controller": True}

    def done(i: int, phase: str) -> Obj:
        meta = {"name": f"batch-done-{i}", "ownerReferences": [ref]}
        return {"kind": "Pod", "metadata": meta, "spec": {"nodeName": "n"}, "status": {"phase": phase}}

    finished = [done(0, "Succeeded"), done(1, "Succeeded"), done(2, "Succeeded"), done(3, "Failed")]
    _, pods = first_round(node("n"), batch, *finished)
    assert len(pods) == 2  # 5 completions, 3 already succeeded; a failed pod does not count


def test_a_job_past_its_backoff_limit_creates_nothing() -> None:
    def failed(i: int) -> Obj:
        owner = {"apiVersion": "batch/v1", "kind": "Job", "name": "j", "uid": "u", "controller": True}
        meta = {"name": f"j-f{i}", "ownerReferences": [owner]}
        return {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": meta,
            "spec": {"containers": []},
            "status": {"phase": "Failed"},
        }

    batch = {**job("j", parallelism=2, backoffLimit=2), "metadata": {"name": "j", "uid": "u"}}
    assert len(first_round(node("n"), batch, failed(0), failed(1))[1]) == 2  # 2 failures: within the limit
    assert first_round(node("n"), batch, failed(0), failed(1), failed(2))[1] == []  # 3 > 2: the Job failed

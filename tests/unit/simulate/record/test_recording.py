"""The recorder's rules, fed informer callbacks by hand on a fake clock (the server side is in
tests/integration/test_record.py): what becomes a timeline event, what is left out, what is secret."""

from __future__ import annotations

from typing import Any

import msgspec

from kubesched.api.objects import Node, Pod
from kubesched.simulate.record.run import Recorder
from kubesched.simulate.scenario import dump_scenario, parse_scenario, scenario_document
from kubesched.testing.builders import make_node


class Clock:
    def __init__(self) -> None:
        self.t = 100.0

    def __call__(self) -> float:
        return self.t


def pod(name: str, *, uid: str = "", node: str = "", phase: str = "", **extra: Any) -> Pod:
    doc: dict[str, Any] = {
        "metadata": {
            "name": name,
            "namespace": "shop",
            "uid": uid or f"uid-{name}",
            "resourceVersion": "7",
            "annotations": {"kubectl.kubernetes.io/last-applied-configuration": '{"secret": 1}', "team": "a"},
        },
        "spec": {"nodeName": node, "containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]},
        "status": {"phase": phase},
    }
    for key, value in extra.items():
        doc[key] = value | doc.get(key, {}) if key == "metadata" else value
    return msgspec.convert(doc, Pod)


def started() -> tuple[Recorder, Clock]:
    clock = Clock()
    recorder = Recorder(clock)
    recorder.node_added(make_node("n1"))
    recorder.pod_added(pod("old", node="n1"))
    recorder.start()
    return recorder, clock


def steps(recorder: Recorder) -> list[tuple[float, str, str, float | None]]:
    return [(e.at, e.action, e.ref.name, e.run_for) for e in recorder.timeline()]


def test_the_state_before_start_is_at_0s_and_later_changes_carry_their_time() -> None:
    recorder, clock = started()
    clock.t += 5
    recorder.pod_added(pod("web"))
    clock.t += 2
    recorder.pod_updated(pod("web"), pod("web", node="n1"))
    assert steps(recorder) == [
        (0, "create", "n1", None),
        (0, "create", "old", None),
        (5, "create", "web", None),
    ]
    created = recorder.timeline()[2].obj
    assert isinstance(created, Pod) and created.spec.node_name == ""  # the replay decides
    assert recorder.observations[1].bound_at == 7 and recorder.observations[1].node == "n1"
    clock.t += 1
    assert recorder.stop() == 8
    recorder.dispatch(lambda: recorder.pod_added(pod("late")))  # an informer still delivering
    assert len(recorder.timeline()) == 3


def test_the_state_at_0s_lists_nodes_before_pods_whichever_informer_was_first() -> None:
    clock = Clock()
    recorder = Recorder(clock)
    recorder.pod_added(pod("old", node="n1"))  # the pod informer finished its list first
    recorder.pod_added(pod("pending"))
    recorder.node_added(make_node("n1"))
    recorder.node_added(make_node("n2"))
    recorder.start()
    recorder.pod_added(pod("web"))
    clock.t += 1
    recorder.node_added(make_node("n3"))  # after the start: in the order seen
    assert [name for _, _, name, _ in steps(recorder)] == ["n1", "n2", "old", "pending", "web", "n3"]
    assert [e.index for e in recorder.timeline()] == list(range(6))


def test_a_finished_pod_gets_run_for_from_its_bind_and_no_delete() -> None:
    recorder, clock = started()
    clock.t += 1
    recorder.pod_added(pod("job"))
    clock.t += 3
    recorder.pod_updated(pod("job"), pod("job", node="n1"))
    clock.t += 60
    recorder.pod_updated(pod("job", node="n1"), pod("job", node="n1", phase="Succeeded"))
    recorder.pod_deleted(pod("job", node="n1", phase="Succeeded"))  # garbage collected later
    assert steps(recorder)[2:] == [(1, "create", "job", 60)]
    assert recorder.observations[1].ended == "Completed"


def test_deletes_the_replay_makes_itself_are_not_recorded() -> None:
    recorder, clock = started()
    victim = pod("victim", node="n1")
    recorder.pod_added(victim)
    preempted = pod(
        "victim",
        node="n1",
        metadata={"deletionTimestamp": "2030-01-01T00:00:00Z"},
        status={
            "conditions": [{"type": "DisruptionTarget", "status": "True", "reason": "PreemptionByScheduler"}]
        },
    )
    clock.t += 1
    recorder.pod_updated(victim, preempted)
    recorder.node_deleted(make_node("n1"))
    recorder.pod_deleted(pod("old", node="n1"))  # PodGC after the node went away
    assert [s[1:3] for s in steps(recorder)][3:] == [("delete", "n1")]
    assert [o.ended for o in recorder.observations] == ["NodeDeleted", "Preempted"]


def test_a_user_deletion_is_recorded_when_it_is_asked_for() -> None:
    recorder, clock = started()
    clock.t += 2
    terminating = pod("old", node="n1", metadata={"deletionTimestamp": "2030-01-01T00:00:00Z"})
    recorder.pod_updated(pod("old", node="n1"), terminating)
    clock.t += 30  # the kubelet takes its grace period
    recorder.pod_deleted(terminating)
    assert steps(recorder)[2:] == [(2, "delete", "old", None)]


def test_only_changes_the_scheduler_reads_are_updates() -> None:
    recorder, clock = started()
    node = make_node("n1")
    heartbeat = msgspec.structs.replace(
        node, metadata=msgspec.structs.replace(node.metadata, resource_version="99")
    )
    recorder.node_updated(node, heartbeat)
    clock.t += 1
    cordoned = msgspec.structs.replace(heartbeat, spec=msgspec.structs.replace(node.spec, unschedulable=True))
    recorder.node_updated(heartbeat, cordoned)
    recorder.pod_added(pod("gated"))
    recorder.pod_updated(pod("gated"), pod("gated", metadata={"resourceVersion": "8"}))  # status only
    clock.t += 1
    relabelled = pod("gated", metadata={"labels": {"app": "x"}})
    recorder.pod_updated(pod("gated"), relabelled)
    assert [s[:3] for s in steps(recorder)][2:] == [
        (1, "update", "n1"),
        (1, "create", "gated"),
        (2, "update", "gated"),
    ]


def test_a_name_reused_by_a_new_pod_is_a_new_create() -> None:
    recorder, clock = started()
    recorder.pod_deleted(pod("old", node="n1"))
    clock.t += 1
    recorder.pod_added(pod("old", uid="second"))
    assert [s[:3] for s in steps(recorder)][2:] == [(0, "delete", "old"), (1, "create", "old")]


def test_what_is_written_is_valid_and_holds_nothing_private() -> None:
    recorder, clock = started()
    clock.t += 1.5
    recorder.pod_added(pod("web"))
    text = dump_scenario(scenario_document("rec", recorder.timeline(), until=2), json=False)
    assert b"last-applied-configuration" not in text and b"resourceVersion" not in text and b"uid" not in text
    scenario = parse_scenario(text.decode(), "rec.yaml")
    assert [(e.at, e.action, e.ref.kind, e.ref.name) for e in scenario.events] == [
        (0, "create", "Node", "n1"),
        (0, "create", "Pod", "old"),
        (1.5, "create", "Pod", "web"),
    ]
    web = scenario.events[2].obj
    assert isinstance(web, Pod) and web.metadata.annotations == {"team": "a"}
    assert isinstance(scenario.events[0].obj, Node)

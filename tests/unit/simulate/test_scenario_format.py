"""The scenario format: what it accepts, the one-line errors (file + field path) for what it does not,
and a round trip through the writer `kubesched record` uses."""

from __future__ import annotations

import gc
import re
from typing import Any

import msgspec
import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from kubesched.api.cluster_objects import PriorityClass
from kubesched.api.objects import Node, Pod
from kubesched.errors import InputError
from kubesched.simulate.scenario import (
    API_VERSION,
    ObjectRef,
    dump_scenario,
    parse_scenario,
    scenario_document,
)

NODE: dict[str, Any] = {"kind": "Node", "metadata": {"name": "n1"}, "status": {"allocatable": {"cpu": "2"}}}
POD: dict[str, Any] = {
    "kind": "Pod",
    "metadata": {"name": "p1"},
    "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]},
}


_TEMPLATE: dict[str, Any] = {"metadata": {"labels": {"app": "a"}}, "spec": POD["spec"]}
DEPLOYMENT: dict[str, Any] = {
    "apiVersion": "apps/v1",
    "kind": "Deployment",
    "metadata": {"name": "d"},
    "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "a"}}, "template": _TEMPLATE},
}
JOB: dict[str, Any] = {
    "apiVersion": "batch/v1",
    "kind": "Job",
    "metadata": {"name": "j"},
    "spec": {"template": _TEMPLATE},
}

CRON_JOB: dict[str, Any] = {
    "apiVersion": "batch/v1",
    "kind": "CronJob",
    "metadata": {"name": "c"},
    "spec": {"schedule": "* * * * *", "jobTemplate": {"spec": JOB["spec"]}},
}


def document(*events: dict[str, Any], **spec: Any) -> dict[str, Any]:
    return {"apiVersion": API_VERSION, "kind": "Scenario", "spec": {**spec, "events": list(events)}}


def parse(doc: Any) -> Any:
    return parse_scenario(yaml.safe_dump(doc), "s.yaml")


def test_events_are_sorted_by_time_keeping_file_order_within_an_instant() -> None:
    scenario = parse(
        document(
            {"at": "1m", "delete": {"kind": "Pod", "name": "p1"}},
            {"at": 0, "create": NODE},
            {"at": "0s", "runFor": "90s", "create": POD},
            {"at": 30.5, "update": {**NODE, "spec": {"unschedulable": True}}},
            sampleInterval="10s",
            until="1h",
        )
    )
    assert [(e.at, e.action, e.ref) for e in scenario.events] == [
        (0.0, "create", ObjectRef("Node", "n1")),
        (0.0, "create", ObjectRef("Pod", "p1", "default")),
        (30.5, "update", ObjectRef("Node", "n1")),
        (60.0, "delete", ObjectRef("Pod", "p1", "default")),
    ]
    assert scenario.events[1].run_for == 90.0
    assert isinstance(scenario.events[0].obj, Node)
    assert isinstance(scenario.events[1].obj, Pod)
    assert (scenario.until, scenario.sample_interval) == (3600.0, 10.0)
    assert [e.index for e in scenario.events] == [1, 2, 3, 0]


def test_other_kinds_created_at_zero_become_objects_of_the_cluster() -> None:
    pc = {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": {"name": "hi"},
        "value": 9,
    }
    scenario = parse(document({"at": 0, "create": pc}, {"at": 0, "create": NODE}))
    assert scenario.objects.priority_classes == [msgspec.convert(pc, PriorityClass)]
    assert [e.ref.kind for e in scenario.events] == ["Node"]


def test_scheduling_k8s_io_groups_at_zero_become_objects_of_the_cluster() -> None:
    group = {
        "apiVersion": "scheduling.k8s.io/v1beta1",
        "kind": "PodGroup",
        "metadata": {"name": "g"},
        "spec": {"schedulingPolicy": {"gang": {"minCount": 2}}},
    }
    member = POD | {"spec": POD["spec"] | {"schedulingGroup": {"podGroupName": "g"}}}
    scenario = parse(document({"at": 0, "create": group}, {"at": 5, "create": member}))
    (loaded,) = scenario.objects.scheduling_pod_groups
    assert type(loaded).__module__ == "kubesched.api.scheduling_groups" and scenario.objects.pod_groups == []
    (event,) = scenario.events
    assert isinstance(event.obj, Pod) and event.obj.spec.scheduling_group is not None
    with pytest.raises(InputError, match=r"spec.events\[0\].at: PodGroup objects can only be created at 0s"):
        parse(document({"at": 5, "create": group}))


@pytest.mark.parametrize(
    ("doc", "error"),
    [
        (
            {"apiVersion": "v1", "kind": "Scenario"},
            's.yaml: apiVersion: expected "kubesched.io/v1alpha1", got "v1"',
        ),
        ({"apiVersion": API_VERSION, "kind": "Pod"}, 's.yaml: kind: expected "Scenario", got "Pod"'),
        ({"apiVersion": API_VERSION, "kind": "Scenario"}, "s.yaml: spec: required field is missing"),
        (
            {"apiVersion": API_VERSION, "kind": "Scenario", "spec": {}},
            "s.yaml: spec.events: required field is missing",
        ),
        (document(until="soon"), 's.yaml: spec.until: invalid duration "soon": expected a number and a unit'),
        (document(sampleInterval=0), "s.yaml: spec.sampleInterval: must be positive"),
        (
            document(evnts=[]),
            "s.yaml: spec.evnts: unknown field (expected one of events, sampleInterval, until)",
        ),
        (document({"create": NODE}), "s.yaml: spec.events[0].at: required field is missing"),
        (document({"at": -1, "create": NODE}), "s.yaml: spec.events[0].at: must not be negative"),
        (document({"at": True, "create": NODE}), "s.yaml: spec.events[0].at: expected a duration"),
        (document({"at": 0}), "s.yaml: spec.events[0]: expected exactly one of create, update, delete"),
        (
            document({"at": 0, "create": NODE, "delete": {"kind": "Node", "name": "n1"}}),
            "s.yaml: spec.events[0]: expected exactly one of create, update, delete",
        ),
        (document({"at": 0, "runfor": "1m", "create": POD}), "s.yaml: spec.events[0].runfor: unknown field"),
        (
            document({"at": 0, "runFor": "1m", "create": NODE}),
            "s.yaml: spec.events[0].runFor: runFor applies only",
        ),
        (
            document({"at": 0, "runFor": "0s", "create": POD}),
            "s.yaml: spec.events[0].runFor: must be positive",
        ),
        (
            document({"at": 0, "create": {**POD, "spec": {"containers": [{"name": 5}]}}}),
            "s.yaml: spec.events[0].create.spec.containers[0].name: expected str, got int",
        ),
        (
            document({"at": 0, "create": {"apiVersion": "example.com/v1", "kind": "Gizmo"}}),
            's.yaml: spec.events[0].create.kind: kind "Gizmo" is not',
        ),
        (
            document({"at": 0, "create": {"kind": "Nod"}}),
            's.yaml: spec.events[0].create.kind: unknown kind "Nod" (did you mean "Node"?)',
        ),
        (
            document({"at": 0, "create": {**POD, "spec": {**POD["spec"], "nodeSelectr": {"a": "b"}}}}),
            's.yaml: spec.events[0].create.spec.nodeSelectr: unknown field (did you mean "nodeSelector"?)',
        ),
        (
            document({"at": 0, "create": {"kind": "Pod"}}),
            "s.yaml: spec.events[0].create.metadata.name: required",
        ),
        (
            document({"at": "1s", "create": {"kind": "PriorityClass", "metadata": {"name": "x"}}}),
            "s.yaml: spec.events[0].at: PriorityClass objects can only be created at 0s",
        ),
        (
            document({"at": 0, "delete": {"kind": "Service", "name": "d"}}),
            "s.yaml: spec.events[0].delete.kind: expected one of Node, Pod, Deployment",
        ),
        (
            document({"at": 0, "runFor": "1m", "create": DEPLOYMENT}),
            "s.yaml: spec.events[0].runFor: runFor applies only to created pods and Jobs",
        ),
        (
            document({"at": 0, "runFor": "1m", "update": JOB}),
            "s.yaml: spec.events[0].runFor: runFor applies only to created pods and Jobs",
        ),
        (
            document({"at": 0, "runFor": "1m", "delete": {"kind": "Job", "name": "j"}}),
            "s.yaml: spec.events[0].runFor: runFor applies only",
        ),
        (
            document({"at": "1m", "create": CRON_JOB}),
            "s.yaml: spec.events[0].create.kind: CronJob objects are not replayed",
        ),
        (
            document(
                {
                    "at": 0,
                    "update": {
                        **DEPLOYMENT,
                        "spec": {**DEPLOYMENT["spec"], "strategy": {"rollingUpdate": {"maxSurge": "1O%"}}},
                    },
                }
            ),
            "s.yaml: spec.events[0].update.spec.strategy.rollingUpdate.maxSurge: invalid value '1O%'",
        ),
        (
            document({"at": 0, "create": {**DEPLOYMENT, "spec": {**DEPLOYMENT["spec"], "replicas": -1}}}),
            "s.yaml: spec.events[0].create.spec.replicas: must be greater than or equal to 0",
        ),
        (
            document(
                {
                    "at": 0,
                    "create": {
                        "kind": "ReplicaSet",
                        "metadata": {"name": "r"},
                        "spec": {"selector": {"matchLabels": {"a": "b"}}},
                    },
                }
            ),
            "s.yaml: spec.events[0].create.spec.template: required value",
        ),
        (
            document({"at": 0, "delete": {"kind": "Pod"}}),
            "s.yaml: spec.events[0].delete.name: required field",
        ),
        (
            document({"at": 0, "update": {**POD, "spec": {"nodeName": "n1"}}}),
            "s.yaml: spec.events[0].update.spec.nodeName: a pod update must not set nodeName",
        ),
        (
            document({"at": 0, "create": [NODE]}),
            "s.yaml: spec.events[0].create: expected an object with a kind",
        ),
    ],
)
def test_bad_scenarios_name_the_file_and_field(doc: Any, error: str) -> None:
    with pytest.raises(InputError) as info:
        parse(doc)
    assert str(info.value).startswith(error), str(info.value)
    assert "\n" not in str(info.value)


def test_syntax_errors_and_extra_documents_name_the_file() -> None:
    with pytest.raises(InputError, match=r"^s\.yaml: line 2, column 2: invalid YAML"):
        parse_scenario("a: [1\nb: 2\n", "s.yaml")
    with pytest.raises(InputError, match=r"^s\.yaml: expected one Scenario document, found 2$"):
        parse_scenario(yaml.safe_dump(document()) + "---\n" + yaml.safe_dump(document()), "s.yaml")


def test_reading_leaves_the_garbage_collector_as_it_found_it() -> None:
    """The parser pauses the cyclic collector while it reads: it must leave it on or off as it was,
    nothing frozen by it, and what a caller froze frozen."""
    good = yaml.safe_dump(document({"at": 0, "create": NODE}))
    bad = yaml.safe_dump(document({"at": -1, "create": NODE}))
    assert gc.get_freeze_count() == 0, "an earlier test left objects frozen"
    assert gc.isenabled()
    parse_scenario(good, "s.yaml")
    assert gc.isenabled()
    with pytest.raises(InputError):
        parse_scenario(bad, "s.yaml")
    assert gc.isenabled()
    assert gc.get_freeze_count() == 0  # what it read was handed back, not left frozen
    gc.disable()
    try:
        parse_scenario(good, "s.yaml")
        assert not gc.isenabled()
    finally:
        gc.enable()
    # A caller's frozen objects stay frozen. (Not "the count stays": a frozen object freed meanwhile,
    # by this thread or another, leaves the count; unfreezing would put this one back in generation 2.)
    callers = [object()]
    gc.freeze()
    try:
        parse_scenario(good, "s.yaml")
        assert not any(o is callers for g in range(3) for o in gc.get_objects(generation=g))
    finally:
        gc.unfreeze()
    assert any(o is callers for o in gc.get_objects(generation=2))  # the check above can see it


@pytest.mark.parametrize("as_json", [True, False])
def test_the_writer_round_trips(as_json: bool) -> None:
    original = parse(
        document(
            {"at": 0, "create": NODE},
            {"at": 1.25, "runFor": 61, "create": POD},
            {"at": 2, "update": {**NODE, "metadata": {"name": "n1", "labels": {"a": "b"}}}},
            {"at": 3, "delete": {"kind": "Pod", "namespace": "x", "name": "p9"}},
        )
    )
    text = dump_scenario(
        scenario_document("copy", original.events, until=9.5, sample_interval=2), json=as_json
    )
    again = parse_scenario(text.decode(), "copy.json" if as_json else "copy.yaml")
    assert again.name == "copy"
    assert (again.until, again.sample_interval) == (9.5, 2.0)
    assert [(e.at, e.action, e.ref, e.obj, e.run_for) for e in again.events] == [
        (e.at, e.action, e.ref, e.obj, e.run_for) for e in original.events
    ]


_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4)
    ),
    max_leaves=20,
)
_event_keys = st.sampled_from(["at", "runFor", "create", "update", "delete", "x"])
_events = st.lists(st.dictionaries(_event_keys, _json | st.just(NODE) | st.just(POD), max_size=4), max_size=4)


@given(spec=st.dictionaries(st.sampled_from(["events", "until", "sampleInterval", "y"]), _json | _events))
def test_any_document_is_a_scenario_or_one_input_error(spec: dict[str, Any]) -> None:
    try:
        parse_scenario(msgspec.json.encode(document() | {"spec": spec}).decode(), "s.json")
    except InputError as err:
        assert str(err).startswith("s.json: ")
        assert "\n" not in str(err)


def test_workloads_are_timeline_events_and_a_jobs_run_for_is_its_pods_run_time() -> None:
    scenario = parse(
        document(
            {"at": "1m", "create": DEPLOYMENT},
            {"at": "2m", "runFor": "30s", "create": {**JOB, "metadata": {"name": "j", "namespace": "batch"}}},
            {"at": "3m", "update": {**DEPLOYMENT, "spec": {**DEPLOYMENT["spec"], "replicas": 5}}},
            {"at": "4m", "delete": {"kind": "Deployment", "name": "d"}},
        )
    )
    assert [(e.at, e.action, e.ref, e.run_for) for e in scenario.events] == [
        (60.0, "create", ObjectRef("Deployment", "d", "default"), None),
        (120.0, "create", ObjectRef("Job", "j", "batch"), 30.0),
        (180.0, "update", ObjectRef("Deployment", "d", "default"), None),
        (240.0, "delete", ObjectRef("Deployment", "d", "default"), None),
    ]
    assert not scenario.objects.deployments  # replayed by its controller, not present from 0s


_workload_events = st.fixed_dictionaries(
    {
        "at": st.integers(0, 100) | st.text(max_size=4),
        "action": st.sampled_from(["create", "update", "delete"]),
        "kind": st.sampled_from(["Deployment", "Job", "StatefulSet", "DaemonSet", "CronJob", "ReplicaSet"]),
        "runFor": st.none() | st.integers(-5, 100) | st.text(max_size=4),
        "replicas": st.none() | st.integers(-3, 3) | st.text(max_size=3),
        "template": st.booleans(),
    }
)


@given(events=st.lists(_workload_events, max_size=4))
def test_any_workload_event_is_an_event_or_one_input_error_naming_its_field(
    events: list[dict[str, Any]],
) -> None:
    raw = []
    for e in events:
        spec: dict[str, Any] = {"selector": {"matchLabels": {"app": "a"}}}
        if e["template"]:
            spec["template"] = _TEMPLATE
        if e["replicas"] is not None:
            spec["replicas"] = e["replicas"]
        body: dict[str, Any] = {"kind": e["kind"], "metadata": {"name": "w"}, "spec": spec}
        if e["action"] == "delete":
            body = {"kind": e["kind"], "name": "w"}
        entry = {"at": e["at"], e["action"]: body}
        if e["runFor"] is not None:
            entry["runFor"] = e["runFor"]
        raw.append(entry)
    try:
        scenario = parse_scenario(msgspec.json.encode(document(*raw)).decode(), "s.json")
    except InputError as err:
        assert re.match(r"^s\.json: spec\.events\[\d\]", str(err)), str(err)
        assert "\n" not in str(err)
        return
    for event in scenario.events:
        assert event.run_for is None or (event.action == "create" and event.ref.kind == "Job")
        assert event.ref.kind != "CronJob"


@pytest.mark.parametrize(
    ("key", "where"),
    [("x", "spec.events[0].x"), ("\n", 'spec.events[0]["\\n"]'), ("a.b", 'spec.events[0]["a.b"]')],
)
def test_an_unknown_field_is_named_on_one_line(key: str, where: str) -> None:
    with pytest.raises(InputError) as err:
        parse_scenario(
            msgspec.json.encode(document() | {"spec": {"events": [{key: None}]}}).decode(), "s.json"
        )
    assert str(err.value).startswith(f"s.json: {where}: unknown field")


def test_a_lenient_scenario_keeps_the_object_and_reports_the_unknown_field() -> None:
    pod = {**POD, "spec": {**POD["spec"], "nodeSelectr": {"a": "b"}}}
    text = yaml.safe_dump(document({"at": 0, "create": pod}))
    lenient: list[InputError] = []
    scenario = parse_scenario(text, "s.yaml", lenient=lenient)
    assert [type(e.obj) for e in scenario.events] == [Pod]
    assert [str(e) for e in lenient] == [
        's.yaml: spec.events[0].create.spec.nodeSelectr: unknown field (did you mean "nodeSelector"?)'
    ]

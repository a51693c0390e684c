"""Upstream defaults applied to a decoded KubeSchedulerConfiguration."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest
from config_fakes import (
    DEFAULT_ORDER,
    CustomFilter,
    DefaultBinder,
    DefaultPreemptionArgs,
    NodeResourcesFitArgs,
    PrioritySort,
    registry,
)

from kubesched.config import (
    UPSTREAM_DEFAULT_PLUGINS,
    KubeSchedulerConfiguration,
    apply_defaults,
    default_config,
    default_plugins,
    encode_args,
    plugin_args,
)
from kubesched.framework.registry import Registry

REGISTRY = registry()
HEADER = {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration"}


def defaulted(doc: dict[str, Any] | None = None) -> dict[str, Any]:
    cfg = msgspec.convert({**HEADER, **(doc or {})}, KubeSchedulerConfiguration)
    out: dict[str, Any] = msgspec.to_builtins(apply_defaults(cfg, REGISTRY))
    return out


def at(doc: Any, path: str) -> Any:
    for part in path.split("."):
        doc = doc[int(part)] if isinstance(doc, list) else doc[part]
    return doc


@pytest.mark.parametrize(
    ("path", "value"),
    [
        ("parallelism", 16),
        ("leaderElection.leaderElect", True),
        ("leaderElection.leaseDuration", "15s"),
        ("leaderElection.renewDeadline", "10s"),
        ("leaderElection.retryPeriod", "2s"),
        ("leaderElection.resourceLock", "leases"),
        ("leaderElection.resourceName", "kubesched"),  # our own Lease, not kube-scheduler's
        ("leaderElection.resourceNamespace", "kube-system"),
        ("clientConnection.kubeconfig", ""),
        ("clientConnection.acceptContentTypes", ""),
        ("clientConnection.contentType", "application/vnd.kubernetes.protobuf"),
        ("clientConnection.qps", 50.0),
        ("clientConnection.burst", 100),
        ("enableProfiling", True),
        ("enableContentionProfiling", True),
        ("percentageOfNodesToScore", 0),
        ("podInitialBackoffSeconds", 1),
        ("podMaxBackoffSeconds", 10),
        ("delayCacheUntilActive", False),
        ("profiles.0.schedulerName", "default-scheduler"),
    ],
)
def test_top_level_defaults(path: str, value: Any) -> None:
    assert at(defaulted(), path) == value


@pytest.mark.parametrize(
    ("doc", "path", "value"),
    [
        ({"parallelism": 4}, "parallelism", 4),
        ({"leaderElection": {"leaderElect": False}}, "leaderElection.leaderElect", False),
        ({"leaderElection": {"leaderElect": False}}, "leaderElection.leaseDuration", "15s"),
        ({"leaderElection": {"resourceName": "mine"}}, "leaderElection.resourceName", "mine"),
        ({"leaderElection": {"retryPeriod": "1m"}}, "leaderElection.retryPeriod", "1m"),
        ({"clientConnection": {"qps": 0}}, "clientConnection.qps", 0.0),
        ({"clientConnection": {"burst": 0}}, "clientConnection.burst", 0),
        ({"clientConnection": {"qps": 7.5}}, "clientConnection.burst", 100),
        ({"enableProfiling": False}, "enableContentionProfiling", False),
        ({"enableProfiling": False, "enableContentionProfiling": True}, "enableContentionProfiling", True),
        ({"percentageOfNodesToScore": 30}, "percentageOfNodesToScore", 30),
        ({"podMaxBackoffSeconds": 60}, "podMaxBackoffSeconds", 60),
        ({"delayCacheUntilActive": True}, "delayCacheUntilActive", True),
    ],
)
def test_explicit_values_are_kept(doc: dict[str, Any], path: str, value: Any) -> None:
    assert at(defaulted(doc), path) == value


@pytest.mark.parametrize(
    ("profiles", "names"),
    [
        ([], ["default-scheduler"]),
        ([{}], ["default-scheduler"]),
        ([{"schedulerName": "mine"}], ["mine"]),
        ([{}, {}], [None, None]),  # only a single unnamed profile gets the default name
        ([{"schedulerName": "a"}, {"schedulerName": "b"}], ["a", "b"]),
        ([{"schedulerName": ""}], [""]),  # explicitly empty: left for validation to reject
    ],
)
def test_profile_names(profiles: list[dict[str, Any]], names: list[str | None]) -> None:
    doc = defaulted({"profiles": profiles})
    assert [p.get("schedulerName") for p in doc["profiles"]] == names


def test_profile_percentage_is_not_defaulted() -> None:
    doc = defaulted({"profiles": [{}]})
    assert "percentageOfNodesToScore" not in doc["profiles"][0]


def test_profiles_get_the_default_multipoint_plugins() -> None:
    doc = defaulted()
    enabled = doc["profiles"][0]["plugins"]["multiPoint"]["enabled"]
    assert [(e["name"], e.get("weight")) for e in enabled] == DEFAULT_ORDER


def test_profile_plugins_are_merged_onto_the_defaults() -> None:
    doc = defaulted(
        {
            "profiles": [
                {
                    "plugins": {
                        "multiPoint": {
                            "enabled": [{"name": "CustomMulti"}],
                            "disabled": [{"name": "ImageLocality"}],
                        },
                        "filter": {"enabled": [{"name": "CustomFilter"}]},
                    }
                }
            ]
        }
    )
    plugins = doc["profiles"][0]["plugins"]
    names = [e["name"] for e in plugins["multiPoint"]["enabled"]]
    assert names == [n for n, _ in DEFAULT_ORDER if n != "ImageLocality"] + ["CustomMulti"]
    assert plugins["multiPoint"]["disabled"] == [{"name": "ImageLocality"}]
    assert plugins["filter"] == {"enabled": [{"name": "CustomFilter"}]}


def test_upstream_default_list_and_weights() -> None:
    assert UPSTREAM_DEFAULT_PLUGINS == (
        ("SchedulingGates", None),
        ("PrioritySort", None),
        ("NodeName", None),
        ("NodeUnschedulable", None),
        ("TaintToleration", 3),
        ("NodeAffinity", 2),
        ("NodePorts", None),
        ("NodeResourcesFit", 1),
        ("VolumeRestrictions", None),
        ("NodeVolumeLimits", None),
        ("VolumeBinding", None),
        ("VolumeZone", None),
        ("PodTopologySpread", 2),
        ("InterPodAffinity", 2),
        ("DynamicResources", 2),
        ("DefaultPreemption", None),
        ("NodeResourcesBalancedAllocation", 1),
        ("ImageLocality", 1),
        ("DefaultBinder", None),
        ("NodeDeclaredFeatures", None),
    )


@pytest.mark.parametrize(
    ("plugins", "expected"),
    [
        ([], []),
        ([DefaultBinder, PrioritySort], [("PrioritySort", None), ("DefaultBinder", None)]),  # upstream order
        ([CustomFilter], []),  # custom plugins are never defaults
    ],
)
def test_default_plugins_restricted_to_registry(plugins: list[type], expected: list[Any]) -> None:
    pset = default_plugins(Registry(plugins))
    assert [(p.name, p.weight) for p in pset.enabled] == expected
    assert pset.disabled == []


def args_by_name(doc: dict[str, Any], profile: int = 0) -> dict[str, Any]:
    return {pc["name"]: pc.get("args") for pc in doc["profiles"][profile].get("pluginConfig", [])}


def test_default_args_injected_for_enabled_plugins_with_args_types() -> None:
    args = args_by_name(defaulted())
    assert list(args) == ["NodeResourcesFit", "DefaultPreemption"]
    assert args["DefaultPreemption"] == {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "DefaultPreemptionArgs",
        "minCandidateNodesPercentage": 10,
        "minCandidateNodesAbsolute": 100,
    }
    # Defaults are shown even though the args struct omits defaults when encoded.
    assert args["NodeResourcesFit"]["scoringStrategy"] == {
        "type": "LeastAllocated",
        "resources": [{"name": "cpu", "weight": 1}, {"name": "memory", "weight": 1}],
    }


def test_no_args_for_a_plugin_disabled_in_multipoint() -> None:
    doc = defaulted(
        {"profiles": [{"plugins": {"multiPoint": {"disabled": [{"name": "DefaultPreemption"}]}}}]}
    )
    assert list(args_by_name(doc)) == ["NodeResourcesFit"]


def test_args_injected_for_a_plugin_enabled_at_one_point_only() -> None:
    doc = defaulted(
        {
            "profiles": [
                {
                    "plugins": {
                        "queueSort": {"enabled": [{"name": "SortWithArgs"}], "disabled": [{"name": "*"}]},
                    }
                }
            ]
        }
    )
    assert args_by_name(doc)["SortWithArgs"] == {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "SortWithArgsArgs",
        "reverse": False,
    }


def test_written_args_are_completed_and_keep_their_position() -> None:
    doc = defaulted(
        {
            "profiles": [
                {
                    "pluginConfig": [
                        {"name": "RawArgs", "args": {"anything": [1, 2]}},
                        {"name": "NodeResourcesFit", "args": {"scoringStrategy": {"type": "MostAllocated"}}},
                    ]
                }
            ]
        }
    )
    configs = doc["profiles"][0]["pluginConfig"]
    assert [c["name"] for c in configs] == ["RawArgs", "NodeResourcesFit", "DefaultPreemption"]
    assert configs[0]["args"] == {"anything": [1, 2]}  # no args type: passed through untouched
    assert configs[1]["args"]["scoringStrategy"] == {
        "type": "MostAllocated",
        "resources": [{"name": "cpu", "weight": 1}, {"name": "memory", "weight": 1}],
    }
    assert configs[1]["args"]["kind"] == "NodeResourcesFitArgs"


def test_args_that_do_not_decode_are_left_raw() -> None:
    raw = {"minCandidateNodesPercentage": "ten"}
    doc = defaulted({"profiles": [{"pluginConfig": [{"name": "DefaultPreemption", "args": raw}]}]})
    assert args_by_name(doc)["DefaultPreemption"] == raw


@pytest.mark.parametrize(
    ("extender", "expected"),
    [
        (
            {"urlPrefix": "http://e"},
            {
                "urlPrefix": "http://e",
                "enableHTTPS": False,
                "httpTimeout": "5s",
                "nodeCacheCapable": False,
                "ignorable": False,
            },
        ),
        ({"urlPrefix": "http://e", "prioritizeVerb": "p"}, {"weight": 1}),
        ({"urlPrefix": "http://e", "prioritizeVerb": "p", "weight": 5}, {"weight": 5}),
        ({"urlPrefix": "http://e", "prioritizeVerb": "p", "weight": 0}, {"weight": 0}),  # validation rejects
        ({"urlPrefix": "http://e", "httpTimeout": "30s"}, {"httpTimeout": "30s"}),
        (
            {"urlPrefix": "http://e", "managedResources": [{"name": "example.com/gpu"}]},
            {"managedResources": [{"name": "example.com/gpu", "ignoredByScheduler": False}]},
        ),
    ],
)
def test_extender_defaults(extender: dict[str, Any], expected: dict[str, Any]) -> None:
    got = defaulted({"extenders": [extender]})["extenders"][0]
    assert {k: got.get(k) for k in expected} == expected


def test_no_weight_without_prioritize_verb() -> None:
    assert "weight" not in defaulted({"extenders": [{"urlPrefix": "http://e"}]})["extenders"][0]


def test_defaulting_is_idempotent_and_does_not_mutate_its_input() -> None:
    cfg = msgspec.convert(
        {
            **HEADER,
            "profiles": [
                {
                    "schedulerName": "a",
                    "plugins": {"multiPoint": {"enabled": [{"name": "CustomMulti", "weight": 2}]}},
                },
                {"schedulerName": "b", "plugins": {"score": {"disabled": [{"name": "*"}]}}},
            ],
            "extenders": [{"urlPrefix": "http://e", "prioritizeVerb": "p"}],
        },
        KubeSchedulerConfiguration,
    )
    before = msgspec.to_builtins(cfg)
    once = apply_defaults(cfg, REGISTRY)
    assert msgspec.to_builtins(cfg) == before
    assert apply_defaults(once, REGISTRY) == once


def test_default_config_is_the_defaulted_empty_config() -> None:
    assert default_config(REGISTRY) == apply_defaults(
        msgspec.convert(HEADER, KubeSchedulerConfiguration), REGISTRY
    )
    assert default_config(REGISTRY).api_version == "kubescheduler.config.k8s.io/v1"


class _Shape(msgspec.Struct, tag="Linear", tag_field="kind", omit_defaults=True, rename="camel"):
    max_score: int = 10


class _TaggedArgs(msgspec.Struct, omit_defaults=True, rename="camel"):
    shape: _Shape = msgspec.field(default_factory=_Shape)
    note: str | None = None


def test_encode_args_keeps_defaults_and_union_tags() -> None:
    assert encode_args("Tagged", _TaggedArgs()) == {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "TaggedArgs",
        "shape": {"kind": "Linear", "maxScore": 10},
    }
    assert encode_args("Raw", {"a": 1}) == {"a": 1}


def test_plugin_args_and_duration_helpers_of_a_defaulted_config() -> None:
    cfg = apply_defaults(
        msgspec.convert(
            {
                **HEADER,
                "leaderElection": {"leaseDuration": "1m30s"},
                "extenders": [{"urlPrefix": "http://e"}],
                "profiles": [{"pluginConfig": [{"name": "RawArgs", "args": {"x": 1}}]}],
            },
            KubeSchedulerConfiguration,
        ),
        REGISTRY,
    )
    args = plugin_args(cfg.profiles[0], REGISTRY)
    assert args["RawArgs"] == {"x": 1}
    assert args["DefaultPreemption"] == DefaultPreemptionArgs()
    assert isinstance(args["NodeResourcesFit"], NodeResourcesFitArgs)
    assert cfg.leader_election is not None
    assert cfg.leader_election.lease_duration_seconds == 90.0
    assert cfg.leader_election.retry_period_seconds == 2.0
    assert cfg.extenders[0].http_timeout_seconds == 5.0

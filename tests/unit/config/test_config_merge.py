"""Plugin set merge (upstream mergePluginSet) and the multiPoint expansion of a profile."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest
from config_fakes import DEFAULT_ORDER, registry
from hypothesis import given, settings
from hypothesis import strategies as st

from kubesched.config import (
    PLUGIN_SET_KEYS,
    KubeSchedulerConfiguration,
    KubeSchedulerProfile,
    Plugin,
    Plugins,
    PluginSet,
    default_plugins,
    merge_plugin_set,
    merge_plugins,
    resolve_profile_plugins,
    validate,
)
from kubesched.errors import FieldErrors, InputError
from kubesched.framework.interfaces import EXTENSION_POINT_METHODS, extension_points_of

REGISTRY = registry()


def ps(enabled: list[Any] = (), disabled: list[str] = ()) -> PluginSet:  # type: ignore[assignment]
    """PluginSet from `["A", ("B", 3)]` and `["C"]`."""
    return PluginSet(
        enabled=[Plugin(name=e) if isinstance(e, str) else Plugin(name=e[0], weight=e[1]) for e in enabled],
        disabled=[Plugin(name=d) for d in disabled],
    )


def pairs(pset: PluginSet) -> list[tuple[str, int | None]]:
    return [(p.name, p.weight) for p in pset.enabled]


# --------------------------------------------------------------------------- merge_plugin_set

DEFAULT_SET = ps(["A", ("B", 2), "C", ("D", 3)])


@pytest.mark.parametrize(
    ("custom", "enabled", "disabled"),
    [
        pytest.param(
            ps(), [("A", None), ("B", 2), ("C", None), ("D", 3)], [], id="empty custom keeps defaults"
        ),
        pytest.param(ps(disabled=["B"]), [("A", None), ("C", None), ("D", 3)], ["B"], id="disable one"),
        pytest.param(ps(disabled=["*"]), [], ["*"], id="star disables every default"),
        pytest.param(ps([("X", 4)], disabled=["*"]), [("X", 4)], ["*"], id="star then custom enabled only"),
        pytest.param(
            ps([("B", 7)]),
            [("A", None), ("B", 7), ("C", None), ("D", 3)],
            [],
            id="replace in place, custom weight",
        ),
        pytest.param(
            ps(["X", ("Y", 2)]),
            [("A", None), ("B", 2), ("C", None), ("D", 3), ("X", None), ("Y", 2)],
            [],
            id="extras appended in order",
        ),
        pytest.param(
            ps(["X", ("D", 1), "Y", ("A", 5)]),
            [("A", 5), ("B", 2), ("C", None), ("D", 1), ("X", None), ("Y", None)],
            [],
            id="replacements keep default order, extras keep custom order",
        ),
        pytest.param(
            ps([("B", 9)], disabled=["B"]),
            [("A", None), ("C", None), ("D", 3), ("B", 9)],
            ["B"],
            id="enabled beats disabled: moved to the end",
        ),
        pytest.param(
            ps([("B", 9)], disabled=["*"]), [("B", 9)], ["*"], id="star and re-enable a default with a weight"
        ),
        pytest.param(
            ps(["X", "X"]),
            [("A", None), ("B", 2), ("C", None), ("D", 3), ("X", None), ("X", None)],
            [],
            id="duplicate extras kept for validation",
        ),
        pytest.param(
            ps([("B", 5), ("B", 6)]),
            [("A", None), ("B", 6), ("C", None), ("D", 3), ("B", 5)],
            [],
            id="duplicate of a default: last replaces, first appended",
        ),
        pytest.param(
            ps(disabled=["A", "Nope"]),
            [("B", 2), ("C", None), ("D", 3)],
            ["A", "Nope"],
            id="unknown disabled names are carried",
        ),
    ],
)
def test_merge_plugin_set(
    custom: PluginSet, enabled: list[tuple[str, int | None]], disabled: list[str]
) -> None:
    merged = merge_plugin_set(DEFAULT_SET, custom)
    assert pairs(merged) == enabled
    assert [p.name for p in merged.disabled] == disabled


def test_merge_plugin_set_carries_default_disabled_after_custom_disabled() -> None:
    default = ps(["A", "B", "C"], disabled=["C"])
    merged = merge_plugin_set(default, ps(["C"], disabled=["A"]))
    assert pairs(merged) == [("B", None), ("C", None)]
    assert [p.name for p in merged.disabled] == ["A", "C"]


def test_merge_plugin_set_does_not_share_or_mutate_inputs() -> None:
    default = ps([("A", 1)])
    custom = ps([("A", 2)])
    merged = merge_plugin_set(default, custom)
    merged.enabled[0].weight = 99
    assert default.enabled[0].weight == 1
    assert custom.enabled[0].weight == 2


def test_merge_plugins_none_custom_is_a_copy_of_default() -> None:
    default = Plugins(multi_point=ps(["A"]), filter=ps(["F"]))
    merged = merge_plugins(default, None)
    assert merged == default
    assert merged.multi_point is not default.multi_point


def test_merge_plugins_merges_each_point_independently() -> None:
    default = Plugins(multi_point=ps(["A", "B"]), score=ps([("S", 2)]))
    custom = Plugins(multi_point=ps(disabled=["A"]), score=ps([("T", 3)]), filter=ps(["F"]))
    merged = merge_plugins(default, custom)
    assert merged.multi_point is not None and pairs(merged.multi_point) == [("B", None)]
    assert merged.score is not None and pairs(merged.score) == [("S", 2), ("T", 3)]
    assert merged.filter is not None and pairs(merged.filter) == [("F", None)]
    assert merged.bind is None


def test_merge_plugins_is_idempotent() -> None:
    default = Plugins(multi_point=ps(["A", ("B", 2), "C"]))
    custom = Plugins(multi_point=ps([("B", 5), "X"], disabled=["C", "A"]), score=ps(disabled=["*"]))
    once = merge_plugins(default, custom)
    assert merge_plugins(default, once) == once


# --------------------------------------------------------------------------- resolve_profile_plugins

DEFAULT_SCORE = [
    ("TaintToleration", 3),
    ("NodeAffinity", 2),
    ("NodeResourcesFit", 1),
    ("PodTopologySpread", 2),
    ("InterPodAffinity", 2),
    ("NodeResourcesBalancedAllocation", 1),
    ("ImageLocality", 1),
]
DEFAULT_FILTER = [
    "NodeName",
    "NodeUnschedulable",
    "TaintToleration",
    "NodeAffinity",
    "NodePorts",
    "NodeResourcesFit",
    "VolumeRestrictions",
    "PodTopologySpread",
    "InterPodAffinity",
]


def resolve(custom: dict[str, Any] | None) -> Any:
    plugins = msgspec.convert(custom, Plugins) if custom is not None else None
    merged = merge_plugins(Plugins(multi_point=default_plugins(REGISTRY)), plugins)
    return resolve_profile_plugins(merged, REGISTRY)


def without(items: list[Any], *names: str) -> list[Any]:
    return [i for i in items if (i[0] if isinstance(i, tuple) else i) not in names]


@pytest.mark.parametrize(
    ("custom", "point", "expected"),
    [
        pytest.param(None, "score", DEFAULT_SCORE, id="defaults: score order and weights"),
        pytest.param(None, "filter", DEFAULT_FILTER, id="defaults: filter order"),
        pytest.param(None, "queueSort", ["PrioritySort"], id="defaults: queueSort"),
        pytest.param(None, "bind", ["DefaultBinder"], id="defaults: bind"),
        pytest.param(None, "preEnqueue", ["SchedulingGates"], id="defaults: preEnqueue"),
        pytest.param(None, "postFilter", ["DefaultPreemption"], id="defaults: postFilter"),
        pytest.param(None, "reserve", [], id="defaults: nothing reserves"),
        pytest.param(
            {"score": {"disabled": [{"name": "ImageLocality"}]}},
            "score",
            without(DEFAULT_SCORE, "ImageLocality"),
            id="disable one default score plugin",
        ),
        pytest.param(
            {"score": {"disabled": [{"name": "TaintToleration"}]}},
            "filter",
            DEFAULT_FILTER,
            id="disabling at score leaves filter alone",
        ),
        pytest.param(
            {"score": {"disabled": [{"name": "TaintToleration"}]}},
            "preScore",
            [
                "TaintToleration",
                "NodeAffinity",
                "NodeResourcesFit",
                "PodTopologySpread",
                "InterPodAffinity",
                "NodeResourcesBalancedAllocation",
            ],
            id="disabling at score leaves preScore alone",
        ),
        pytest.param(
            {"score": {"disabled": [{"name": "*"}], "enabled": [{"name": "NodeAffinity", "weight": 5}]}},
            "score",
            [("NodeAffinity", 5)],
            id="star on score then re-enable one with a weight",
        ),
        pytest.param(
            {"score": {"disabled": [{"name": "*"}], "enabled": [{"name": "NodeAffinity", "weight": 5}]}},
            "filter",
            DEFAULT_FILTER,
            id="star on score leaves filter alone",
        ),
        pytest.param({"score": {"disabled": [{"name": "*"}]}}, "score", [], id="star on score empties it"),
        pytest.param(
            {"score": {"enabled": [{"name": "ImageLocality", "weight": 5}]}},
            "score",
            [("ImageLocality", 5), *without(DEFAULT_SCORE, "ImageLocality")],
            id="default re-enabled at score: not duplicated, its weight wins, moved first",
        ),
        pytest.param(
            {"multiPoint": {"enabled": [{"name": "CustomMulti"}]}},
            "filter",
            [*DEFAULT_FILTER, "CustomMulti"],
            id="custom multiPoint plugin lands after the defaults",
        ),
        pytest.param(
            {"multiPoint": {"enabled": [{"name": "CustomMulti"}]}},
            "score",
            [*DEFAULT_SCORE, ("CustomMulti", 1)],
            id="custom multiPoint plugin scores with weight 1",
        ),
        pytest.param(
            {"multiPoint": {"enabled": [{"name": "CustomMulti"}]}},
            "permit",
            ["CustomMulti"],
            id="custom multiPoint plugin on a point no default uses",
        ),
        pytest.param(
            {"multiPoint": {"enabled": [{"name": "CustomMulti"}]}},
            "postFilter",
            ["DefaultPreemption"],
            id="multiPoint only lands on points the class implements",
        ),
        pytest.param(
            {
                "multiPoint": {"enabled": [{"name": "CustomMulti", "weight": 4}]},
                "score": {"enabled": [{"name": "CustomMulti", "weight": 7}]},
            },
            "score",
            [("CustomMulti", 7), *DEFAULT_SCORE],
            id="multiPoint and score with different weights: score wins, once",
        ),
        pytest.param(
            {
                "multiPoint": {"enabled": [{"name": "CustomMulti", "weight": 4}]},
                "score": {"enabled": [{"name": "CustomMulti", "weight": 7}]},
            },
            "filter",
            [*DEFAULT_FILTER, "CustomMulti"],
            id="multiPoint and score: other points still expanded",
        ),
        pytest.param(
            {"multiPoint": {"enabled": [{"name": "NodeAffinity", "weight": 9}]}},
            "score",
            [("TaintToleration", 3), ("NodeAffinity", 9), *DEFAULT_SCORE[2:]],
            id="explicit multiPoint overrides the default weight in place",
        ),
        pytest.param(
            {"multiPoint": {"enabled": [{"name": "CustomMulti", "weight": 0}]}},
            "score",
            [*DEFAULT_SCORE, ("CustomMulti", 1)],
            id="weight 0 means 1",
        ),
        pytest.param(
            {"filter": {"enabled": [{"name": "CustomFilter"}]}},
            "filter",
            [*DEFAULT_FILTER, "CustomFilter"],
            id="custom filter runs after the default filters",
        ),
        pytest.param(
            {"filter": {"enabled": [{"name": "CustomFilter"}, {"name": "NodeName"}]}},
            "filter",
            ["NodeName", *without(DEFAULT_FILTER, "NodeName"), "CustomFilter"],
            id="order: overridden defaults, multiPoint, then other explicit plugins",
        ),
        pytest.param(
            {"filter": {"enabled": [{"name": "CustomFilter"}], "disabled": [{"name": "*"}]}},
            "filter",
            ["CustomFilter"],
            id="star on filter keeps only explicit filters",
        ),
        pytest.param(
            {"filter": {"enabled": [{"name": "CustomFilter"}], "disabled": [{"name": "*"}]}},
            "preFilter",
            [
                "NodeAffinity",
                "NodePorts",
                "NodeResourcesFit",
                "VolumeRestrictions",
                "PodTopologySpread",
                "InterPodAffinity",
            ],
            id="star on filter leaves preFilter alone",
        ),
        pytest.param(
            {
                "multiPoint": {
                    "enabled": [{"name": "CustomSort"}, {"name": "CustomBinder"}, {"name": "CustomFilter"}],
                    "disabled": [{"name": "*"}],
                }
            },
            "filter",
            ["CustomFilter"],
            id="star on multiPoint drops every default",
        ),
        pytest.param(
            {"multiPoint": {"enabled": [{"name": "CustomSort"}], "disabled": [{"name": "PrioritySort"}]}},
            "queueSort",
            ["CustomSort"],
            id="swap the queue sort through multiPoint",
        ),
        pytest.param(
            {"postFilter": {"disabled": [{"name": "DefaultPreemption"}]}},
            "postFilter",
            [],
            id="disable preemption",
        ),
        pytest.param(
            {
                "multiPoint": {"disabled": [{"name": "ImageLocality"}]},
                "score": {"enabled": [{"name": "ImageLocality", "weight": 2}]},
            },
            "score",
            [*without(DEFAULT_SCORE, "ImageLocality"), ("ImageLocality", 2)],
            id="disabled in multiPoint but enabled at score: only at score, last",
        ),
        pytest.param(
            {
                "score": {
                    "enabled": [
                        {"name": "CustomScore", "weight": 3},
                        {"name": "TaintToleration", "weight": 1},
                    ]
                }
            },
            "score",
            [("TaintToleration", 1), *DEFAULT_SCORE[1:], ("CustomScore", 3)],
            id="mix of override and new score plugin",
        ),
        pytest.param(
            {
                "score": {
                    "disabled": [{"name": "NodeAffinity"}],
                    "enabled": [{"name": "NodeAffinity", "weight": 4}],
                }
            },
            "score",
            [*without(DEFAULT_SCORE, "NodeAffinity"), ("NodeAffinity", 4)],
            id="enabled beats disabled at the same point (not an override: last)",
        ),
    ],
)
def test_resolve_profile_plugins(custom: dict[str, Any] | None, point: str, expected: list[Any]) -> None:
    resolved = resolve(custom)
    if expected and isinstance(expected[0], tuple):
        assert list(resolved[point]) == expected
    else:
        assert resolved.names(point) == expected


def test_resolved_covers_every_extension_point_and_helpers() -> None:
    resolved = resolve({"score": {"enabled": [{"name": "ImageLocality", "weight": 5}]}})
    assert set(resolved) == set(EXTENSION_POINT_METHODS)
    assert resolved.score_weights["ImageLocality"] == 5
    assert resolved.score_weights["TaintToleration"] == 3
    names = resolved.all_names()
    assert sorted(names) == sorted(n for n, _ in DEFAULT_ORDER)
    assert names[:3] == [
        "SchedulingGates",
        "PrioritySort",
        "NodeAffinity",
    ]  # preEnqueue, queueSort, preFilter


@pytest.mark.parametrize(
    ("plugins", "message"),
    [
        pytest.param(
            Plugins(multi_point=ps(["Nope"])),
            'multiPoint.enabled[0].name: unknown plugin "Nope"',
            id="unknown",
        ),
        pytest.param(
            Plugins(score=ps(["NodeName"])),
            'score.enabled[0].name: plugin "NodeName" does not implement score',
            id="wrong point",
        ),
        pytest.param(
            Plugins(filter=ps(["NodeName", "CustomFilter", "NodeName"])),
            'filter.enabled[2].name: Duplicate value: "NodeName"',
            id="duplicate at a point",
        ),
        pytest.param(
            Plugins(multi_point=ps(["NodeName", "NodeName"])),
            'multiPoint.enabled[1].name: Duplicate value: "NodeName"',
            id="duplicate in multiPoint",
        ),
        pytest.param(
            Plugins(score=ps([("CustomScore", (2**63 - 1) // 100 + 1)])),
            "score: total score of Score plugins could overflow",
            id="overflow",
        ),
    ],
)
def test_resolve_rejects(plugins: Plugins, message: str) -> None:
    with pytest.raises(InputError) as info:
        resolve_profile_plugins(plugins, REGISTRY)
    assert str(info.value) == message


def test_resolve_overflow_boundary_is_accepted() -> None:
    max_weight = (2**63 - 1) // 100
    resolved = resolve_profile_plugins(Plugins(score=ps([("CustomScore", max_weight)])), REGISTRY)
    assert resolved.score_weights == {"CustomScore": max_weight}


# --------------------------------------------------------------------------- properties

DEFAULT_NAMES = [n for n, _ in DEFAULT_ORDER]
POINTS = [k for k in PLUGIN_SET_KEYS if k != "multiPoint"]


@st.composite
def disabled_subsets(draw: st.DrawFn) -> dict[str, list[str]]:
    keys = draw(st.lists(st.sampled_from(PLUGIN_SET_KEYS), unique=True))
    out: dict[str, list[str]] = {}
    for key in keys:
        names = draw(st.lists(st.sampled_from([*DEFAULT_NAMES, "*"]), unique=True))
        out[key] = names
    return out


@settings(max_examples=200, deadline=None)
@given(disabled_subsets())
def test_any_disabled_subset_never_crashes_nor_duplicates(disabled: dict[str, list[str]]) -> None:
    custom = {key: {"disabled": [{"name": n} for n in names]} for key, names in disabled.items()}
    resolved = resolve(custom)
    mp_disabled = set(disabled.get("multiPoint", ()))
    for point in POINTS:
        names = resolved.names(point)
        assert len(names) == len(set(names)), point
        for name in names:
            assert point in extension_points_of(REGISTRY[name])
            assert name not in disabled.get(point, ()) and "*" not in disabled.get(point, ())
            assert name not in mp_disabled and "*" not in mp_disabled
        order = [n for n in DEFAULT_NAMES if n in names]
        assert names == order  # relative default order is preserved
        expected = [
            n
            for n in DEFAULT_NAMES
            if point in extension_points_of(REGISTRY[n])
            and not ({n, "*"} & (set(disabled.get(point, ())) | mp_disabled))
        ]
        assert names == expected
    # Validation of the same profile never crashes either: it passes or lists problems.
    cfg = KubeSchedulerConfiguration(
        api_version="kubescheduler.config.k8s.io/v1",
        kind="KubeSchedulerConfiguration",
        profiles=[KubeSchedulerProfile(plugins=msgspec.convert(custom, Plugins))],
    )
    try:
        validate(cfg, REGISTRY)
    except FieldErrors as exc:
        assert exc.errors


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.tuples(st.sampled_from(["CustomMulti", "CustomScore", *DEFAULT_NAMES]), st.integers(0, 50)),
        unique_by=lambda t: t[0],
    ),
    st.sampled_from(["score", "multiPoint"]),
)
def test_explicit_weights_win(entries: list[tuple[str, int]], key: str) -> None:
    entries = [
        (n, w) for n, w in entries if key == "multiPoint" or "score" in extension_points_of(REGISTRY[n])
    ]
    resolved = resolve({key: {"enabled": [{"name": n, "weight": w} for n, w in entries]}})
    weights = resolved.score_weights
    for name, weight in entries:
        if "score" in extension_points_of(REGISTRY[name]):
            assert weights[name] == (weight or 1)
    names = resolved.names("score")
    assert len(names) == len(set(names))

"""Validation: every rule, with the exact field path in the message."""

from __future__ import annotations

import textwrap

import pytest
from config_fakes import registry

from kubesched.config import decode_config, is_extended_resource_name
from kubesched.errors import FieldErrors

REGISTRY = registry()
HEADER = "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"


def load(body: str, header: str = HEADER) -> object:
    return decode_config(header + textwrap.dedent(body), "sched.yaml", REGISTRY)


def errors_of(body: str, header: str = HEADER) -> list[str]:
    with pytest.raises(FieldErrors) as info:
        load(body, header)
    assert info.value.source == "sched.yaml"
    return [str(e) for e in info.value.errors]


TWO_PROFILES = """
profiles:
- schedulerName: a
- schedulerName: b
"""

CASES = [
    pytest.param("parallelism: 0", "parallelism: must be greater than 0", id="parallelism"),
    pytest.param("parallelism: -3", "parallelism: must be greater than 0", id="parallelism negative"),
    pytest.param(
        "percentageOfNodesToScore: 101",
        "percentageOfNodesToScore: must be in the range [0, 100], got 101",
        id="percentage high",
    ),
    pytest.param(
        "percentageOfNodesToScore: -1",
        "percentageOfNodesToScore: must be in the range [0, 100], got -1",
        id="percentage low",
    ),
    pytest.param(
        "profiles: [{schedulerName: a, percentageOfNodesToScore: 200}]",
        "profiles[0].percentageOfNodesToScore: must be in the range [0, 100], got 200",
        id="profile percentage",
    ),
    pytest.param(
        "podInitialBackoffSeconds: 0",
        "podInitialBackoffSeconds: must be greater than 0",
        id="initial backoff",
    ),
    pytest.param(
        "podInitialBackoffSeconds: 6\npodMaxBackoffSeconds: 5",
        "podMaxBackoffSeconds: must be greater than or equal to podInitialBackoffSeconds (6)",
        id="max backoff below initial",
    ),
    pytest.param(
        "podInitialBackoffSeconds: 20",
        "podMaxBackoffSeconds: must be greater than or equal to podInitialBackoffSeconds (20)",
        id="initial above default max",
    ),
    pytest.param(
        "profiles: [{schedulerName: a}, {schedulerName: b}, {schedulerName: a}]",
        'profiles[2].schedulerName: Duplicate value: "a"',
        id="duplicate scheduler name",
    ),
    pytest.param(
        "profiles: [{schedulerName: a}, {}]",
        "profiles[1].schedulerName: must not be empty",
        id="unnamed second profile",
    ),
    pytest.param(
        "profiles: [{schedulerName: ''}]", "profiles[0].schedulerName: must not be empty", id="empty name"
    ),
    pytest.param(
        "profiles: [{plugins: {queueSort: {enabled: [{name: CustomSort}]}}}]",
        "profiles[0].plugins.queueSort: exactly one queueSort plugin is required, "
        "got PrioritySort, CustomSort",
        id="two queue sorts",
    ),
    pytest.param(
        "profiles: [{plugins: {multiPoint: {disabled: [{name: PrioritySort}]}}}]",
        "profiles[0].plugins.queueSort: exactly one queueSort plugin is required, got none",
        id="no queue sort",
    ),
    pytest.param(
        """
        profiles:
        - schedulerName: a
        - schedulerName: b
          plugins:
            queueSort: {enabled: [{name: CustomSort}], disabled: [{name: "*"}]}
        """,
        'profiles[1].plugins.queueSort: must be the same for all profiles: "CustomSort" here, '
        '"PrioritySort" in profiles[0]',
        id="queue sort differs across profiles",
    ),
    pytest.param(
        """
        profiles:
        - schedulerName: a
          plugins:
            queueSort: {enabled: [{name: SortWithArgs}], disabled: [{name: "*"}]}
        - schedulerName: b
          plugins:
            queueSort: {enabled: [{name: SortWithArgs}], disabled: [{name: "*"}]}
          pluginConfig:
          - {name: SortWithArgs, args: {reverse: true}}
        """,
        "profiles[1].pluginConfig[0].args: "
        'args of queueSort plugin "SortWithArgs" must be the same for all profiles',
        id="queue sort args differ across profiles",
    ),
    pytest.param(
        """
        profiles:
        - pluginConfig:
          - {name: DefaultPreemption, args: {}}
          - {name: DefaultPreemption, args: {}}
        """,
        'profiles[0].pluginConfig[1].name: Duplicate value: "DefaultPreemption"',
        id="duplicate pluginConfig",
    ),
    pytest.param(
        "profiles: [{plugins: {filter: {enabled: [{name: CustomFilter}, {name: Foo}]}}}]",
        'profiles[0].plugins.filter.enabled[1].name: unknown plugin "Foo"',
        id="unknown filter plugin",
    ),
    pytest.param(
        "profiles: [{plugins: {multiPoint: {enabled: [{name: CustomMulti}, {name: Foo}]}}}]",
        'profiles[0].plugins.multiPoint.enabled[1].name: unknown plugin "Foo"',
        id="unknown multiPoint plugin at the written index",
    ),
    pytest.param(
        "profiles: [{plugins: {score: {disabled: [{name: Fooo}]}}}]",
        'profiles[0].plugins.score.disabled[0].name: unknown plugin "Fooo"',
        id="unknown disabled plugin",
    ),
    pytest.param(
        "profiles: [{plugins: {multiPoint: {enabled: [{name: VolumeBinding}]}}}]",
        'profiles[0].plugins.multiPoint.enabled[0].name: unknown plugin "VolumeBinding" '
        "(an upstream default plugin kubesched does not provide yet)",
        id="upstream default not shipped",
    ),
    pytest.param(
        "profiles: [{plugins: {filter: {enabled: [{name: 'no.such.module:Plugin'}]}}}]",
        "profiles[0].plugins.filter.enabled[0].name: cannot import plugin 'no.such.module:Plugin': "
        "ModuleNotFoundError: No module named 'no'",
        id="unimportable module:Class",
    ),
    pytest.param(
        "profiles: [{plugins: {score: {enabled: [{name: CustomFilter}]}}}]",
        'profiles[0].plugins.score.enabled[0].name: plugin "CustomFilter" does not implement score',
        id="plugin at a point it does not implement",
    ),
    pytest.param(
        "profiles: [{plugins: {filter: {enabled: [{name: CustomFilter}, {name: CustomFilter}]}}}]",
        'profiles[0].plugins.filter.enabled[1].name: Duplicate value: "CustomFilter"',
        id="duplicate plugin at a point",
    ),
    pytest.param(
        "profiles: [{plugins: {multiPoint: {enabled: [{name: CustomMulti}, {name: CustomMulti}]}}}]",
        'profiles[0].plugins.multiPoint.enabled[1].name: Duplicate value: "CustomMulti"',
        id="duplicate plugin in multiPoint",
    ),
    pytest.param(
        TWO_PROFILES + "  plugins: {score: {enabled: [{name: CustomScore, weight: -1}]}}",
        "profiles[1].plugins.score.enabled[0].weight: must be positive",
        id="negative weight",
    ),
    pytest.param(
        "profiles: [{plugins: {score: {enabled: [{name: CustomScore, weight: 92233720368547759}]}}}]",
        "profiles[0].plugins.score: total score of Score plugins could overflow",
        id="score weight overflow",
    ),
    pytest.param(
        "profiles: [{plugins: {multiPoint: {disabled: [{name: DefaultBinder}]}}}]",
        "profiles[0].plugins.bind: at least one bind plugin is required",
        id="no bind plugin",
    ),
    pytest.param(
        "profiles: [{plugins: {bind: {disabled: [{name: '*'}]}}}]",
        "profiles[0].plugins.bind: at least one bind plugin is required",
        id="bind star disabled",
    ),
    pytest.param(
        "profiles: [{pluginConfig: [{name: Nope, args: {}}]}]",
        'profiles[0].pluginConfig[0].name: unknown plugin "Nope"',
        id="pluginConfig for unknown plugin",
    ),
    pytest.param(
        """
        profiles:
        - pluginConfig:
          - name: DefaultPreemption
          - name: NodeResourcesFit
            args:
              scoringStrategy:
                resources: [{name: cpu, weight: 1}, {name: memory, weight: 0}]
        """,
        "profiles[0].pluginConfig[1].args.scoringStrategy.resources[1].weight: must be in the range (0, 100]",
        id="bad weight inside args",
    ),
    pytest.param(
        "profiles: [{pluginConfig: [{name: DefaultPreemption, args: {minCandidateNodesPercentage: [1]}}]}]",
        "profiles[0].pluginConfig[0].args.minCandidateNodesPercentage: Expected `int`, got `array`",
        id="wrong type inside args",
    ),
    pytest.param(
        "profiles: [{pluginConfig: [{name: DefaultPreemption, args: {minCandidateNodes: 1}}]}]",
        "profiles[0].pluginConfig[0].args.minCandidateNodes: unknown field"
        ' (did you mean "minCandidateNodesAbsolute"?)',
        id="unknown field inside args",
    ),
    pytest.param(
        "profiles: [{pluginConfig: [{name: DefaultPreemption, args: {kind: NodeResourcesFitArgs}}]}]",
        'profiles[0].pluginConfig[0].args.kind: args for plugin "DefaultPreemption" must be of kind '
        '"DefaultPreemptionArgs", got "NodeResourcesFitArgs"',
        id="args of the wrong kind",
    ),
    pytest.param(
        "profiles: [{pluginConfig: [{name: DefaultPreemption, args: {apiVersion: v1}}]}]",
        'profiles[0].pluginConfig[0].args.apiVersion: must be "kubescheduler.config.k8s.io/v1", got "v1"',
        id="args of the wrong apiVersion",
    ),
    pytest.param(
        "leaderElection: {resourceLock: endpoints}",
        'leaderElection.resourceLock: must be "leases" when leaderElect is true, got "endpoints"',
        id="resource lock",
    ),
    pytest.param(
        "leaderElection: {leaseDuration: abc}",
        'leaderElection.leaseDuration: invalid duration "abc": '
        "expected a number and a unit (ns, us, ms, s, m, h)",
        id="bad duration",
    ),
    pytest.param(
        "leaderElection: {retryPeriod: 0s}",
        "leaderElection.retryPeriod: must be greater than 0",
        id="zero retry period",
    ),
    pytest.param(
        "leaderElection: {leaseDuration: 10s, renewDeadline: 10s}",
        "leaderElection.leaseDuration: must be greater than renewDeadline",
        id="lease not longer than renew",
    ),
    pytest.param("clientConnection: {burst: -1}", "clientConnection.burst: must not be negative", id="burst"),
    pytest.param(
        "extenders: [{filterVerb: filter}]", "extenders[0].urlPrefix: must not be empty", id="no urlPrefix"
    ),
    pytest.param(
        "extenders: [{urlPrefix: 'http://e', prioritizeVerb: p, weight: 0}]",
        "extenders[0].weight: must be positive when prioritizeVerb is set",
        id="extender weight",
    ),
    pytest.param(
        "extenders: [{urlPrefix: 'http://a', bindVerb: bind}, {urlPrefix: 'http://b', bindVerb: bind}]",
        "extenders[1].bindVerb: only one extender can implement bind (extenders[0] does)",
        id="two binders",
    ),
    pytest.param(
        "extenders: [{urlPrefix: 'http://e', managedResources: [{name: example.com/gpu}, {name: gpu}]}]",
        'extenders[0].managedResources[1].name: "gpu" '
        "is not a valid extended resource name (e.g. example.com/gpu)",
        id="managed resource name",
    ),
    pytest.param(
        "extenders: [{urlPrefix: 'http://a', managedResources: [{name: example.com/gpu}]},"
        " {urlPrefix: 'http://b', managedResources: [{name: example.com/gpu}]}]",
        'extenders[1].managedResources[0].name: Duplicate value: "example.com/gpu"',
        id="managed resource shared by two extenders",
    ),
    pytest.param(
        "extenders: [{urlPrefix: 'http://e', httpTimeout: '5'}]",
        'extenders[0].httpTimeout: invalid duration "5": expected a number and a unit (ns, us, ms, s, m, h)',
        id="extender timeout",
    ),
    pytest.param(
        "extenders: [{urlPrefix: 'http://e', httpTimeout: '-1s'}]",
        "extenders[0].httpTimeout: must not be negative",
        id="negative extender timeout",
    ),
    pytest.param(
        "extenders: [{urlPrefix: 'https://e', tlsConfig: {caData: 'not base64!'}}]",
        "extenders[0].tlsConfig.caData: must be base64-encoded",
        id="tls data",
    ),
]


@pytest.mark.parametrize(("body", "expected"), CASES)
def test_rule(body: str, expected: str) -> None:
    assert errors_of(body) == [expected]


@pytest.mark.parametrize(
    ("header", "expected"),
    [
        (
            "apiVersion: kubescheduler.config.k8s.io/v1beta3\nkind: KubeSchedulerConfiguration\n",
            'apiVersion: must be "kubescheduler.config.k8s.io/v1", got "kubescheduler.config.k8s.io/v1beta3"',
        ),
        (
            "kind: KubeSchedulerConfiguration\n",
            'apiVersion: must be "kubescheduler.config.k8s.io/v1", got ""',
        ),
        (
            "apiVersion: kubescheduler.config.k8s.io/v1\nkind: Config\n",
            'kind: must be "KubeSchedulerConfiguration", got "Config"',
        ),
    ],
)
def test_type_meta(header: str, expected: str) -> None:
    assert errors_of("parallelism: 2", header=header) == [expected]


def test_every_problem_is_reported_at_once() -> None:
    errors = errors_of(
        """
        parallelism: 0
        profiles:
        - schedulerName: a
          plugins: {filter: {enabled: [{name: Foo}]}}
        - schedulerName: a
        extenders: [{}]
        """
    )
    assert errors == [
        "parallelism: must be greater than 0",
        'profiles[0].plugins.filter.enabled[0].name: unknown plugin "Foo"',
        'profiles[1].schedulerName: Duplicate value: "a"',
        "extenders[0].urlPrefix: must not be empty",
    ]


def test_error_line_names_the_file_and_all_problems() -> None:
    with pytest.raises(FieldErrors) as info:
        load("parallelism: 0\npodInitialBackoffSeconds: 0")
    assert str(info.value) == (
        "sched.yaml: parallelism: must be greater than 0; podInitialBackoffSeconds: must be greater than 0"
    )


VALID = [
    pytest.param("", id="header only"),
    pytest.param(TWO_PROFILES, id="two profiles"),
    pytest.param(
        "leaderElection: {leaderElect: false, resourceLock: endpoints}", id="lock ignored without election"
    ),
    pytest.param("percentageOfNodesToScore: 100", id="percentage 100"),
    pytest.param("podInitialBackoffSeconds: 10", id="initial equals max"),
    pytest.param(
        "profiles: [{plugins: {multiPoint: {disabled: [{name: VolumeBinding}, {name: NodeVolumeLimits}]}}}]",
        id="disabling upstream defaults kubesched lacks",
    ),
    pytest.param(
        "profiles: [{plugins: {filter: {enabled: [{name: CustomFilter}]}}, pluginConfig: [{name: RawArgs, "
        "args: {whatever: [1, {x: y}]}}]}]",
        id="custom filter and raw args",
    ),
    pytest.param(
        "profiles: [{plugins: {score: {enabled: [{name: CustomScore, weight: 0}]}}}]", id="weight zero"
    ),
    pytest.param(
        """
        profiles:
        - pluginConfig:
          - name: NodeResourcesFit
            args:
              apiVersion: kubescheduler.config.k8s.io/v1
              kind: NodeResourcesFitArgs
              scoringStrategy: {type: MostAllocated}
        """,
        id="args with upstream TypeMeta",
    ),
    pytest.param(
        """
        profiles:
        - schedulerName: a
          plugins:
            queueSort: {enabled: [{name: SortWithArgs}], disabled: [{name: "*"}]}
          pluginConfig: [{name: SortWithArgs, args: {reverse: true}}]
        - schedulerName: b
          plugins:
            queueSort: {enabled: [{name: SortWithArgs}], disabled: [{name: "*"}]}
          pluginConfig: [{name: SortWithArgs, args: {reverse: true}}]
        """,
        id="same queue sort args in every profile",
    ),
    pytest.param(
        "extenders: [{urlPrefix: 'http://a', bindVerb: bind, prioritizeVerb: p, managedResources: "
        "[{name: example.com/gpu, ignoredByScheduler: true}]}, {urlPrefix: 'http://b', filterVerb: f}]",
        id="extenders",
    ),
    pytest.param(
        "extenders: [{urlPrefix: 'https://e', enableHTTPS: true, "
        "tlsConfig: {insecure: true, caData: aGVsbG8=}}]",
        id="tls",
    ),
    pytest.param(
        "healthzBindAddress: 0.0.0.0:10251\nmetricsBindAddress: 0.0.0.0:10251", id="deprecated addresses"
    ),
]


@pytest.mark.parametrize("body", VALID)
def test_valid(body: str) -> None:
    load(body)


@pytest.mark.parametrize(
    ("name", "ok"),
    [
        ("example.com/gpu", True),
        ("nvidia.com/gpu", True),
        ("example.com/a_b.c-d", True),
        ("gpu", False),
        ("kubernetes.io/gpu", False),
        ("foo.kubernetes.io/gpu", False),
        ("requests.example.com/gpu", False),
        ("Example.com/gpu", False),
        ("example.com/", False),
        ("example.com/-gpu", False),
        ("example.com/a/b", False),
        ("example.com/" + "x" * 64, False),
        ("example.com/" + "x" * 63, True),
    ],
)
def test_extended_resource_names(name: str, ok: bool) -> None:
    assert is_extended_resource_name(name) is ok

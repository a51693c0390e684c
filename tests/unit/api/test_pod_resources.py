"""Pod requests (upstream `k8s.io/component-helpers/resource/helpers.go`): containers, init containers and
sidecars, pod-level, overhead."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kubesched.api.objects import Container, Pod, PodSpec, ResourceRequirements
from kubesched.api.quantity import QuantityError
from kubesched.api.resources import (
    DEFAULT_MEMORY_REQUEST,
    DEFAULT_MILLI_CPU_REQUEST,
    is_scalar_resource,
    pod_container_non_zero_requests,
    pod_non_zero_requests,
    pod_requests,
)

Mi = 2**20
Gi = 2**30


GPU = "nvidia.com/gpu"


def c(restart_policy: str | None = None, /, **requests: Any) -> Container:
    """A container requesting `requests`."""
    return Container(
        name="c", resources=ResourceRequirements(requests=requests), restart_policy=restart_policy
    )


def pod(
    containers: list[Container] | None = None,
    init: list[Container] | None = None,
    pod_level: dict[str, Any] | None = None,
    overhead: dict[str, Any] | None = None,
) -> Pod:
    return Pod(
        spec=PodSpec(
            containers=containers or [],
            init_containers=init or [],
            resources=ResourceRequirements(requests=pod_level) if pod_level is not None else None,
            overhead=overhead or {},
        )
    )


@pytest.mark.parametrize(
    ("p", "expected"),
    [
        pytest.param(pod(), {}, id="empty"),
        pytest.param(pod([c()]), {}, id="no requests: nothing (no defaults)"),
        pytest.param(
            pod([c(cpu="100m", memory="1Gi"), c(cpu="200m", memory="512Mi")]),
            {"cpu": 300, "memory": Gi + 512 * Mi},
            id="containers summed",
        ),
        pytest.param(
            pod([c(cpu="0.5m", memory="0.5"), c(cpu="0.5m", memory="0.5")]),
            {"cpu": 1, "memory": 1},
            id="summed exactly, rounded once",
        ),
        pytest.param(
            pod([c(cpu=1, **{GPU: 2, "ephemeral-storage": "1Gi"})]),
            {"cpu": 1000, "nvidia.com/gpu": 2, "ephemeral-storage": Gi},
            id="units per resource",
        ),
        pytest.param(
            pod([c(cpu=1, memory="1Gi")], init=[c(cpu=2, memory="100Mi")]),
            {"cpu": 2000, "memory": Gi},
            id="init max per resource",
        ),
        pytest.param(
            pod([c(cpu=1)], init=[c(cpu=3), c(cpu=2)]),
            {"cpu": 3000},
            id="init containers run one at a time",
        ),
        pytest.param(
            # sidecar(1) then init(5): the init runs beside the sidecar -> peak 6 > 1 + 1
            pod([c(cpu=1)], init=[c("Always", cpu=1), c(cpu=5)]),
            {"cpu": 6000},
            id="init counts sidecars started before it",
        ),
        pytest.param(
            # sidecars 1 and 2 keep running: 1 + 1 + 2 = 4 > peak max(1, 1+1, 3) = 3
            pod([c(cpu=1)], init=[c("Always", cpu=1), c(cpu=1), c("Always", cpu=2)]),
            {"cpu": 4000},
            id="sidecars add to the regular containers",
        ),
        pytest.param(
            # init(5) runs before the sidecar starts: peak 5, not 6
            pod([c(cpu=1)], init=[c(cpu=5), c("Always", cpu=1)]),
            {"cpu": 5000},
            id="sidecars started later do not add to earlier inits",
        ),
        pytest.param(
            pod([c(cpu=1)], init=[c("OnFailure", cpu=1), c(cpu=1)]),
            {"cpu": 1000},
            id="only restartPolicy Always is a sidecar",
        ),
        pytest.param(
            pod([c(memory="1Gi")], init=[c(**{GPU: 1})]),
            {"memory": Gi, "nvidia.com/gpu": 1},
            id="resources only in init containers still count",
        ),
        pytest.param(
            pod([c(cpu="500m", memory="128Mi", **{GPU: 1})], pod_level={"cpu": 2, "memory": "1Gi"}),
            {"cpu": 2000, "memory": Gi, "nvidia.com/gpu": 1},
            id="pod-level requests replace cpu and memory",
        ),
        pytest.param(
            pod([c(cpu="500m", memory="128Mi")], pod_level={"memory": "1Gi"}),
            {"cpu": 500, "memory": Gi},
            id="pod-level memory only",
        ),
        pytest.param(
            pod([c(cpu="500m", **{GPU: 1})], pod_level={"nvidia.com/gpu": 4}),
            {"cpu": 500, "nvidia.com/gpu": 1},
            id="unsupported pod-level resources are ignored",
        ),
        pytest.param(
            pod([c(cpu="500m")], pod_level={"cpu": "100m"}),
            {"cpu": 100},
            id="pod-level may be lower than the containers",
        ),
        pytest.param(
            pod([c(cpu="500m")], pod_level={"cpu": 2}, overhead={"cpu": "250m", "memory": "120Mi"}),
            {"cpu": 2250, "memory": 120 * Mi},
            id="overhead added after pod-level",
        ),
        pytest.param(
            pod([c(cpu="1", memory="0")], overhead={"cpu": "100m"}),
            {"cpu": 1100, "memory": 0},
            id="overhead and explicit zero",
        ),
    ],
)
def test_pod_requests(p: Pod, expected: dict[str, int]) -> None:
    assert pod_requests(p) == expected


@pytest.mark.parametrize(
    ("p", "expected"),
    [
        pytest.param(pod(), (0, 0), id="no containers"),
        pytest.param(pod([c()]), (100, 200 * Mi), id="missing -> defaults"),
        pytest.param(pod([c(), c()]), (200, 400 * Mi), id="defaults per container"),
        pytest.param(pod([c(cpu=0)]), (0, 200 * Mi), id="explicit zero stays zero"),
        pytest.param(pod([c(memory="1Gi")]), (100, Gi), id="only cpu missing"),
        pytest.param(pod([c(cpu="2")]), (2000, 200 * Mi), id="only memory missing"),
        pytest.param(
            pod([c(cpu="50m", memory="50Mi")], init=[c()]),
            (100, 200 * Mi),
            id="init containers get defaults too",
        ),
        pytest.param(
            pod([c(cpu="50m", memory="50Mi")], init=[c("Always")]),
            (150, 250 * Mi),
            id="sidecar defaults add",
        ),
        pytest.param(pod([c()], pod_level={"cpu": "1"}), (1000, 200 * Mi), id="pod-level overrides defaults"),
        pytest.param(
            pod([c(memory="1Gi"), c()], pod_level={"cpu": "1"}),
            (1000, Gi),
            id="pod-level set: no default for a resource some container names",
        ),
        pytest.param(
            pod([c(), c()], pod_level={"cpu": "1"}),
            (1000, 400 * Mi),
            id="pod-level set: defaults for a resource nobody names",
        ),
        pytest.param(
            pod([c()], overhead={"cpu": "10m", "memory": "1Mi"}), (110, 201 * Mi), id="plus overhead"
        ),
    ],
)
def test_pod_non_zero_requests(p: Pod, expected: tuple[int, int]) -> None:
    assert pod_non_zero_requests(p) == expected


def test_default_constants() -> None:
    assert DEFAULT_MILLI_CPU_REQUEST == 100
    assert DEFAULT_MEMORY_REQUEST == 209715200


@pytest.mark.parametrize(
    ("p", "message"),
    [
        (
            pod([c(cpu=1), c(memory="12XB")]),
            'spec.containers[1].resources.requests.memory: invalid quantity "12XB"',
        ),
        (
            pod([c(cpu=1)], init=[c(cpu="1", memory="1"), c(cpu="one")]),
            'spec.initContainers[1].resources.requests.cpu: invalid quantity "one"',
        ),
        (
            pod([c(**{GPU: "1 "})]),
            'spec.containers[0].resources.requests[nvidia.com/gpu]: invalid quantity "1 "',
        ),
        (
            pod([c(cpu=1)], pod_level={"memory": "lots"}),
            'spec.resources.requests.memory: invalid quantity "lots"',
        ),
        (pod([c(cpu=1)], overhead={"cpu": "1.2.3"}), 'spec.overhead.cpu: invalid quantity "1.2.3"'),
    ],
)
def test_bad_quantities_name_the_field(p: Pod, message: str) -> None:
    with pytest.raises(QuantityError) as info:
        pod_requests(p)
    assert str(info.value) == message
    with pytest.raises(QuantityError) as info:
        pod_non_zero_requests(p)
    assert str(info.value) == message


@pytest.mark.parametrize(
    ("name", "scalar"),
    [
        ("nvidia.com/gpu", True),
        ("example.com/foo", True),
        ("hugepages-2Mi", True),
        ("hugepages-1Gi", True),
        ("attachable-volumes-aws-ebs", True),
        ("kubernetes.io/something", True),  # prefixed native: upstream counts it too
        ("cpu", False),
        ("memory", False),
        ("pods", False),
        ("ephemeral-storage", False),
        ("storage", False),
        ("foo", False),
        ("requests.example.com/foo", False),
        ("Example.com/foo", False),  # domain must be lowercase
        ("example.com/a/b", False),
        ("example.com/", False),
        ("example.com/-bad", False),
    ],
)
def test_is_scalar_resource(name: str, scalar: bool) -> None:
    assert is_scalar_resource(name) is scalar


# --------------------------------------------------------------------------- properties

maybe_milli = st.none() | st.integers(min_value=0, max_value=10_000)


def container_from(cpu: int | None, memory: int | None, sidecar: bool) -> Container:
    requests: dict[str, str | int | float] = {}
    if cpu is not None:
        requests["cpu"] = f"{cpu}m"
    if memory is not None:
        requests["memory"] = memory
    return Container(
        resources=ResourceRequirements(requests=requests), restart_policy="Always" if sidecar else None
    )


containers = st.lists(st.builds(container_from, maybe_milli, maybe_milli, st.just(False)), max_size=4)
init_containers = st.lists(st.builds(container_from, maybe_milli, maybe_milli, st.booleans()), max_size=4)


@given(containers, init_containers)
def test_non_zero_never_below_real_requests(regular: list[Container], init: list[Container]) -> None:
    p = pod(regular, init)
    real = pod_requests(p)
    cpu, memory = pod_non_zero_requests(p)
    assert cpu >= real.get("cpu", 0)
    assert memory >= real.get("memory", 0)


@given(containers, init_containers, st.integers(min_value=0, max_value=10_000))
def test_adding_a_container_never_lowers_requests(
    regular: list[Container], init: list[Container], cpu: int
) -> None:
    before = pod_requests(pod(regular, init)).get("cpu", 0)
    after = pod_requests(pod([*regular, container_from(cpu, None, False)], init)).get("cpu", 0)
    assert after >= before
    assert after <= before + cpu


@given(containers, init_containers, st.integers(min_value=0, max_value=10_000))
def test_overhead_adds_exactly(regular: list[Container], init: list[Container], cpu: int) -> None:
    base = pod_requests(pod(regular, init)).get("cpu", 0)
    assert pod_requests(pod(regular, init, overhead={"cpu": f"{cpu}m"}))["cpu"] == base + cpu


@given(st.lists(st.integers(min_value=0, max_value=10_000), max_size=5))
def test_without_init_containers_cpu_is_the_sum(milli: list[int]) -> None:
    p = pod([container_from(m, None, False) for m in milli])
    assert pod_requests(p).get("cpu", 0) == sum(milli)


@pytest.mark.parametrize(
    ("p", "expected"),
    [
        pytest.param(pod([c()]), {"cpu": 100, "memory": 200 * Mi}, id="defaults"),
        pytest.param(
            pod([c(), c(cpu="1")], pod_level={"cpu": "4", "memory": "4Gi"}),
            {"cpu": 1100, "memory": 400 * Mi},
            id="pod-level requests ignored, containers defaulted",
        ),
        pytest.param(
            pod([c(cpu="1", memory="1Gi", **{GPU: 1})], overhead={"cpu": "100m"}),
            {"cpu": 1100, "memory": Gi, GPU: 1},
            id="extended resources and overhead kept",
        ),
    ],
)
def test_pod_container_non_zero_requests(p: Pod, expected: dict[str, int]) -> None:
    """NodeResourcesFit's scorer view (v1.37.2): containers only, with the 100m / 200Mi defaults."""
    assert pod_container_non_zero_requests(p) == expected

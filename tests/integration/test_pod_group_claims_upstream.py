"""The v1.37.2 API server, with GenericWorkload and DRAWorkloadResourceClaims on, refuses the same
PodGroup `resourceClaims` entries as kubesched's loader, with the texts kubesched gives
(tests/unit/api/pod_group_claim_cases.py)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from tests.unit.api.pod_group_claim_cases import CASES

from kubesched.api.loader import load_documents
from kubesched.errors import InputError
from kubesched.harness.controlplane.plane import ControlPlane
from kubesched.harness.fake_nodes import ApiClient, ApiError

GATES = {"GenericWorkload": True, "DRAWorkloadResourceClaims": True}
PODGROUPS = "/apis/scheduling.k8s.io/v1beta1/namespaces/default/podgroups"


@pytest.fixture(scope="module")
def api() -> Iterator[ApiClient]:
    with (
        ControlPlane(runtime_config=("scheduling.k8s.io/v1beta1=true",), feature_gates=GATES) as cp,
        ApiClient.for_control_plane(cp) as client,
    ):
        yield client


def _pod_group(name: str, claims: list[dict[str, Any]]) -> dict[str, Any]:
    spec = {"schedulingPolicy": {"gang": {"minCount": 1}}, "resourceClaims": claims}
    return {
        "apiVersion": "scheduling.k8s.io/v1beta1",
        "kind": "PodGroup",
        "metadata": {"name": name},
        "spec": spec,
    }


@pytest.mark.parametrize(("n", "case"), list(enumerate(CASES)))
def test_the_server_refuses_what_the_loader_refuses_with_its_first_error_first(
    api: ApiClient, n: int, case: tuple[list[dict[str, str]], str, str]
) -> None:
    claims, where, message = case
    body = _pod_group(f"bad-{n}", claims)
    with pytest.raises(ApiError) as server:
        api.post(PODGROUPS, body)
    assert server.value.status == 422
    with pytest.raises(InputError) as ours:
        load_documents(json.dumps(body), "in.json")
    causes = server.value.body["details"]["causes"]
    first = causes[0]
    assert str(ours.value) == f"in.json: {first['field']}: {first['message']}"
    assert (first["field"], first["message"]) == (f"spec.resourceClaims{where}", message)


def test_the_server_accepts_a_claim_name_with_dots_as_the_loader_does(api: ApiClient) -> None:
    body = _pod_group("dots", [{"name": "a", "resourceClaimName": "c.d"}])
    api.post(PODGROUPS, body)
    load_documents(json.dumps(body), "in.json")

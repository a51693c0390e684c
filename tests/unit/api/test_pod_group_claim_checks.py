"""A PodGroup's (or a Workload template's) shared `resourceClaims` are refused as the v1.37.2 API
server refuses them. The texts are the server's own for the same entries, posted with
GenericWorkload and DRAWorkloadResourceClaims on (tests/integration/test_pod_group_claims_upstream.py
posts them again); with several errors the server lists them all, kubesched names its first."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from tests.unit.api.pod_group_claim_cases import CASES

from kubesched.api.loader import load_documents
from kubesched.errors import InputError


def _pod_group(claims: list[dict[str, Any]]) -> str:
    spec = {"schedulingPolicy": {"gang": {"minCount": 1}}, "resourceClaims": claims}
    obj = {
        "apiVersion": "scheduling.k8s.io/v1beta1",
        "kind": "PodGroup",
        "metadata": {"name": "g"},
        "spec": spec,
    }
    return json.dumps(obj)


def _workload(claims: list[dict[str, Any]]) -> str:
    template = {"name": "t", "schedulingPolicy": {"gang": {"minCount": 1}}, "resourceClaims": claims}
    obj = {
        "apiVersion": "scheduling.k8s.io/v1beta1",
        "kind": "Workload",
        "metadata": {"name": "w"},
        "spec": {"podGroupTemplates": [template]},
    }
    return json.dumps(obj)


def _error(text: str) -> str | None:
    try:
        load_documents(text, "in.json")
    except InputError as err:
        return str(err)
    return None


@pytest.mark.parametrize(("claims", "where", "message"), CASES)
def test_a_pod_groups_claims_are_refused_with_the_servers_words(
    claims: list[dict[str, str]], where: str, message: str
) -> None:
    assert _error(_pod_group(claims)) == f"in.json: spec.resourceClaims{where}: {message}"


@pytest.mark.parametrize(("claims", "where", "message"), CASES)
def test_a_workload_templates_claims_are_refused_the_same_way(
    claims: list[dict[str, str]], where: str, message: str
) -> None:
    path = f"spec.podGroupTemplates[0].resourceClaims{where}"
    assert _error(_workload(claims)) == f"in.json: {path}: {message}"


def test_a_claim_name_with_dots_is_accepted_as_the_server_accepts_it() -> None:
    assert _error(_pod_group([{"name": "a", "resourceClaimName": "c.d"}])) is None


_LABEL_RE = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
_SUBDOMAIN_RE = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
names = st.text(alphabet="ab-.Z_9", max_size=8)
entries = st.fixed_dictionaries(
    {"name": names},
    optional={"resourceClaimName": names, "resourceClaimTemplateName": names},
)


def _valid(claims: list[dict[str, str]]) -> bool:
    """The server's rules, stated plainly: at most four, names unique, each a DNS label, exactly one
    of claim and template, that one a DNS subdomain."""
    if len(claims) > 4 or len({c["name"] for c in claims}) < len(claims):
        return False
    for c in claims:
        refs = [v for k, v in c.items() if k != "name"]
        if len(refs) != 1 or not _LABEL_RE.fullmatch(c["name"]) or not _SUBDOMAIN_RE.fullmatch(refs[0]):
            return False
    return True


@given(st.lists(entries, max_size=6))
def test_an_entry_list_loads_exactly_when_the_servers_rules_allow_it(claims: list[dict[str, str]]) -> None:
    error = _error(_pod_group(claims))
    assert (error is None) == _valid(claims), error
    if error is not None:
        assert error.startswith("in.json: spec.resourceClaims")

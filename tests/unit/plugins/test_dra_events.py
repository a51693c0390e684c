"""DynamicResources' queueing hints, case by case as v1.37.2's `isSchedulableAfterClaimChange` and
`isSchedulableAfterTargetPodUpdate` answer them (dynamicresources/dynamicresources.go)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import msgspec
import pytest
from dra_fixtures import claim, exactly

from kubesched.api.meta import OwnerReference
from kubesched.api.objects import Pod
from kubesched.api.resource import ResourceClaim
from kubesched.framework.events import ActionType, QueueingHint, QueueingHintFn, Resource
from kubesched.plugins.dynamic_resources import DynamicResources
from kubesched.plugins.dynamic_resources.claims import claim_index, may_resolve_to, resolve_pod_claims
from kubesched.scheduler.queueing_hints import pod_update_events

Q, S = QueueingHint.QUEUE, QueueingHint.SKIP
POD_UID = "uid-p"


class _Handle:
    def __init__(self, claims: Sequence[ResourceClaim]) -> None:
        self.claims = list(claims)

    def lister(self, kind: str) -> Sequence[Any]:
        return self.claims if kind == "ResourceClaim" else ()

    def now(self) -> float:
        return 0.0


def _pod(*entries: dict[str, Any], statuses: Sequence[tuple[str, str | None]] = ()) -> Pod:
    return msgspec.convert(
        {
            "metadata": {"name": "p", "namespace": "default", "uid": POD_UID},
            "spec": {"containers": [{"name": "c"}], "resourceClaims": list(entries)},
            "status": {"resourceClaimStatuses": [{"name": n, "resourceClaimName": c} for n, c in statuses]},
        },
        Pod,
    )


def _allocated(c: ResourceClaim) -> ResourceClaim:
    allocation = {"devices": {"results": [{"request": "gpu", "driver": "d", "pool": "n1", "device": "g0"}]}}
    status = msgspec.convert({"allocation": allocation}, type(c.status))
    return msgspec.structs.replace(c, status=status)


def _with_finalizer(c: ResourceClaim) -> ResourceClaim:
    meta = msgspec.structs.replace(c.metadata, finalizers=["resource.kubernetes.io/delete-protection"])
    return msgspec.structs.replace(c, metadata=meta)


def _owned_by_pod(c: ResourceClaim) -> ResourceClaim:
    ref = OwnerReference(api_version="v1", kind="Pod", name="p", uid=POD_UID, controller=True)
    return msgspec.structs.replace(c, metadata=msgspec.structs.replace(c.metadata, owner_references=[ref]))


MINE = claim("mine", [exactly()])
OTHER = claim("other", [exactly()])
EXTENDED = _owned_by_pod(claim("p-extended-resources-x", [exactly()]))
USES_MINE = _pod({"name": "gpu", "resourceClaimName": "mine"})
NO_CLAIMS = _pod()


def _hint(resource: Resource, listed: Sequence[ResourceClaim]) -> QueueingHintFn:
    plugin = DynamicResources(handle=_Handle(listed))
    found = [r.hint for r in plugin.events_to_register() if r.event.resource == resource]
    assert len(found) == 1 and found[0] is not None
    return found[0]


# (pod, claims listed after the event, old, new, hint)
CLAIM_CASES = [
    pytest.param(USES_MINE, [MINE], None, MINE, Q, id="own-claim-created"),
    pytest.param(USES_MINE, [MINE, OTHER], None, OTHER, S, id="unrelated-claim-created"),
    pytest.param(USES_MINE, [MINE], MINE, _allocated(MINE), Q, id="own-claim-status-changed"),
    pytest.param(USES_MINE, [_with_finalizer(MINE)], MINE, _with_finalizer(MINE), S, id="same-status"),
    pytest.param(USES_MINE, [MINE, OTHER], _allocated(OTHER), OTHER, Q, id="other-claim-deallocated"),
    pytest.param(NO_CLAIMS, [OTHER], _allocated(OTHER), OTHER, Q, id="dealloc-pod-without-claims"),
    pytest.param(USES_MINE, [OTHER], _allocated(OTHER), OTHER, S, id="deallocation-but-own-claim-missing"),
    pytest.param(USES_MINE, [MINE], _allocated(OTHER), None, Q, id="allocated-claim-deleted"),
    pytest.param(USES_MINE, [], MINE, None, S, id="unallocated-own-claim-deleted"),
    pytest.param(USES_MINE, [MINE, EXTENDED], None, EXTENDED, S, id="pod-owned-claim-not-in-spec-created"),
    pytest.param(USES_MINE, [MINE], None, USES_MINE, Q, id="not-a-claim"),
]


@pytest.mark.parametrize(("pod", "listed", "old", "new", "expected"), CLAIM_CASES)
def test_claim_change_hint(
    pod: Pod, listed: list[ResourceClaim], old: Any, new: Any, expected: QueueingHint
) -> None:
    assert _hint(Resource.RESOURCE_CLAIM, listed)(pod, old, new) is expected


@pytest.mark.parametrize(("pod", "listed", "old", "new", "expected"), CLAIM_CASES)
def test_claim_index_keeps_every_pod_the_hint_queues(
    pod: Pod, listed: list[ResourceClaim], old: Any, new: Any, expected: QueueingHint
) -> None:
    """The queue asks the hint only for pods the index names: those it queues must be among them,
    and a created claim names only the pods that name it."""
    plugin = DynamicResources(handle=_Handle(listed))
    (reg,) = [r for r in plugin.events_to_register() if r.event.resource == Resource.RESOURCE_CLAIM]
    assert reg.index is not None
    event_keys = reg.index.event_keys(old, new)
    visited = event_keys is None or bool(set(event_keys) & set(reg.index.pod_keys(pod)))
    assert visited or expected is S
    if old is None and isinstance(new, ResourceClaim):
        assert event_keys == (f"default/{new.metadata.name}",)


GENERATED = _owned_by_pod(claim("p-gpu-x", [exactly()]))
FROM_TEMPLATE = {"name": "gpu", "resourceClaimTemplateName": "t"}


@pytest.mark.parametrize(
    ("new", "listed", "expected"),
    [
        pytest.param(_pod(FROM_TEMPLATE, statuses=[("gpu", "p-gpu-x")]), [GENERATED], Q, id="claim-exists"),
        pytest.param(_pod(FROM_TEMPLATE, statuses=[("gpu", "p-gpu-x")]), [], S, id="claim-not-listed-yet"),
        pytest.param(_pod(FROM_TEMPLATE, statuses=[("gpu", None)]), [], Q, id="no-claim-needed"),
        pytest.param(
            _pod(FROM_TEMPLATE, statuses=[("gpu", "p-gpu-x")]),
            [claim("p-gpu-x", [exactly()])],
            S,
            id="claim-not-owned-by-pod",
        ),
    ],
)
def test_target_pod_update_hint(new: Pod, listed: list[ResourceClaim], expected: QueueingHint) -> None:
    old = _pod(FROM_TEMPLATE)
    assert _hint(Resource.TARGET_POD, listed)(old, old, new) is expected


def test_generated_claim_status_is_what_the_pod_event_reports() -> None:
    """The TargetPod row is reached: the queue turns a status entry into UpdatePodGeneratedResourceClaim."""
    old = _pod(FROM_TEMPLATE)
    new = _pod(FROM_TEMPLATE, statuses=[("gpu", "p-gpu-x")])
    registered = [r.event for r in DynamicResources(handle=_Handle([])).events_to_register()]
    events = pod_update_events(old, new)
    assert [e.action for e in events] == [ActionType.UPDATE_POD_GENERATED_RESOURCE_CLAIM]
    assert any(r.matches(events[0]) for r in registered)


@pytest.mark.parametrize(
    ("pod", "listed", "named"),
    [
        pytest.param(USES_MINE, [MINE, OTHER], {"mine"}, id="by-name"),
        pytest.param(
            _pod(FROM_TEMPLATE, statuses=[("gpu", "p-gpu-x")]), [GENERATED], {"p-gpu-x"}, id="generated"
        ),
        # Not owned by the pod: resolving fails, the cheap test still says "maybe".
        pytest.param(
            _pod(FROM_TEMPLATE, statuses=[("gpu", "p-gpu-x")]),
            [claim("p-gpu-x", [exactly()])],
            {"p-gpu-x"},
            id="unowned",
        ),
        pytest.param(_pod(FROM_TEMPLATE), [GENERATED], set(), id="not-generated-yet"),
        pytest.param(_pod(FROM_TEMPLATE, statuses=[("gpu", None)]), [GENERATED], set(), id="none-needed"),
        pytest.param(NO_CLAIMS, [MINE], set(), id="no-claims"),
    ],
)
def test_may_resolve_to_is_false_only_for_claims_the_pod_cannot_resolve_to(
    pod: Pod, listed: list[ResourceClaim], named: set[str]
) -> None:
    claims = claim_index(listed)
    resolved = resolve_pod_claims(pod, claims)
    for c in listed:
        maybe = may_resolve_to(pod, claims, c.metadata.uid)
        assert maybe == (c.metadata.name in named)
        if not isinstance(resolved, str) and any(r.claim is c for r in resolved):
            assert maybe

"""The binding decisions VolumeBinding assumed (Reserve) or made (PreBind) that listers do not show.

As upstream's assume cache: a static PV chosen for a claim counts as claimed, a claim to provision
counts as provisioned for its node, so the next pod's Filter does not count on them again.
"""

from __future__ import annotations

from kubesched.plugins.volume_binding.claims import ClaimId, Decision

__all__ = ["AssumeCache"]


class AssumeCache:
    """Binding decisions the listers do not show (yet, or ever in the simulator).

    * `pv -> claim`: a static PV chosen for a claim (its claimRef, as the API would show it);
    * `claim -> node`: a claim to be provisioned for a node (its selected-node annotation);
    * `claim -> pv`: a static binding PreBind completed (the claim counts as bound).

    Entries made by Reserve are remembered per pod, so Unreserve can revert exactly those;
    PreBind commits them. The listers win whenever they show a binding themselves.
    """

    def __init__(self) -> None:
        self._pv_claims: dict[str, ClaimId] = {}
        self._claim_nodes: dict[str, tuple[str, str]] = {}
        self._claim_pvs: dict[str, tuple[str, str]] = {}
        self._undo: dict[str, list[tuple[str, str]]] = {}

    def claim_of(self, pv_name: str) -> ClaimId | None:
        return self._pv_claims.get(pv_name)

    def bound_volume(self, key: str, uid: str) -> str:
        entry = self._claim_pvs.get(key)
        return entry[1] if entry is not None and entry[0] == uid else ""

    def selected_node(self, key: str, uid: str) -> str:
        entry = self._claim_nodes.get(key)
        return entry[1] if entry is not None and entry[0] == uid else ""

    def assume(self, owner: str, decision: Decision) -> None:
        undo = self._undo.setdefault(owner, [])
        for claim, pv_name in decision.static:
            if pv_name not in self._pv_claims:
                self._pv_claims[pv_name] = claim.id
                undo.append(("pv", pv_name))
        for claim in decision.provision:
            if claim.key not in self._claim_nodes:
                self._claim_nodes[claim.key] = (claim.id.uid, decision.node)
                undo.append(("node", claim.key))

    def revert(self, owner: str) -> None:
        for kind, name in reversed(self._undo.pop(owner, [])):
            if kind == "pv":
                self._pv_claims.pop(name, None)
            else:
                self._claim_nodes.pop(name, None)

    def commit(self, owner: str, decision: Decision) -> None:
        self._undo.pop(owner, None)
        for claim, pv_name in decision.static:
            self._claim_pvs[claim.key] = (claim.id.uid, pv_name)
            self._pv_claims.setdefault(pv_name, claim.id)

    def __len__(self) -> int:
        return len(self._pv_claims) + len(self._claim_nodes)

"""Names, hashes and identities of the objects the simulated controllers create.

They have the shape the controllers give them: `web-7c5ddbdf54-x2k9p` for a Deployment's pod, a
`pod-template-hash` of 8-10 characters from the controllers' safe alphabet, the 5-character random
suffix the API server appends to a `generateName`. The hash is an FNV-1a 32-bit hash of the
template, as upstream's; upstream hashes Go's in-memory dump of the full template, which cannot be
reproduced here, so the values differ from a real cluster's while keeping their properties: equal
templates hash equal, and a changed template gets a new hash. Random suffixes come from a generator
seeded by the simulation's seed and the owner, so a run is reproducible.
"""

from __future__ import annotations

import random
import uuid
from typing import Final

import msgspec

from kubesched.api.controllers import PodTemplateSpec
from kubesched.api.meta import controller_reference
from kubesched.api.objects import Container
from kubesched.api.quantity import QuantityError, quantity_nanos

__all__ = [
    "POD_TEMPLATE_HASH_LABEL",
    "NameSource",
    "canonical_template",
    "controller_reference",
    "fnv32a",
    "object_uid",
    "safe_encode",
    "template_hash",
]

#: The label a Deployment's ReplicaSets and pods carry to tell revisions apart.
POD_TEMPLATE_HASH_LABEL: Final = "pod-template-hash"
#: The characters of generated names and hashes: no vowels (no words), no look-alike 0/1/3.
_ALPHANUMS: Final = "bcdfghjklmnpqrstvwxz2456789"
#: Longest generateName prefix kept: a name is at most 63 characters, 5 of them random.
_MAX_PREFIX: Final = 58
_UID_NAMESPACE: Final = uuid.UUID("0b5cfb0e-4c55-4a43-9a8e-5e0f2a6c2d11")
_FNV_OFFSET: Final = 0x811C9DC5
_FNV_PRIME: Final = 0x01000193


def safe_encode(text: str) -> str:
    """Each character mapped into the safe alphabet, as the controllers encode a hash's digits."""
    return "".join(_ALPHANUMS[ord(c) % len(_ALPHANUMS)] for c in text)


def fnv32a(data: bytes) -> int:
    """Go's hash/fnv New32a over `data`."""
    h = _FNV_OFFSET
    for byte in data:
        h = ((h ^ byte) * _FNV_PRIME) & 0xFFFFFFFF
    return h


def _canonical_quantities(values: dict[str, str | int | float]) -> dict[str, str | int | float]:
    out: dict[str, str | int | float] = {}
    for name, value in values.items():
        try:
            out[name] = str(quantity_nanos(value))
        except QuantityError:
            out[name] = value  # reported where the pod's requests are read, not here
    return out


def _canonical_container(c: Container) -> Container:
    resources = msgspec.structs.replace(
        c.resources,
        requests=_canonical_quantities(c.resources.requests),
        limits=_canonical_quantities(c.resources.limits),
    )
    # The API server defaults a port's protocol.
    ports = [p if p.protocol else msgspec.structs.replace(p, protocol="TCP") for p in c.ports]
    return msgspec.structs.replace(c, resources=resources, ports=ports)


def canonical_template(template: PodTemplateSpec) -> PodTemplateSpec:
    """The template as the API server would store it, without the revision label.

    Two templates that differ only in how a quantity is written (`0.5` / `500m`), in a defaulted
    port protocol, or in their `pod-template-hash` label are the same revision.
    """
    labels = {k: v for k, v in template.metadata.labels.items() if k != POD_TEMPLATE_HASH_LABEL}
    spec = template.spec
    spec = msgspec.structs.replace(
        spec,
        containers=[_canonical_container(c) for c in spec.containers],
        init_containers=[_canonical_container(c) for c in spec.init_containers],
    )
    metadata = msgspec.structs.replace(template.metadata, labels=labels)
    return msgspec.structs.replace(template, metadata=metadata, spec=spec)


def template_hash(template: PodTemplateSpec) -> str:
    """The revision hash of a pod template (see the module docstring for how it relates to upstream)."""
    data = msgspec.json.encode(canonical_template(template), order="sorted")
    return safe_encode(str(fnv32a(data)))


def object_uid(kind: str, namespace: str, name: str) -> str:
    """A stable uid for an object the simulation creates (or one given without a uid)."""
    return str(uuid.uuid5(_UID_NAMESPACE, f"{kind}/{namespace}/{name}"))


class NameSource:
    """Random name suffixes, reproducible per (seed, owner)."""

    def __init__(self, seed: int) -> None:
        self._seed = seed
        self._generators: dict[str, random.Random] = {}

    def generate(self, prefix: str, owner: str) -> str:
        """`prefix` (a generateName) plus 5 random characters, as the API server completes it."""
        rng = self._generators.get(owner)
        if rng is None:
            rng = self._generators[owner] = random.Random(f"{self._seed}/{owner}")
        return prefix[:_MAX_PREFIX] + "".join(rng.choice(_ALPHANUMS) for _ in range(5))

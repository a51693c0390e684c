"""etcd for the control plane: one member on loopback, its flags, its health, and compaction (for
tests of a watch whose resourceVersion is gone)."""

from __future__ import annotations

import base64
import json
import urllib.request
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from kubesched.harness.controlplane.binaries import binary_supports
from kubesched.harness.controlplane.process import http_get

__all__ = ["compact", "etcd_args", "healthy"]


def etcd_args(binary: Path, data: Path, client_url: str, peer_url: str, extra: Sequence[str]) -> list[str]:
    """The command line of a one-member etcd keeping its data in `data`; `extra` is appended last."""
    args = [
        str(binary),
        "--name=kubesched",
        f"--data-dir={data}",
        f"--listen-client-urls={client_url}",
        f"--advertise-client-urls={client_url}",
        f"--listen-peer-urls={peer_url}",
        f"--initial-advertise-peer-urls={peer_url}",
        f"--initial-cluster=kubesched={peer_url}",
        "--quota-backend-bytes=8589934592",  # 8 GiB: big benchmarks must not hit the NOSPACE alarm
        "--log-level=warn",
    ]
    if binary_supports(binary, "--unsafe-no-fsync"):
        args.append("--unsafe-no-fsync=true")
    return args + list(extra)


def healthy(client_url: str) -> bool:
    return http_get(f"{client_url}/health", None)[1].find('"health":"true"') >= 0


def compact(client_url: str) -> int:
    """Compact etcd to its current revision (through its JSON gateway); returns the revision.

    Every older resourceVersion is then gone: a watch resumed from one gets 410 Gone.
    """

    def post(path: str, body: dict[str, Any]) -> dict[str, Any]:
        request = urllib.request.Request(f"{client_url}{path}", data=json.dumps(body).encode(), method="POST")
        with urllib.request.urlopen(request, timeout=10) as resp:
            result: dict[str, Any] = json.loads(resp.read())
            return result

    key = base64.b64encode(b"/").decode()
    revision = int(post("/v3/kv/range", {"key": key, "limit": 1})["header"]["revision"])
    post("/v3/kv/compaction", {"revision": revision, "physical": True})
    return revision

"""A kubeconfig for CLI tests that point `kubesched run` at a local (often closed) address."""

from __future__ import annotations

from pathlib import Path

import yaml


def kubeconfig_for(tmp_path: Path, server: str) -> Path:
    """`tmp_path`/kubeconfig naming `server` with a bearer token and TLS verification off."""
    path = tmp_path / "kubeconfig"
    path.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{"name": "c", "cluster": {"server": server, "insecure-skip-tls-verify": True}}],
                "users": [{"name": "u", "user": {"token": "t"}}],
                "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}],
                "current-context": "x",
            }
        )
    )
    return path

#!/usr/bin/env python3
"""Write deploy/'s manifests from the Helm chart, so the two cannot drift.

    tools/chart/render-deploy.py [OUT_DIR]     # default: the repository's deploy/

Renders charts/kubesched (release `kubesched` in kube-system) with charts/kubesched/ci/deploy-values.yaml
in scheduler mode and in extender mode (with an existing TLS Secret: no generated keys land in git),
and groups the objects into the files deploy/ has always had. tests/integration/test_chart.py renders
into a temporary directory and compares. helm comes from tools/helm/build.sh.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
CHART = ROOT / "charts" / "kubesched"
HEADER = "# Generated from charts/kubesched by tools/chart/render-deploy.py; edit the chart, not this file.\n"

#: file -> kinds it holds, per mode
LAYOUT = {
    "scheduler": {
        "rbac.yaml": ("ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding"),
        "configmap.yaml": ("ConfigMap",),
        "deployment.yaml": ("Deployment", "PodDisruptionBudget", "Service"),
    },
    "extender": {
        "extender/rbac.yaml": ("ServiceAccount", "ClusterRole", "ClusterRoleBinding"),
        "extender/config.yaml": ("ConfigMap",),
        "extender/deployment.yaml": ("Deployment", "PodDisruptionBudget", "Service"),
    },
}


def helm() -> str:
    out = subprocess.run(
        [str(ROOT / "tools" / "helm" / "build.sh")], stdout=subprocess.PIPE, text=True, check=True
    )
    return str(Path(out.stdout.strip().splitlines()[-1]) / "helm")


def documents(helm_bin: str, mode: str) -> list[str]:
    args = [helm_bin, "template", "kubesched", str(CHART), "--namespace", "kube-system"]
    args += ["-f", str(CHART / "ci" / "deploy-values.yaml"), "--set", f"mode={mode}"]
    if mode == "extender":
        args += ["--set", "extender.tls.existingSecret=kubesched-extender-tls"]
    text = subprocess.run(args, stdout=subprocess.PIPE, text=True, check=True).stdout
    docs = []
    for chunk in text.split("\n---\n"):
        lines = [line for line in chunk.strip("\n").splitlines() if not line.startswith("# Source:")]
        body = "\n".join(lines).strip("\n")
        if body and body != "---":
            docs.append(body.removeprefix("---\n") + "\n")
    return docs


def render(out: Path, helm_bin: str | None = None) -> list[Path]:
    helm_bin = helm_bin or helm()
    written = []
    for mode, files in LAYOUT.items():
        docs = documents(helm_bin, mode)
        kinds = {doc: yaml.safe_load(doc)["kind"] for doc in docs}
        placed: set[str] = set()
        for name, wanted in files.items():
            chosen = [d for kind in wanted for d in docs if kinds[d] == kind and d not in placed]
            placed.update(chosen)
            path = out / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(HEADER + "---\n".join(chosen))
            written.append(path)
        left = [kinds[d] for d in docs if d not in placed]
        if left:
            raise SystemExit(f"render-deploy: no file for {left} in {mode} mode")
    return written


if __name__ == "__main__":
    for path in render(Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "deploy"):
        print(path)

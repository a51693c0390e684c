"""Which test runs each command of the docs, and why a few cannot be run on a fresh machine.

A command of a walkthrough section runs on `make cluster`'s control plane
(`test_kubectl_walkthroughs.py`); one listed in NOT_RUNNABLE is not run, for the reason given;
every other command runs in a scratch directory with no cluster (`test_doc_commands.py`). So a
command added to the docs is run by a test from then on, or the docs test fails until it is put
in a walkthrough or given a reason here.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from doc_commands import Command, commands, section


@dataclass(frozen=True)
class Walkthrough:
    """Commands a reader runs in order against one local control plane."""

    doc: str
    start: str
    end: str | None

    def commands(self) -> list[Command]:
        return [c for c in section(self.doc, self.start, self.end) if c.key not in NOT_RUNNABLE]


README_LIVE_TOUR = Walkthrough("README.md", "**7. Live, against a local control plane.**", "## Status")
LIVE_SCHEDULER_TRY = Walkthrough("docs/live-scheduler.md", "## 1. Try it", "## 2. ")
LIVE_SCHEDULER_REST = Walkthrough("docs/live-scheduler.md", "## 2. ", None)
USER_GUIDE_SNAPSHOT = Walkthrough("docs/user-guide.md", "### 2.1", "### 2.2")
EXTENDER_RECIPE = Walkthrough("docs/extender.md", "### Deployment", "### Speed")
WALKTHROUGHS = (
    README_LIVE_TOUR,
    LIVE_SCHEDULER_TRY,
    LIVE_SCHEDULER_REST,
    USER_GUIDE_SNAPSHOT,
    EXTENDER_RECIPE,
)

_HEAVY = (
    "needs a container runtime and a registry to push to; "
    "tests/integration/test_image.py builds the image with buildah"
)
_TEMPLATE = "a template: `...`, a.yaml, day.json and the like stand for the reader's own files"

#: (doc, command) -> why a fresh machine with this clone cannot run it as written.
NOT_RUNNABLE: dict[tuple[str, str], str] = {
    **{
        ("README.md", c): "what creates the venv these tests run in, and runs them (make test)"
        for c in (
            "make demo   # create .venv (or reuse it), install kubesched, schedule the bundled demo cluster",
            "make test   # lint, type-check, then run every test, "
            "including those against a real control plane",
        )
    },
    **{
        ("docs/user-guide.md", c): "what creates the venv these tests run in, and runs them (make test)"
        for c in (
            "make demo    # creates .venv (or reuses it), installs kubesched, runs the demo",
            "make test    # the same venv; lint, type-check, run the tests",
        )
    },
    **dict.fromkeys(
        (
            ("README.md", 'make cluster CLUSTER_ARGS="--nodes 3"'),
            ("docs/live-scheduler.md", 'make cluster CLUSTER_ARGS="--nodes 3"'),
            ("docs/extender.md", 'make cluster CLUSTER_ARGS="--nodes 3 --extender"'),
        ),
        "the walkthrough's fixture starts the same control plane (`python -m "
        "kubesched.harness.controlplane`, what the target runs) and reads the lines it prints",
    ),
    (
        "docs/extender.md",
        "kubesched extender --config extender.yaml [--profile NAME] [--listen 127.0.0.1:8888] "
        "[--kubeconfig PATH | --in-cluster | --cluster-snapshot PATH...] [--prefix /scheduler] "
        "[--tls-cert-file F --tls-private-key-file F] [--client-ca-file F] [--token-file F]",
    ): "a synopsis, not a command",
    **{
        ("docs/image.md", c): _HEAVY
        for c in (
            "docker build -f deploy/Dockerfile -t registry.example.com/platform/kubesched:0.1.0 .",
            "docker push registry.example.com/platform/kubesched:0.1.0",
            "buildah bud -f deploy/Dockerfile -t registry.example.com/platform/kubesched:0.1.0 .",
            "buildah push registry.example.com/platform/kubesched:0.1.0",
            "docker build -f deploy/plugins.Dockerfile --build-arg "
            "KUBESCHED_IMAGE=registry.example.com/platform/kubesched:0.1.0 -t "
            "registry.example.com/platform/kubesched-pools:0.1.0 examples/plugin-package",
        )
    },
    (
        "docs/image.md",
        "helm install kubesched charts/kubesched -n kube-system --set "
        "image.repository=registry.example.com/platform/kubesched --set image.tag=0.1.0",
    ): "needs a cluster that can pull the published image; tests/integration/test_chart.py renders the "
    "chart and dry-runs it on the API server",
    **{
        ("docs/live-scheduler.md", c): "deploys to a real cluster (kubelets pulling a published image); "
        "the local control plane dry-runs the same manifests further down the guide"
        for c in (
            "docker build -f deploy/Dockerfile -t kubesched:0.1.0 .",
            "kubectl apply -f deploy/rbac.yaml -f deploy/configmap.yaml -f deploy/deployment.yaml",
            "kubectl run hello-kubesched --image=registry.k8s.io/pause:3.10.1 "
            '--overrides=\'{"spec": {"schedulerName": "kubesched"}}\'',
            "kubectl get pod hello-kubesched -o wide      # NODE: the node kubesched bound it to",
        )
    },
    **{
        ("docs/live-scheduler.md", c): "needs the reader's Prometheus ServiceAccount and its RBAC; "
        "tests/integration/test_secure_serving.py asks the same endpoint as such callers"
        for c in (
            "TOKEN=$(kubectl create token prometheus -n monitoring)",
            'curl -sk -H "Authorization: Bearer $TOKEN" '
            "https://localhost:10259/metrics | grep ^leader_election",
            "curl -sk https://localhost:10259/metrics",
        )
    },
    **{
        ("docs/simulate-report.md", c): _TEMPLATE
        for c in (
            'kubesched simulate ... -o json | jq -r \'.pods[] | select(.result=="Unschedulable") | '
            '"\\(.namespace)/\\(.name): \\(.message)"\'',
            "kubesched simulate ... --explain -o json | "
            'jq \'.pods[] | select(.name=="hello-on-b") | .filter | '
            "[.[].plugin] | group_by(.) | map({(.[0]): length}) | add'",
            "kubesched simulate ... --explain --pods unschedulable -o json | jq -r '.pods[] | "
            '"\\(.namespace)/\\(.name)", '
            '(.explanation.rejections[] | "  \\(.count) \\(.plugin): \\(.reason)")\'',
            'kubesched simulate ... -o json | jq -r \'.nodes[] | select(.allocatable["nvidia.com/gpu"]) | '
            '"\\(.name) \\(.requested["nvidia.com/gpu"])/\\(.allocatable["nvidia.com/gpu"])"\'',
        )
    },
    (
        "docs/scenarios.md",
        "kubesched simulate --scenario day.json --config new-profile.yaml snapshot/       "
        "# PATHs: the cluster at 0s",
    ): _TEMPLATE,
    (
        "docs/scenarios.md",
        "kubesched simulate --scenario day.json --config new-profile.yaml -o html > day.html",
    ): ("the recording of the line above and the reader's new profile"),
    (
        "docs/scenarios.md",
        "kubesched record --kubeconfig ~/.kube/prod --duration 2h day.json     # or day.yaml, or stdout",
    ): "records the reader's cluster for two hours; tests/integration/test_record.py records the local "
    "control plane, replays the recording and compares",
    ("docs/what-if.md", "ray start --head --port=6379 --disable-usage-stats"): "starts a Ray head that "
    "outlives the command; tests/e2e/test_sweep.py runs a sweep on a Ray cluster it starts",
    (
        "docs/what-if.md",
        "kubesched sweep snapshot/ --config a.yaml --config b.yaml --seeds 0..99 --ray HEAD:6379",
    ): _TEMPLATE,
    (
        "docs/writing-plugins.md",
        "PYTHONPATH=. .venv/bin/kubesched simulate examples/node-label-filter --config my-config.yaml "
        "--explain --output json | jq '.pods[] | {name, result, node, filter}'",
    ): "a template for the reader's own plugin and my-config.yaml",
    ("examples/plugin-package/README.md", "pip install ./examples/plugin-package"): "installs into "
    "the reader's environment; tests/integration/test_image.py installs it into an image and schedules "
    "with PoolFilter there",
    (
        "examples/plugin-package/README.md",
        "kubesched simulate --config examples/plugin-package/scheduler-config.yaml "
        "examples/plugin-package/cluster.yaml",
    ): "needs the package of the line above installed",
    (
        "examples/plugin-package/README.md",
        "docker build -f deploy/plugins.Dockerfile "
        "--build-arg KUBESCHED_IMAGE=registry.example.com/kubesched:0.1.0 "
        "-t registry.example.com/kubesched-pool:0.1.0 examples/plugin-package",
    ): _HEAVY,
}


def in_walkthrough(command: Command) -> bool:
    return any(command in w.commands() for w in WALKTHROUGHS)


def _dedup_key(command: Command) -> tuple[str, tuple[str, ...]]:
    """The same command shown twice (a trailing comment aside) is run once, where it comes first."""
    return (re.sub(r"\s+#[^'\"]*$", "", command.text), command.shown)


def offline_commands(doc: str) -> list[Command]:
    """The commands of `doc` that need no cluster and were not already shown by an earlier doc."""
    from doc_commands import DOCS

    seen = {_dedup_key(c) for earlier in DOCS[: DOCS.index(doc)] for c in _offline(earlier)}
    return [c for c in _offline(doc) if _dedup_key(c) not in seen]


def _offline(doc: str) -> list[Command]:
    return [c for c in commands(doc) if c.key not in NOT_RUNNABLE and not in_walkthrough(c)]

"""kubesched's image, built here with buildah and run against the real API server.

`tools/image/build.sh` builds deploy/Dockerfile FROM a Debian base made locally by mmdebstrap (no
daemon, no image pulls: vfs storage, chroot isolation), and deploy/plugins.Dockerfile on top of it
with the example plugin package of examples/plugin-package. Each image's own `kubesched run` then
runs in a buildah container on the host network, as the image's non-root user, against the test
control plane, until it has scheduled a pod; the plugin image's pod lands where its out-of-tree
PoolFilter sends it. The image's root filesystem must be unchanged afterwards (so
`readOnlyRootFilesystem: true` works), and the image holds no compiler.

These tests build images (minutes when the tree changed, ~1 s when it did not) and start their own
control plane, so they have an xdist group of their own and run beside the other integration tests.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import ssl
import subprocess
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from kubesched.harness.controlplane import ControlPlane
from kubesched.harness.fake_nodes import ApiClient, create_node, create_pod, fake_node, get_pod
from kubesched.harness.ports import free_port

# Cold, the Debian base and two images are built in this module's fixtures (about 15 min on 2 cores).
pytestmark = [pytest.mark.xdist_group("image"), pytest.mark.timeout(2400)]

ROOT = Path(__file__).resolve().parents[2]
BUILD = ROOT / "tools" / "image" / "build.sh"
BUILDAH = ["buildah", "--storage-driver", "vfs"]
#: Files the container runtime writes into the root filesystem (buildah run, as a kubelet's runtime).
RUNTIME_FILES = {"/etc/hosts", "/etc/resolv.conf", "/etc/hostname", "/run/.containerenv"}
INSTALL_HINT = "run tools/image/install-tools.sh as root (apt-get install buildah mmdebstrap uidmap)"


def build(*args: str) -> str:
    """Run tools/image/build.sh; the image name, or a failure saying how to get the tools."""
    if shutil.which("buildah") is None or shutil.which("mmdebstrap") is None:
        subprocess.run([str(ROOT / "tools" / "image" / "install-tools.sh")], check=False)
    if shutil.which("buildah") is None or shutil.which("mmdebstrap") is None:
        pytest.fail(f"buildah and mmdebstrap are needed to build the image: {INSTALL_HINT}")
    proc = subprocess.run([str(BUILD), *args], stdout=subprocess.PIPE, text=True, timeout=3600, check=False)
    assert proc.returncode == 0, f"{BUILD} {' '.join(args)} failed (its stderr is above)"
    return proc.stdout.strip().splitlines()[-1]


@pytest.fixture(scope="module")
def image() -> str:
    return build()


@pytest.fixture(scope="module")
def plugin_image(image: str) -> str:
    return build("plugins", str(ROOT / "examples" / "plugin-package"), image)


def buildah(*args: str, timeout: float = 300) -> str:
    proc = subprocess.run([*BUILDAH, *args], capture_output=True, text=True, timeout=timeout, check=False)
    assert proc.returncode == 0, f"buildah {' '.join(args)}: {proc.stderr.strip()}"
    return proc.stdout.strip()


class Container:
    """A buildah working container of an image, running `kubesched run` on the host network."""

    def __init__(self, image: str, workdir: Path) -> None:
        self.name = f"kubesched-test-{uuid.uuid4().hex[:8]}"
        buildah("from", "--quiet", "--name", self.name, image)
        self.workdir = workdir
        self.proc: subprocess.Popen[bytes] | None = None
        self.marker = workdir / "started"

    def run(self, *args: str, mount: Path) -> None:
        """Start `kubesched run ARGS` as the image's user with `mount` at /etc/kubesched."""
        self.marker.write_text("")
        time.sleep(1.1)  # whole-second mtimes: anything written from now on is newer than the marker
        self.log = open(self.workdir / f"{self.name}.log", "wb")  # noqa: SIM115 - closed in stop()
        self.proc = subprocess.Popen(
            [*BUILDAH, "run", "--isolation", "chroot", "--network", "host", "--user", "65532:65532",
             "--volume", f"{mount}:/etc/kubesched:ro", self.name, "--", "kubesched", "run", *args],
            stdout=self.log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True,
        )  # fmt: skip

    def log_text(self) -> str:
        return (self.workdir / f"{self.name}.log").read_text(errors="replace")

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def _kubesched_pids(self) -> list[int]:
        """kubesched's Python process in the container: of our process group, but not buildah nor
        its chroot helpers (whose command lines name kubesched too; a signal to them kills it)."""
        assert self.proc is not None
        pids = []
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit() or int(entry.name) == self.proc.pid:
                continue
            with contextlib.suppress(OSError):
                argv = (entry / "cmdline").read_bytes().split(b"\0")
                python = os.path.basename(argv[0]).startswith(b"python")
                if os.getpgid(int(entry.name)) == self.proc.pid and python and argv[1].endswith(b"kubesched"):
                    pids.append(int(entry.name))
        return pids

    def stop(self) -> None:
        """SIGTERM to kubesched (buildah answers its own SIGTERM by killing the container), then
        SIGKILL to the process group we started."""
        if self.proc is not None and self.proc.poll() is None:
            for pid in self._kubesched_pids():
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGTERM)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(10)
        if self.proc is not None:
            self.log.close()

    def written_files(self) -> list[str]:
        """Files of the container's root filesystem changed since `run` started."""
        root = Path(buildah("mount", self.name))
        try:
            out = subprocess.run(
                ["find", str(root), "-xdev", "-newer", str(self.marker), "-not", "-type", "d"],
                capture_output=True, text=True, timeout=300, check=False,
            ).stdout  # fmt: skip
        finally:
            buildah("umount", self.name)
        written = [line[len(str(root)) :] for line in out.splitlines()]
        return [path for path in written if path not in RUNTIME_FILES]

    def remove(self) -> None:
        subprocess.run([*BUILDAH, "rm", self.name], capture_output=True, timeout=300, check=False)


def config_dir(control_plane: ControlPlane, tmp_path: Path, config: str) -> Path:
    """/etc/kubesched for the container: the config and a kubeconfig the image's user can read."""
    d = tmp_path / "etc-kubesched"
    d.mkdir()
    shutil.copy(control_plane.kubeconfig_path, d / "kubeconfig")
    (d / "config.yaml").write_text(config)
    for path in (d, d / "kubeconfig", d / "config.yaml"):
        path.chmod(0o755 if path.is_dir() else 0o644)
    return d


def config(scheduler: str, plugins: str = "") -> str:
    return f"""\
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
clientConnection: {{kubeconfig: /etc/kubesched/kubeconfig}}
leaderElection: {{leaderElect: false}}
profiles:
- schedulerName: {scheduler}
{plugins}"""


def wait_until_bound(api: ApiClient, container: Container, namespace: str, pod: str) -> str:
    deadline = time.monotonic() + 180
    while True:
        node = get_pod(api, pod, namespace)["spec"].get("nodeName")
        if node:
            return str(node)
        assert container.alive(), f"kubesched in the image exited:\n{container.log_text()}"
        assert time.monotonic() < deadline, f"pod not bound after 180 s:\n{container.log_text()}"
        time.sleep(0.5)


def https_status(url: str) -> int:
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE  # the image's certificate is self-signed in memory
    try:
        with urllib.request.urlopen(url, context=ctx, timeout=5) as resp:
            return int(resp.status)
    except urllib.error.HTTPError as exc:
        return exc.code
    except OSError:
        return 0


@pytest.fixture
def container_factory(tmp_path: Path) -> Iterator[list[Container]]:
    made: list[Container] = []
    yield made
    for c in made:
        c.stop()
        c.remove()


def test_the_image_runs_as_a_non_root_user_without_compilers(image: str) -> None:
    assert buildah("inspect", "--type", "image", "--format", "{{.OCIv1.Config.User}}", image) == "65532:65532"
    entrypoint = buildah("inspect", "--type", "image", "--format", "{{.OCIv1.Config.Entrypoint}}", image)
    assert entrypoint == "[kubesched]"
    name = f"kubesched-probe-{uuid.uuid4().hex[:8]}"
    buildah("from", "--quiet", "--name", name, image)
    try:
        found = buildah(
            "run", "--isolation", "chroot", name, "--", "sh", "-c",
            "for c in gcc cc c++ g++ clang make as ld; do command -v $c; done; exit 0",
        )  # fmt: skip
        assert found == ""
        assert (
            buildah("run", "--isolation", "chroot", "--user", "65532:65532", name, "--", "id", "-u")
            == "65532"
        )
    finally:
        subprocess.run([*BUILDAH, "rm", name], capture_output=True, timeout=300, check=False)


def test_the_images_kubesched_schedules_a_pod_and_writes_nothing_to_its_root_filesystem(
    image: str, control_plane: ControlPlane, api: ApiClient, namespace: str, tmp_path: Path,
    container_factory: list[Container],
) -> None:  # fmt: skip
    scheduler = f"image-{uuid.uuid4().hex[:6]}"
    node = f"image-node-{uuid.uuid4().hex[:6]}"
    create_node(api, fake_node(node, labels={"kubesched.test/image": scheduler}))
    mount = config_dir(control_plane, tmp_path, config(scheduler))
    container = Container(image, tmp_path)
    container_factory.append(container)
    port = free_port()
    container.run(
        "--config=/etc/kubesched/config.yaml",
        "--bind-address=127.0.0.1",
        f"--secure-port={port}",
        mount=mount,
    )
    create_pod(api, "from-the-image", namespace=namespace, scheduler_name=scheduler,
               node_selector={"kubesched.test/image": scheduler})  # fmt: skip
    assert wait_until_bound(api, container, namespace, "from-the-image") == node
    # Served over HTTPS with its in-memory certificate, from inside the image.
    assert https_status(f"https://127.0.0.1:{port}/readyz") == 200
    container.stop()
    assert "stopped: 1 pods scheduled" in container.log_text()
    assert container.written_files() == []


def test_the_plugin_image_runs_the_out_of_tree_plugin(
    plugin_image: str, control_plane: ControlPlane, api: ApiClient, namespace: str, tmp_path: Path,
    container_factory: list[Container],
) -> None:  # fmt: skip
    scheduler = f"pools-{uuid.uuid4().hex[:6]}"
    label = "kubesched.test/image-pools"
    nodes = {pool: f"pool-{pool}-{uuid.uuid4().hex[:6]}" for pool in ("blue", "green")}
    for pool, name in nodes.items():
        create_node(api, fake_node(name, labels={label: scheduler, "example.com/pool": pool}))
    mount = config_dir(
        control_plane,
        tmp_path,
        config(scheduler, "  plugins:\n    filter:\n      enabled: [{name: PoolFilter}]\n"),
    )
    container = Container(plugin_image, tmp_path)
    container_factory.append(container)
    container.run("--config=/etc/kubesched/config.yaml", "--secure-port=0", mount=mount)
    for i in range(3):
        manifest = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": f"green-{i}",
                "namespace": namespace,
                "annotations": {"example.com/pool": "green"},
            },
            "spec": {
                "schedulerName": scheduler,
                "nodeSelector": {label: scheduler},
                "containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10.1"}],
            },
        }
        create_pod(api, manifest)
    # Without PoolFilter the default spreading would put some on blue.
    assert {wait_until_bound(api, container, namespace, f"green-{i}") for i in range(3)} == {nodes["green"]}

"""The kubectl walkthroughs of the README and the guides, run as a reader runs them.

Each starts `make cluster`'s control plane (`python -m kubesched.harness.controlplane`, what the
target runs) and takes what the reader copies from what it prints: the `export KUBECONFIG=...` and
`export PATH=...` lines, so the kubectl used is the one it built, never one the machine happens to
have, and for the extender recipe the certificate directory (`.../` in the doc) and the
extender's port. Then each `$ command` of the walkthrough runs in bash in that environment, in a
scratch directory: `cmd &` and `kubesched run` in the background (its log in a file), a
`NAME=$(...)` assignment kept for the commands after it. A command is retried until it exits 0
and prints what the doc shows, within SETTLE_SECONDS (kubesched has to schedule first): every word
in the doc's order, with ages, timestamps, ports, generated names and which fake node a pod got
left free. The ports the doc names are swapped for free ones.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from doc_commands import (
    MEASURED,
    ON_A_CLUSTER,
    REPO,
    Command,
    output_problem,
    run_shell,
    scratch_dir,
    shows_an_error,
)
from inventory import (
    EXTENDER_RECIPE,
    LIVE_SCHEDULER_REST,
    LIVE_SCHEDULER_TRY,
    README_LIVE_TOUR,
    USER_GUIDE_SNAPSHOT,
)

from kubesched.harness.ports import free_port

#: How long a command may take to show what the doc shows (kubesched has to schedule first).
SETTLE_SECONDS = 60.0
#: One try of one command.
COMMAND_TIMEOUT = 60.0
VARYING = {**MEASURED, **ON_A_CLUSTER}


@dataclass
class Reader:
    """A reader's terminals on one local control plane: the environment, a scratch directory, and
    what runs in the background."""

    env: dict[str, str]
    workdir: Path
    printed: list[str]
    kubectl_dir: Path
    substitutions: dict[str, str] = field(default_factory=dict)
    background: list[tuple[subprocess.Popen[bytes], Path]] = field(default_factory=list)

    def run(self, commands: list[Command]) -> None:
        for command in commands:
            self._step(command)

    def _prepare(self, text: str) -> str:
        """`text` as this reader runs it: the scratch dir for `/tmp/`, the fixture's values for the
        doc's placeholders, a free port for each port the doc names (the same one every time), and
        `kubesched run` on the free port standing for kube-scheduler's 10259. One pass, so a value
        put in is never replaced again."""
        text = text.replace("/tmp/", f"{self.workdir}/")
        for port in re.findall(r"(?:localhost|127\.0\.0\.1):(\d{4,5})\b", text):
            self.substitutions.setdefault(f":{port}", f":{free_port()}")
        if " run --config " in text and "--secure-port" not in text:
            self.substitutions.setdefault(":10259", f":{free_port()}")
            text = text.replace(" run --config ", " run --secure-port=:10259 --config ", 1)
        if self.substitutions:
            keys = sorted(self.substitutions, key=len, reverse=True)
            text = re.sub("|".join(map(re.escape, keys)), lambda m: self.substitutions[m.group(0)], text)
        return text.replace("--secure-port=:", "--secure-port=")

    def _step(self, command: Command) -> None:
        text = self._prepare(command.text)
        if text.startswith("export "):
            name, _, value = text.removeprefix("export ").split("#")[0].strip().partition("=")
            if name not in ("KUBECONFIG", "PATH"):  # the fixture set those from what was printed
                self.env[name] = value
            return
        assignment = re.fullmatch(r"(\w+)=(.*?)(\s+#.*)?", text)
        if assignment:  # `TOKEN=$(...)`, `C="..."`: the commands after it use it
            name, value, _ = assignment.groups()
            done = run_shell(f'{name}={value}; printf %s "${name}"', self.workdir, self.env, COMMAND_TIMEOUT)
            assert done.returncode == 0, f"{command.where}: `{command.text}`: {done.stdout}"
            self.env[name] = done.stdout
            return
        bare = re.sub(r"\s+#[^'\"]*$", "", text)
        if bare.endswith("&") or ("kubesched run" in text and not shows_an_error(command)):
            self._start(command, bare.rstrip("& "))
            return
        deadline = time.monotonic() + SETTLE_SECONDS
        while True:
            done = run_shell(text, self.workdir, self.env, COMMAND_TIMEOUT)
            ok = done.returncode == 0 or shows_an_error(command)
            problem = output_problem(command.shown, done.stdout, VARYING)
            if ok and problem is None:
                return
            assert time.monotonic() < deadline, (
                f"{command.where}: `{command.text}` exited {done.returncode}: {problem or done.stdout}"
            )
            time.sleep(1)

    def _start(self, command: Command, text: str) -> None:
        """A command the reader leaves running; returns once its log shows what the doc shows and
        that it has its informers synced (so a second replica started next is the standby)."""
        log = self.workdir / f"background-{len(self.background)}.log"
        with log.open("wb") as out:
            proc = subprocess.Popen(
                ["bash", "-c", f"exec {text}"],
                cwd=self.workdir,
                env=self.env,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        redirected = re.search(r"2>\s*(\S+)", text)
        logs = [log, self.workdir / redirected.group(1)] if redirected else [log]
        self.background.append((proc, log))
        deadline = time.monotonic() + SETTLE_SECONDS
        while True:
            written = "".join(p.read_text(errors="replace") for p in logs if p.exists())
            problem = output_problem(command.shown, written, VARYING)
            if problem is None and ("kubesched run" not in text or "informers synced" in written):
                return
            assert proc.poll() is None, (
                f"{command.where}: `{command.text}` exited {proc.returncode}:\n{written}"
            )
            assert time.monotonic() < deadline, f"{command.where}: `{command.text}`: {problem or written}"
            time.sleep(0.5)

    def stop(self) -> None:
        """Ctrl-C for what runs in the background: the ports it held are free for the next steps."""
        for proc, _ in self.background:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)  # the session this test started for the command
                proc.wait(30)
        self.background.clear()
        self.substitutions = {k: v for k, v in self.substitutions.items() if not re.fullmatch(r":\d+", k)}


@contextmanager
def make_cluster(tmp_path: Path, *args: str) -> Iterator[Reader]:
    """`make cluster CLUSTER_ARGS="--nodes 3 ARGS"`'s control plane, and a reader of it."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "kubesched.harness.controlplane", "--nodes", "3", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
        text=True,
        cwd=REPO,
    )
    printed: list[str] = []
    reader: Reader | None = None
    try:
        assert proc.stdout is not None
        deadline = time.monotonic() + 600  # a cold kubectl build included
        while not printed or printed[-1] != "Ctrl-C to stop.":
            line = proc.stdout.readline()
            assert line or proc.poll() is None, "the control plane exited:\n" + "".join(printed)
            printed.append(line.rstrip("\n"))
            assert time.monotonic() < deadline, "the control plane did not start:\n" + "\n".join(printed)
        exports = dict(re.findall(r"^  export (\w+)=(\S+)", "\n".join(printed), re.M))
        assert set(exports) == {"KUBECONFIG", "PATH"}, printed
        env = {k: v for k, v in os.environ.items() if k not in ("KUBECONFIG", "COLUMNS", "PYTHONPATH")}
        env["KUBECONFIG"] = exports["KUBECONFIG"]
        env["PATH"] = exports["PATH"].replace("$PATH", f"{REPO / '.venv' / 'bin'}:{env['PATH']}")
        reader = Reader(env, scratch_dir(tmp_path), printed, Path(exports["PATH"].split(":")[0]))
        yield reader
    finally:
        if reader is not None:
            reader.stop()
        proc.send_signal(signal.SIGINT)  # what Ctrl-C does: it stops etcd and the API server
        try:
            proc.wait(60)
        except subprocess.TimeoutExpired:
            proc.kill()  # its servers die with it (parent-death signal): nothing outlives the test
            proc.wait(10)
            raise


def test_readme_live_tour_and_a_snapshot_of_it(tmp_path: Path) -> None:
    """README step 7, then the user guide's `kubectl get ... > snapshot.yaml` simulated (its
    `my-scheduler.yaml` stands for the reader's config: here the example the tour ran)."""
    with make_cluster(tmp_path) as reader:
        done = run_shell("command -v kubectl && kubectl version --client", reader.workdir, reader.env, 30)
        where, version = done.stdout.split("\n", 1)
        assert Path(where) == reader.kubectl_dir / "kubectl"
        assert version.startswith("Client Version: v1.37.2\n")
        steps = README_LIVE_TOUR.commands()
        assert [c.text.split()[0] for c in steps].count("kubectl") >= 3
        reader.run(steps)
        assert "scheduling" in (reader.workdir / "run.log").read_text()  # `2>run.log` wrote there
        (reader.workdir / "my-scheduler.yaml").symlink_to(
            REPO / "examples" / "node-label-filter" / "scheduler-config.yaml"
        )
        reader.run(USER_GUIDE_SNAPSHOT.commands())


def test_live_scheduler_guide(tmp_path: Path) -> None:
    """Section 1, then (kubesched stopped, as the guide does next) the commands of the others."""
    with make_cluster(tmp_path) as reader:
        steps = LIVE_SCHEDULER_TRY.commands()
        assert any(c.text.startswith("kubectl apply -f deploy/example-pod.yaml") for c in steps)
        assert any(c.text.startswith("kubectl run wants-hello") for c in steps)
        reader.run(steps)
        reader.stop()
        steps = LIVE_SCHEDULER_REST.commands()
        assert any(c.text.startswith("kubectl apply --dry-run=server") for c in steps)
        reader.run(steps)


def test_extender_recipe(tmp_path: Path) -> None:
    with make_cluster(tmp_path, "--extender") as reader:
        (curl,) = [line for line in reader.printed if line.startswith("  curl ")]
        certificates = Path(curl.split("--cacert ")[1].split()[0]).parent
        url = next(line for line in reader.printed if line.startswith("kubesched extender: "))
        port = re.search(r"https://127\.0\.0\.1:(\d+)/", url)
        assert port is not None, url
        reader.substitutions.update({".../": f"{certificates}/", ":40433": f":{port.group(1)}"})
        steps = EXTENDER_RECIPE.commands()
        assert any(c.text.startswith("openssl") for c in steps)
        reader.run(steps)

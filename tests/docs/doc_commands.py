"""The shell commands the documentation shows, and how a test runs them as a reader would.

A command is a `$ ` line of a ```console block (with its `\\` continuation lines) and the output
the doc shows under it, or a line of a ```sh block (no output shown there). Every command of the
README, `docs/` and the examples' READMEs is run by `test_doc_commands.py` (no cluster needed),
by a walkthrough of `test_kubectl_walkthroughs.py` (on `make cluster`'s control plane), or is
listed in `inventory.NOT_RUNNABLE` with the reason a fresh machine cannot run it.
"""

from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

#: Every markdown file whose commands a reader may copy.
DOCS = sorted(
    str(p.relative_to(REPO))
    for p in [REPO / "README.md", *REPO.glob("docs/**/*.md"), *REPO.glob("examples/*/README.md")]
)

#: What the commands name relative to the clone; a scratch dir links them so files the commands
#: write land in the scratch dir, not in the clone.
CLONE_ENTRIES = (".venv", "examples", "deploy", "benchmarks", "charts")

_BLOCK = re.compile(r"^```(console|sh|bash|shell)\n(.*?)^```", re.S | re.M)
#: A code block whose first line is `# NAME.EXT`: a file the reader is asked to save.
_SAVED_FILE = re.compile(r"^```(?:python|yaml)\n# ([\w.-]+\.(?:py|yaml))\n(.*?)^```", re.S | re.M)
#: What differs from run to run in a command's output, and what it may be instead: measured
#: durations and rates, and on a cluster also ages, timestamps, ports, generated names and
#: which of the fake nodes a scheduler picked.
MEASURED = {r"\b\d+\.\d+s\b": r"\d+\.\d+s", r"\b\d+(?:\.\d+)?(?:e[+-]?\d+)? pods/s": r"[\d.e+-]+ pods/s"}
ON_A_CLUSTER = {
    r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}": r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}",
    r"\bfake-node-\d{5}\b": r"fake-node-\d{5}",
    r"\bvm_[0-9a-f-]+": r"\S+",
    r"/dev/shm/kubesched-cp-[^/\s]+": r"/\S+?",
    r"(?<=127\.0\.0\.1:)\d+|(?<=0\.0\.0\.0:)\d+|(?<=localhost:)\d+": r"\d+",
    r"\b\d+(?:\.\d+)?(?:ms|s|m|h)\b|\b\d+m\d+s\b": r"\d+[\dmsh.]*",
}


@dataclass(frozen=True)
class Command:
    doc: str
    line: int
    text: str
    shown: tuple[str, ...]

    @property
    def where(self) -> str:
        return f"{self.doc}:{self.line}"

    @property
    def key(self) -> tuple[str, str]:
        """What names a command in the lists of the tests: line numbers move as docs change."""
        return (self.doc, self.text)


def commands(doc: str) -> list[Command]:
    """Every command of `doc`'s console and sh blocks, in order."""
    text = (REPO / doc).read_text()
    found: list[Command] = []
    for block in _BLOCK.finditer(text):
        first_line = text[: block.start(2)].count("\n") + 1
        lines = block.group(2).splitlines()
        console = block.group(1) == "console"
        i = 0
        while i < len(lines):
            start = i
            if console and not lines[i].startswith("$ "):
                i += 1
                continue
            command = lines[i][2:] if console else lines[i]
            while command.endswith("\\") and i + 1 < len(lines):
                i += 1
                command = command[:-1].rstrip() + " " + lines[i].strip()
            i += 1
            shown: list[str] = []
            while console and i < len(lines) and not lines[i].startswith("$ "):
                shown.append(lines[i])
                i += 1
            if command.strip() and not command.lstrip().startswith("#"):
                found.append(Command(doc, first_line + start, command.strip(), tuple(shown)))
    return found


def all_commands() -> list[Command]:
    return [c for doc in DOCS for c in commands(doc)]


def section(doc: str, start: str, end: str | None) -> list[Command]:
    """The commands of `doc` from the first `start` to the next `end` after it (None: to the end)."""
    text = (REPO / doc).read_text()
    begin = text.index(start)
    first = text[:begin].count("\n") + 1
    last = text[: text.index(end, begin)].count("\n") + 1 if end else text.count("\n") + 2
    return [c for c in commands(doc) if first <= c.line < last]


def saved_files(doc: str) -> dict[str, str]:
    """The files `doc` asks the reader to save (a python or yaml block starting `# NAME`)."""
    text = (REPO / doc).read_text()
    return {m.group(1): f"# {m.group(1)}\n{m.group(2)}" for m in _SAVED_FILE.finditer(text)}


def scratch_dir(path: Path) -> Path:
    """`path`, with the clone's entries the commands name linked into it."""
    for name in CLONE_ENTRIES:
        (path / name).symlink_to(REPO / name)
    return path


def stable_words(lines: tuple[str, ...] | list[str]) -> set[str]:
    """The words of `lines` that hold no digit: ages, ports, counts and random names vary."""
    return {w for line in lines for w in line.split() if not any(c.isdigit() for c in w)}


def _pattern(shown: str, varying: dict[str, str]) -> str:
    """A regex for `shown`: its words literally, any whitespace between them (tables are padded
    and messages wrapped to the terminal's width), and what varies as `varying` says."""
    pieces: list[str] = []
    words = " ".join(shown.split())
    at = 0
    if varying:
        for match in re.finditer("|".join(f"({p})" for p in varying), words):
            pieces.append(re.escape(words[at : match.start()]))
            pieces.append(list(varying.values())[match.lastindex - 1 if match.lastindex else 0])
            at = match.end()
    pieces.append(re.escape(words[at:]))
    return "".join(pieces).replace(r"\ ", r"\s+")


def output_problem(shown: tuple[str, ...], actual: str, varying: dict[str, str]) -> str | None:
    """Why `actual` is not the output the doc shows, or None. A `...` line in the doc stands for
    lines left out; every other word must be there, in the doc's order."""
    chunks: list[list[str]] = [[]]
    for line in shown:
        if line.strip() == "...":
            chunks.append([])
        else:
            chunks[-1].append(line)
    at = 0
    for chunk in chunks:
        if not "".join(chunk).strip():
            continue
        found = re.compile(_pattern("\n".join(chunk), varying)).search(actual, at)
        if found is None:
            shown_text = "\n".join(chunk)
            return f"the doc shows\n{shown_text}\nbut the command printed\n{actual[at:]}"
        at = found.end()
    return None


def run_shell(
    command: str, cwd: Path, env: dict[str, str], timeout: float
) -> subprocess.CompletedProcess[str]:
    """`command` in bash as a terminal runs it: stdout and stderr together, a pipeline failing when
    any part fails."""
    return subprocess.run(
        ["bash", "-o", "pipefail", "-c", command],
        cwd=cwd,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
        text=True,
        timeout=timeout,
        check=False,
    )


def shows_an_error(command: Command) -> bool:
    """The doc shows this command failing on purpose: its output is kubesched's error line."""
    return bool(command.shown) and command.shown[0].startswith("kubesched: ")

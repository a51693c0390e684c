"""`explain` keeps upstream's exact FailedScheduling message and says what its terse parts mean
(before: `Preemption would not help: not found`, and nothing more)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tests.unit.simulate.simulate_helpers import node, pod, run_cli, write_yaml

from kubesched.simulate.explain.plain import PLAIN_WORDS, plain_words

Capsys = pytest.CaptureFixture[str]


def plain_block(out: str) -> list[str]:
    """The sentences under "In plain words", each on one line whatever the terminal's width."""
    lines = out.splitlines()
    start = lines.index("In plain words")
    block = " ".join(line.strip() for line in lines[start + 1 :] if not line.startswith("explained in"))
    return ["- " + item.strip() for item in block.split("- ")[1:]]


def test_a_missing_claim_keeps_the_exact_message_and_explains_the_bare_not_found(
    tmp_path: Path, capsys: Capsys
) -> None:
    claim = {"name": "v", "persistentVolumeClaim": {"claimName": "missing"}}
    cluster = write_yaml(tmp_path / "c.yaml", node("n1"), pod("p", volumes=[claim]))
    code, out, _ = run_cli(capsys, "explain", "default/p", "--snapshot", str(cluster))
    assert code == 0
    assert '0/1 nodes are available: persistentvolumeclaim "missing" not found. not found' in out
    assert "Preemption would not help: not found" in out
    (meaning,) = plain_block(out)
    assert meaning.startswith('- "not found" (at the end): preemption was not tried. A PreFilter plugin')


def test_json_carries_the_plain_words_beside_the_exact_message(tmp_path: Path, capsys: Capsys) -> None:
    """Before, only the table said what the terse texts mean; `-o json` had the bare message."""
    claim = {"name": "v", "persistentVolumeClaim": {"claimName": "missing"}}
    cluster = write_yaml(
        tmp_path / "c.yaml", node("n1"), pod("p", volumes=[claim]), pod("fine", requests={"cpu": "1"})
    )
    out = run_cli(capsys, "explain", "default/p", "--snapshot", str(cluster), "-o", "json")[1]
    report = json.loads(out)
    exact = '0/1 nodes are available: persistentvolumeclaim "missing" not found. not found'
    assert report["message"] == exact
    assert report["plainWords"] == plain_words(report["message"])
    assert len(report["plainWords"]) == 1 and report["plainWords"][0].startswith('"not found" (at the end)')
    fine = json.loads(run_cli(capsys, "explain", "default/fine", "--snapshot", str(cluster), "-o", "json")[1])
    assert (fine["verdict"], fine["plainWords"]) == ("Schedulable", [])


def test_each_terse_preemption_text_gets_its_meaning(tmp_path: Path, capsys: Capsys) -> None:
    cluster = write_yaml(
        tmp_path / "c.yaml",
        node("n1", cpu="4"),
        pod("big", requests={"cpu": "8"}),
        pod("never", requests={"cpu": "8"}, preemptionPolicy="Never"),
    )
    out = run_cli(capsys, "explain", "default/big", "--snapshot", str(cluster))[1]
    assert plain_block(out) == [f"- {plain_words('Preemption is not helpful for scheduling')[0]}"]
    out = run_cli(capsys, "explain", "default/never", "--snapshot", str(cluster))[1]
    assert plain_block(out)[0].startswith('- "not eligible due to preemptionPolicy=Never": this pod never')


def test_plain_messages_get_no_translation() -> None:
    assert plain_words("0/3 nodes are available: 3 Insufficient cpu.", None) == []
    assert plain_words('persistentvolumeclaim "not found" is odd') == []  # "not found" mid-sentence
    # Each pattern matches upstream's own wording.
    upstream = [
        "0/1 nodes are available: x. not found",
        "preemption: 0/2 nodes are available: 2 Preemption is not helpful for scheduling.",
        "preemption: 0/2 nodes are available: 2 No preemption victims found for incoming pod.",
        "preemption: not eligible due to preemptionPolicy=Never.",
        "0/2 nodes are available: pod has unbound immediate PersistentVolumeClaims.",
        "2 node(s) unavailable due to one or more pvc(s) bound to non-existent pv(s)",
        "minCount (2) cannot be satisfied: 0 scheduled, 1 remaining, "
        "pod group preemption: No preemption victims found for incoming preemptor",
        "waiting for minCount pods from a gang to appear in scheduling queue",
        'waiting for pods\'s pod group "train" to appear in scheduling queue',
    ]
    assert [len(plain_words(text)) for text in upstream] == [1] * len(PLAIN_WORDS)

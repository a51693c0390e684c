"""The differential tests' assertion messages come from Tally: what it counts and what it prints."""

from __future__ import annotations

from kubesched.harness.differential.run import Tally


def test_made_counts_every_comparison_agreeing_or_not() -> None:
    tally = Tally()
    tally.comparisons = {"node": [3, 4], "message": [0, 2]}
    assert tally.made() == {"node": 4, "message": 2}


def test_the_mismatch_report_names_each_mismatch_and_the_gates() -> None:
    tally = Tally()
    assert tally.mismatch_report() == ""
    tally.mismatches = [
        {
            "scenario": 7,
            "pod": "ns/p0",
            "comparison": "node",
            "upstream": "n1",
            "kubesched": "n2",
            "file": "/tmp/s7/scenario.yaml",
        }
    ]
    report = tally.mismatch_report(("--feature-gates=GenericWorkload=true",))
    assert "MISMATCH seed=7 pod=ns/p0 node" in report
    assert '"n1"' in report and '"n2"' in report
    assert "kubesched simulate /tmp/s7/scenario.yaml --config /tmp/s7/scheduler-config.yaml" in report
    assert "--feature-gates=GenericWorkload=true --explain" in report

"""reused_heap: a cycle's large arrays reuse the pages the previous cycle freed.

Each case runs in a fresh interpreter: whether a freed block goes back to the kernel depends on
where it sits in the heap, which the tests that ran before would otherwise decide.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

from kubesched.simulate.malloc import _glibc

CYCLES = textwrap.dedent(
    """
    import json, resource, sys
    import numpy as np
    from kubesched.simulate.malloc import reused_heap

    def faults(cycles):
        before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
        for _ in range(cycles):
            scores = np.ones(50_000, dtype=np.int64)  # one int64 per node at 50,000 nodes
            totals = scores * 2
            del scores, totals
        return resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before

    out = {"before": faults(200)}
    with reused_heap():
        faults(5)  # the heap grows once
        out["inside"] = faults(200)
    out["after"] = faults(200)
    print(json.dumps(out))
    """
)


@pytest.mark.skipif(_glibc() is None, reason="the C library is not glibc")
def test_large_blocks_are_reused_within_a_run_and_returned_after() -> None:
    done = subprocess.run([sys.executable, "-c", CYCLES], capture_output=True, text=True, check=True)
    faults = json.loads(done.stdout)
    pages = 50_000 * 8 // 4096
    assert faults["before"] > 50 * pages, faults  # glibc's default: the pages fault again each cycle
    assert faults["inside"] < pages, faults
    assert faults["after"] > 50 * pages, faults  # trimming is back once the run ends

"""Upstream's terse texts in plain words, for `explain` to print beside the exact message.

The FailedScheduling message is kube-scheduler's, word for word, and stays so: users grep for it and
compare it with their cluster's Events. But a few of its parts say little to someone who has not
read the scheduler's source: a bare `not found` (the preemption step found no state because a
PreFilter plugin had already rejected the pod), `Preemption is not helpful for scheduling`, ... Each
such part found in a message gets one sentence saying what it means.
"""

from __future__ import annotations

import re

__all__ = ["PLAIN_WORDS", "plain_words"]

#: (pattern of an upstream text, what it means). The patterns match the exact upstream wording.
PLAIN_WORDS: tuple[tuple[re.Pattern[str], str], ...] = (
    (
        re.compile(r"(?:^|\. |: )not found\.?$"),
        '"not found" (at the end): preemption was not tried. A PreFilter plugin rejected the pod '
        "before any node was looked at, so the preemption step found no state to work from, and "
        "upstream prints the lookup's bare error",
    ),
    (
        re.compile(r"Preemption is not helpful for scheduling"),
        '"Preemption is not helpful for scheduling": evicting lower-priority pods would not help, '
        "since every node rejected the pod for a reason eviction cannot change (unresolvable)",
    ),
    (
        re.compile(r"No preemption victims found for incoming pod"),
        '"No preemption victims found for incoming pod": on no node would evicting pods of lower '
        "priority (that disruption budgets allow to go) make room for this pod",
    ),
    (
        re.compile(r"pod group preemption: No preemption victims found for incoming preemptor"),
        '"pod group preemption: No preemption victims found for incoming preemptor": pod-group '
        "preemption found no pods of lower priority whose eviction would make room for the whole group",
    ),
    (
        re.compile(r"waiting for minCount pods from a gang to appear in scheduling queue"),
        '"waiting for minCount pods from a gang to appear in scheduling queue": fewer pods of the group '
        "exist than its minCount; none is tried until enough of them are created",
    ),
    (
        re.compile(r"waiting for pods's pod group \"[^\"]*\" to appear in scheduling queue"),
        '"waiting for pods\'s pod group ... to appear": the pods name a PodGroup that does not exist; '
        "they wait until it is created",
    ),
    (
        re.compile(r"not eligible due to preemptionPolicy=Never"),
        '"not eligible due to preemptionPolicy=Never": this pod never evicts others (its '
        "preemptionPolicy is Never), so preemption was not tried",
    ),
    (
        re.compile(r"pod has unbound immediate PersistentVolumeClaims"),
        '"pod has unbound immediate PersistentVolumeClaims": a claim the pod uses has '
        "volumeBindingMode Immediate and no volume yet; the PersistentVolume controller must bind it "
        "before the pod can be scheduled",
    ),
    (
        re.compile(r"bound to non-existent pv\(s\)"),
        '"bound to non-existent pv(s)": a claim the pod uses names a PersistentVolume that does not exist',
    ),
)


def plain_words(*texts: str | None) -> list[str]:
    """One sentence for each terse upstream text found in `texts`, in PLAIN_WORDS order, once each."""
    return [meaning for pattern, meaning in PLAIN_WORDS if any(t and pattern.search(t) for t in texts)]

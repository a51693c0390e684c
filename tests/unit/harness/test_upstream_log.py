"""The binary's log, as the differential harness reads it: what it waits for and what it counts."""

from __future__ import annotations

from pathlib import Path

from kubesched.harness.differential.upstream import _GROUP_ATTEMPT, _HELD_FOR_GROUP, _Log

#: Lines as kube-scheduler v1.37.2 writes them with `schedule_one_podgroup=5`, `scheduling_queue=5`.
LINES = [
    'I1205 07:31:42.813280   10986 scheduling_queue.go:906] "Pod with pod group added to '
    'incompletePodGroupPods, waiting for one or more parent pod group objects to be observed" '
    'podGroup="g1-w3" pod="default/g1-w3-p0"',
    'I1205 07:31:42.835950   10986 schedule_one_podgroup.go:575] "Running a pod group scheduling '
    'algorithm" podGroupType="podgroup" podGroup="default/g1-w3" unscheduledPodsCount=3',
    'I1205 07:31:44.001288   10986 schedule_one_podgroup.go:575] "Running a pod group scheduling '
    'algorithm" podGroupType="podgroup" podGroup="default/g1-w3" unscheduledPodsCount=4',
]


def test_each_group_cycle_and_its_size_is_kept_in_order(tmp_path: Path) -> None:
    path = tmp_path / "kube-scheduler.log"
    path.write_text("\n".join(LINES[:2]) + "\n" + LINES[2][:40])
    log = _Log(path)
    log.read()
    assert log.group_cycles == {"default/g1-w3": [3]}
    assert log.count(_HELD_FOR_GROUP, "default/g1-w3-p0") == 1
    with path.open("a") as f:  # the rest of a line the scheduler was writing
        f.write(LINES[2][40:] + "\n")
    log.read()
    assert log.group_cycles == {"default/g1-w3": [3, 4]}


def test_each_pod_group_cycle_is_counted_once_whatever_its_placements(tmp_path: Path) -> None:
    """One cycle of a group asking for a rack: its start, then the algorithm once per rack."""
    attempt = (
        'I1205 11:30:09.001820   24809 schedule_one_podgroup.go:126] "Attempting to schedule pod group" '
        'podGroupType="podgroup" podGroup="default/g1054-w1"'
    )
    path = tmp_path / "kube-scheduler.log"
    path.write_text("\n".join([attempt, LINES[1], LINES[1]]) + "\n")
    log = _Log(path)
    log.read()
    assert log.group_cycles == {"default/g1-w3": [3, 3]}
    assert log.count(_GROUP_ATTEMPT, "default/g1054-w1") == 1

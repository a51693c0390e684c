"""The binary's log, as the differential harness reads it: what it waits for and what it counts."""

from __future__ import annotations

from pathlib import Path

from kubesched.harness.differential.upstream import _GROUP_ATTEMPT, _HELD_FOR_GROUP, _Log

#: The algorithm's line, written once per placement tried (not counted as a cycle).
_RUNNING = "Running a pod group scheduling algorithm"

#: Lines as kube-scheduler v1.37.2 writes them with `schedule_one_podgroup=5`, `scheduling_queue=5`.
LINES = [
    'I1205 07:31:42.813280   10986 scheduling_queue.go:906] "Pod with pod group added to '
    'incompletePodGroupPods, waiting for one or more parent pod group objects to be observed" '
    'podGroup="g1-w3" pod="default/g1-w3-p0"',
    'I1205 07:31:42.835950   10986 schedule_one_podgroup.go:575] "Running a pod group scheduling '
    'algorithm" podGroupType="podgroup" podGroup="default/g1-w3" unscheduledPodsCount=3',
    'I1205 07:31:42.840001   10986 schedule_one_podgroup.go:908] "Unable to schedule a pod group" '
    'podGroupType="podgroup" podGroup="default/g1-w3" unschedulablePods=3 '
    'err="pod group is unschedulable, 0/1 placements are available, first placement status: '
    'minCount (4) cannot be satisfied: 3 scheduled, 0 remaining"',
    'I1205 07:31:44.001288   10986 schedule_one_podgroup.go:575] "Running a pod group scheduling '
    'algorithm" podGroupType="podgroup" podGroup="default/g1-w3" unscheduledPodsCount=4',
    'I1205 07:31:44.002288   10986 schedule_one_podgroup.go:896] "Successfully scheduled a pod group" '
    'podGroupType="podgroup" podGroup="default/g1-w3" scheduledPods=3 unschedulablePods=1',
]


def test_each_group_cycle_and_its_size_is_kept_in_order(tmp_path: Path) -> None:
    """A cycle's size is read from its outcome's line (scheduled and unschedulable pods summed)."""
    path = tmp_path / "kube-scheduler.log"
    path.write_text("\n".join(LINES[:4]) + "\n" + LINES[4][:40])
    log = _Log(path)
    log.read()
    assert log.group_cycles == {"default/g1-w3": [3]}
    assert log.count(_HELD_FOR_GROUP, "default/g1-w3-p0") == 1
    with path.open("a") as f:  # the rest of a line the scheduler was writing
        f.write(LINES[4][40:] + "\n")
    log.read()
    assert log.group_cycles == {"default/g1-w3": [3, 4]}


def test_each_pod_group_cycle_is_counted_once_whatever_its_placements(tmp_path: Path) -> None:
    """One cycle of a group asking for a rack: its start, then the algorithm once per rack, then
    its outcome."""
    attempt = (
        'I1205 11:30:09.001820   24809 schedule_one_podgroup.go:126] "Attempting to schedule pod group" '
        'podGroupType="podgroup" podGroup="default/g1054-w1"'
    )
    path = tmp_path / "kube-scheduler.log"
    path.write_text("\n".join([attempt, LINES[1], LINES[1], LINES[2]]) + "\n")
    log = _Log(path)
    log.read()
    assert log.group_cycles == {"default/g1-w3": [3]}
    assert log.count(_GROUP_ATTEMPT, "default/g1054-w1") == 1


def _tree_line(stamp: str, source: str, msg: str, group: str, kv: str) -> str:
    return (
        f'I1205 {stamp}   30530 schedule_one_podgroup.go:{source}] "{msg}" '
        f'podGroupType="compositepodgroup" podGroup="default/{group}" {kv}'
    )


def test_a_child_its_tree_did_not_try_counts_the_pods_its_cycle_held(tmp_path: Path) -> None:
    """Composite seed 30 wave 1: the tree (c0, c1, c2, all three needed) popped with c0's two
    pods, two of c1's three and none of c2's. c1 failed, the composite stopped before c2 (no
    algorithm line for it), and every PodGroup of the tree got its outcome line: c2's says 0. Its
    next cycle held every pod. Read per group from the algorithm's lines, c2's first count was 2."""
    unable = "Unable to schedule a pod group"
    failed = 'err="pod group is unschedulable"'
    lines = [
        _tree_line("16:28:09.861364", "126", "Attempting to schedule pod group", "c30-w1", ""),
        _tree_line("16:28:09.861432", "575", _RUNNING, "c30-w1-c0", "unscheduledPodsCount=2"),
        _tree_line("16:28:09.862275", "575", _RUNNING, "c30-w1-c1", "unscheduledPodsCount=2"),
        _tree_line("16:28:09.902046", "908", unable, "c30-w1-c0", f"unschedulablePods=2 {failed}"),
        _tree_line("16:28:09.902057", "908", unable, "c30-w1-c2", f"unschedulablePods=0 {failed}"),
        _tree_line("16:28:09.902059", "908", unable, "c30-w1-c1", f"unschedulablePods=2 {failed}"),
        _tree_line("16:28:11.101364", "126", "Attempting to schedule pod group", "c30-w1", ""),
        _tree_line("16:28:11.101432", "575", _RUNNING, "c30-w1-c0", "unscheduledPodsCount=2"),
        _tree_line("16:28:11.102275", "575", _RUNNING, "c30-w1-c1", "unscheduledPodsCount=3"),
        _tree_line("16:28:11.102797", "575", _RUNNING, "c30-w1-c2", "unscheduledPodsCount=2"),
        _tree_line(
            "16:28:11.103488",
            "896",
            "Successfully scheduled a pod group",
            "c30-w1-c2",
            "scheduledPods=1 unschedulablePods=1",
        ),
        _tree_line("16:28:11.103490", "908", unable, "c30-w1-c0", f"unschedulablePods=2 {failed}"),
        _tree_line("16:28:11.103492", "908", unable, "c30-w1-c1", f"unschedulablePods=3 {failed}"),
    ]
    path = tmp_path / "kube-scheduler.log"
    path.write_text("\n".join(lines) + "\n")
    log = _Log(path)
    log.read()
    assert log.group_cycles == {
        "default/c30-w1-c0": [2, 2],
        "default/c30-w1-c1": [2, 3],
        "default/c30-w1-c2": [0, 2],
    }
    assert log.count(_GROUP_ATTEMPT, "default/c30-w1") == 2

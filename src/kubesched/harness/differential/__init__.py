"""Differential testing against the real kube-scheduler v1.37.2.

Random small scenarios (`scenario`) are created on a real API server and scheduled one pending pod
at a time by the upstream binary (`upstream`); the objects read back are given to kubesched, and
every decision is compared (`compare`): schedulable or not, the FailedScheduling message, the chosen
node, the per-plugin scores and preemption. The gated mode (`gated`) turns the workload-aware
scheduling gates on everywhere and plays pod-group scenarios (`group_scenario`) wave by wave
(`waves`), comparing each settled wave (`group_compare`, `group_run`). `tests/differential` runs a
bounded seeded set; `benchmarks/differential.py` runs long ones (docs/differential.md).
"""

"""Differential testing against the real kube-scheduler v1.37.2.

Random small scenarios (`scenario`) are created on a real API server and scheduled one pending pod
at a time by the upstream binary (`upstream`); the objects read back are given to kubesched, and
every decision is compared (`compare`): schedulable or not, the FailedScheduling message, the chosen
node, the per-plugin scores and preemption. `tests/differential` runs a bounded seeded set;
`benchmarks/differential.py` runs long ones.
"""

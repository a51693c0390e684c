"""Settings shared by every test.

Hypothesis runs without a per-example deadline: tests assert behaviour, never speed (speed is
measured by `benchmarks/`), and on a loaded 2-core CI machine a 200 ms deadline fails at random.
"""

from __future__ import annotations

from hypothesis import settings

settings.register_profile("kubesched", deadline=None, print_blob=True)
settings.load_profile("kubesched")

"""Hypothesis settings for every test and proof: no per-example time limit.

Hypothesis fails an example that runs past 200 ms by default, a timed assertion in disguise;
on a shared two-core machine that flakes without any defect. Speed is measured in `bench/`,
never in tests, so the limit is off everywhere.
"""

from hypothesis import settings

settings.register_profile("slidingpolicy", deadline=None)
settings.load_profile("slidingpolicy")

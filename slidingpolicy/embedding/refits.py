"""An online learner's refits beside an engine: each folded and fitted on a thread of its
own, off every step's path, and put in force a fixed number of observations after it was
asked for, so that the plans do not depend on the thread's timing.

The data and the fit are the offline engine's inline refit's (`learner.refit` is the same
three steps run at once): at the observation where a refit falls due, the learner's pending
rows are handed over (`Online.hand_over`, a record update); the thread folds them into the
statistics and fits (`learner.refitted`); the refit is put in force with the rows observed
since still pending (`Online.install`). Only the observation that puts it in force differs:
the next for a warm-up refit (a scaling of the prior, `learner.warming_up`, a few hundred
µs), `REFIT_LAG` later for a full one. A refit not done by then is waited for; one that
falls due while another is out is handed over when that one is put in force.
"""

from __future__ import annotations

from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

from slidingpolicy.policies.learner import Refit, refitted, warming_up
from slidingpolicy.policies.online import Online
from slidingpolicy.records.plan import BatchPlan
from slidingpolicy.records.state import SchedulerState

REFIT_LAG = 8
"""Observations from a learner's asking for a full refit to its refit put in force: longer
than any fit takes beside a running engine (a fold and three bounded least-squares solves,
1–6 ms, as long as a short step)."""


class Refits:
    """The refits of a learning policy's learner, done on the thread ``slidingpolicy-refit``."""

    def __init__(self) -> None:
        self.observations = 0
        """Observations made so far (the clock of the lags)."""
        self._pool = ThreadPoolExecutor(1, "slidingpolicy-refit")
        self._fitting: Future[Refit] | None = None
        self._in_force_at = 0
        self._asked = False

    def observe(
        self,
        policy: Online[Any],
        pstate: Any,
        state: SchedulerState,
        executed: BatchPlan,
        latency: float,
    ) -> Any:
        """`pstate` once `policy` has observed the step: the refit due now put in force,
        then a refit the observation asks for handed to the thread (module docstring)."""
        self.observations += 1
        if self._fitting is not None and self.observations >= self._in_force_at:
            fitting, self._fitting = self._fitting, None
            pstate = policy.install(pstate, fitting.result())
        pstate, due = policy.observe_deferring(pstate, state, executed, latency)
        self._asked = self._asked or due
        if self._fitting is None and self._asked:
            self._asked = False
            pstate, handed = policy.hand_over(pstate)
            self._fitting = self._pool.submit(refitted, handed, policy.config)
            lag = 1 if warming_up(handed, policy.config) else REFIT_LAG
            self._in_force_at = self.observations + lag
        return pstate

    def close(self) -> None:
        """End the thread; a refit not yet in force is dropped."""
        self._pool.shutdown(cancel_futures=True)

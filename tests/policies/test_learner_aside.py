"""A refit done aside (handed over, refitted off the engine's path, installed later) is the
refit done at once: the same predictor, and once everything pending is folded, the same
statistics and window, whatever was observed while it was out. The engine's own path folds
nothing while a refit is due or out.
"""

from __future__ import annotations

import attrs
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from slidingpolicy import default_predictor
from slidingpolicy.errors import InvalidRecordError
from slidingpolicy.policies import learner as learning
from slidingpolicy.policies.learner import FOLD_ROWS, Learner, OnlineConfig
from tests.policies.test_learner import draw_batch

PRIOR = default_predictor()


def same_statistics(a: Learner, b: Learner) -> None:
    """Equal statistics and windows, to the rounding of summing in another grouping."""
    for field in ("gram", "moment", "count"):
        np.testing.assert_allclose(getattr(a.stats, field), getattr(b.stats, field), rtol=1e-12)
    assert a.window.size == b.window.size
    np.testing.assert_array_equal(a.window.ratios(PRIOR, 0.0), b.window.ratios(PRIOR, 0.0))


@given(st.integers(0, 2**16), st.integers(1, 8), st.integers(0, 12))
@settings(max_examples=12, deadline=None)
def test_a_refit_done_aside_and_installed_at_once_is_the_refit(
    seed: int, refit_every: int, warmup: int
) -> None:
    """`observe_deferring`, then `hand_over`, `refitted` and `installed` at once, is
    `observe`, bit for bit."""
    config = OnlineConfig(refit_every=refit_every, warmup=warmup)
    rng = np.random.default_rng(seed)
    truth = PRIOR.scaled(1.7)
    now = aside = learning.start(PRIOR, config)
    deferred = 0
    for _ in range(3 * warmup + 4 * refit_every + 10):
        x, scenario = draw_batch(rng)
        latency = truth.predict_features(x, scenario) * float(np.exp(0.1 * rng.normal()))
        now = learning.observe(now, config, x, scenario, latency)
        aside, due = learning.observe_deferring(aside, config, x, scenario, latency)
        if due:
            deferred += 1
            handed = learning.hand_over(aside)
            aside = learning.installed(handed, learning.refitted(handed, config))
        assert aside.predictor == now.predictor
        assert (aside.priced, aside.since_refit, aside.handed) == (now.priced, now.since_refit, 0)
        for field in ("gram", "moment", "count"):
            assert np.array_equal(getattr(aside.stats, field), getattr(now.stats, field))
        assert np.array_equal(aside.pending.latencies, now.pending.latencies)
        assert aside.window.size == now.window.size
    assert deferred > 0


@given(
    st.integers(0, 2**16),
    st.integers(1, 40),
    st.lists(st.integers(0, 2 * FOLD_ROWS), min_size=0, max_size=6),
    st.sampled_from([1.0, 0.999]),
)
@settings(max_examples=25, deadline=None)
def test_what_is_observed_while_a_refit_is_out_is_kept_for_after_it(
    seed: int, before: int, runs: list[int], forgetting: float
) -> None:
    """A refit handed over after `before` batches, then batches and decode runs (some
    longer than `FOLD_ROWS`) observed while it is out, then installed: the predictor is the
    refit's at the hand-over, nothing observed since is lost or folded twice, and, all folded,
    the statistics and window are those of the refit done at once with the same
    observations after it."""
    config = OnlineConfig(refit_every=10_000, warmup=0, forgetting=forgetting)
    rng = np.random.default_rng(seed)
    learner = learning.start(PRIOR, config)
    for _ in range(before):
        x, scenario = draw_batch(rng)
        learner = learning.observe_deferring(learner, config, x, scenario, 0.05)[0]
    at_once = learning.refit(learner, config)
    aside = learning.hand_over(learner)
    refit = learning.refitted(aside, config)
    since = 0
    for steps in runs:
        x, scenario = draw_batch(rng)
        latencies = (0.01 + 0.01 * rng.random(steps)).tolist()
        at_once = learning.observe_deferring(at_once, config, x, scenario, 0.05)[0]
        aside = learning.observe_deferring(aside, config, x, scenario, 0.05)[0]
        at_once = learning.observe_decodes(at_once, config, 8, 900, latencies)
        aside = learning.observe_decodes(aside, config, 8, 900, latencies)
        since += 1 + steps
    assert aside.handed == learner.pending_rows
    assert aside.pending_rows == learner.pending_rows + since
    assert aside.stats is learner.stats
    aside = learning.installed(aside, refit)
    assert aside.predictor == at_once.predictor
    assert (aside.handed, aside.pending_rows) == (0, since)
    aside = learning.observe_decodes(aside, config, 8, 900, [0.01] * FOLD_ROWS)
    at_once = learning.observe_decodes(at_once, config, 8, 900, [0.01] * FOLD_ROWS)
    same_statistics(learning.refit(aside, config), learning.refit(at_once, config))


def test_a_refit_that_falls_due_folds_nothing_on_the_engine_s_path() -> None:
    """It failed before: the rows were folded into the statistics at the observation where
    the refit fell due, on the engine's thread (146 µs at p50 on the fake engine)."""
    config = OnlineConfig(warmup=1)
    learner = learning.start(PRIOR, config)
    x, scenario = draw_batch(np.random.default_rng(0))
    after, due = learning.observe_deferring(learner, config, x, scenario, 0.05)
    assert due
    assert after.stats is learner.stats
    assert after.window is learner.window
    assert after.pending_rows == 1


def test_a_second_hand_over_and_a_foreign_refit_are_refused_naming_the_field() -> None:
    config = OnlineConfig(warmup=10)
    learner = learning.start(PRIOR, config)
    x, scenario = draw_batch(np.random.default_rng(1))
    learner = learning.observe_deferring(learner, config, x, scenario, 0.05)[0]
    handed = learning.hand_over(learner)
    with pytest.raises(InvalidRecordError, match=r"learner.*handed"):
        learning.hand_over(handed)
    with pytest.raises(InvalidRecordError, match=r"learner.*handed"):
        learning.observe(handed, config, x, scenario, 0.05)
    refit = learning.refitted(handed, config)
    with pytest.raises(InvalidRecordError, match=r"refit.*rows"):
        learning.installed(attrs.evolve(handed, handed=0), refit)

"""The online learner (eq. 6, learned): the predictor and its latency margin, learned from the
batches a policy runs, with the offline predictor as the prior.

Pure functions over a `Learner` record that the policy state carries (no clock, no I/O):

- every observation is a row (x, scenario, y); rows wait in `pending` and are folded into
  the sufficient statistics (`fit.PredictorStats.fold`) when a refit is due, or when
  `FOLD_ROWS` of them wait, so that an observation costs O(batch); each row weighs 1/T̂²
  (least squares on relative errors, `_fold`);
- beside an engine, a refit runs aside in three steps: the rows pending when it fell due
  are handed over (`hand_over`), folded and fitted off the engine's path (`refitted`), and
  put in force with the rows that came since still pending (`installed`): the same
  statistics and predictor as the refit run at once (`refit`);
- a refit is due at every observation *with prefill work* (a priced batch) up to the
  `warmup`-th, then at every `refit_every`-th; decode-only iterations never trigger one
  (their plan does not depend on the predictor), so a closed-form decode run costs one
  vectorized fold at most;
- cold start: before `warmup` priced batches, a refit only scales the prior to the observed
  level (`fit.prior_scale`), since a handful of batches cannot pin nine coefficients; from
  the `warmup`-th on it is the full bounded fit under the prior (`fit.solve`,
  `prior_weight`);
- the margin is the offline rule, `fit.calibrate_margin` (the `margin_quantile` of y/T̂ over
  batches priced at ≥ `margin_floor`), over the window of the last `margin_window` priced
  batches re-priced by the refitted predictor, and never below the same quantile of a
  log-normal fitted to those ratios (`fit.log_normal_margin`): a window of n ratios shows
  its empirical quantile only down to a 1/n tail; while fewer than `warmup` ratios are
  priced, it is at least `cold_margin`, and it is never above `max_margin`.

docs/decisions.md ("The predictor learns online by default") has the measurements behind the
defaults.
"""

from __future__ import annotations

from collections.abc import Sequence

import attrs
import numpy as np

from slidingpolicy import _validate
from slidingpolicy._arrays import read_only
from slidingpolicy.errors import InvalidRecordError
from slidingpolicy.pricing.features import DECODE, FloatArray, IntArray, tile_count
from slidingpolicy.pricing.fit import in_order, prior_scale, solve
from slidingpolicy.pricing.margin import (
    MARGIN_FLOOR,
    MARGIN_QUANTILE,
    calibrate_margin,
    log_normal_margin,
)
from slidingpolicy.pricing.model import LatencyPredictor
from slidingpolicy.pricing.samples import PredictorStats
from slidingpolicy.pricing.window import BatchWindow

FOLD_ROWS = 256
"""Pending rows folded into the statistics without a refit (bounds the pending memory of a
long decode-only stretch; the fold is the same whether rows came one by one or in a run)."""


@attrs.frozen(slots=True)
class OnlineConfig:
    """How the online learner learns (module docstring).

    - `learn`: whether the policy learns its predictor and latency margin online (an option
      of every policy, not a field here): true by default for SlidingServe's
      configurations, false for the baselines; false is the reference without learning.
    - `refit_every`: after the warm-up, refit at every this many priced batches.
    - `forgetting`: weight kept by old observations at each new one (1.0 = keep all).
    - `prior_weight`: how many observations the offline predictor, scaled to the data,
      counts for in a full refit (`fit.solve`).
    - `warmup`: priced batches before full refits start, and priced ratios before the margin
      may fall below `cold_margin`.
    - `cold_margin`: the least margin while the window holds fewer than `warmup` ratios.
    - `margin_window`: the priced batches the margin is calibrated on.
    - `margin_quantile`: the share of those the margin covers (`fit.MARGIN_QUANTILE`), < 1.
    - `margin_floor`: batches predicted under this many seconds do not set the margin
      (`fit.MARGIN_FLOOR`), and weigh in the fit as if they took that long (> 0).
    - `max_margin`: the most the learned margin may be. Only ratios with no signal left
      reach it (latencies spread over decades); plans then still run, each held to a tenth
      of its deadline.
    """

    refit_every: int = 32
    forgetting: float = 1.0
    prior_weight: float = 0.1
    warmup: int = 64
    cold_margin: float = 1.5
    margin_window: int = 1024
    margin_quantile: float = MARGIN_QUANTILE
    margin_floor: float = MARGIN_FLOOR
    max_margin: float = 10.0

    def __attrs_post_init__(self) -> None:
        record = "online config"
        if type(self.refit_every) is int and self.refit_every == 0:
            raise InvalidRecordError(
                record, "refit_every", "=0 must be >= 1 (learn=false turns learning off)"
            )
        _validate.integer(record, "refit_every", self.refit_every, 1)
        if _validate.positive(record, "forgetting", self.forgetting) > 1.0:
            raise InvalidRecordError(record, "forgetting", f"={self.forgetting} must be <= 1")
        _validate.non_negative(record, "prior_weight", self.prior_weight)
        _validate.integer(record, "warmup", self.warmup, 0)
        if _validate.finite(record, "cold_margin", self.cold_margin) < 1.0:
            raise InvalidRecordError(record, "cold_margin", f"={self.cold_margin} must be >= 1")
        _validate.integer(record, "margin_window", self.margin_window, 1)
        quantile = _validate.finite(record, "margin_quantile", self.margin_quantile)
        if not 0.0 < quantile < 1.0:
            raise InvalidRecordError(record, "margin_quantile", f"={quantile} must be in (0, 1)")
        _validate.positive(record, "margin_floor", self.margin_floor)
        if _validate.finite(record, "max_margin", self.max_margin) < self.cold_margin:
            raise InvalidRecordError(
                record, "max_margin", f"={self.max_margin} must be >= cold_margin"
            )


@attrs.frozen(slots=True)
class Rows:
    """Observations not yet folded: features (k × w), scenarios (k), latencies (k), in the
    order they ran (however they came, one by one or in a decode run: the same arrays)."""

    features: FloatArray
    scenarios: IntArray
    latencies: FloatArray

    @classmethod
    def empty(cls, width: int) -> Rows:
        """No rows of `width` features."""
        return cls(np.zeros((0, width)), np.zeros(0, dtype=np.int64), np.zeros(0))

    def after(self, count: int) -> Rows:
        """The rows after the first `count`."""
        return Rows(self.features[count:], self.scenarios[count:], self.latencies[count:])

    def then(self, rows: Rows) -> Rows:
        """These rows, then `rows`."""
        return Rows(
            np.concatenate((self.features, rows.features)),
            np.concatenate((self.scenarios, rows.scenarios)),
            np.concatenate((self.latencies, rows.latencies)),
        )


@attrs.frozen(slots=True)
class Learner:
    """What the learner knows: the offline `prior`, the `predictor` in force (its margin
    included), the folded statistics, the window of priced batches, the rows not yet folded,
    the priced batches seen, those since the last refit, and how many of the pending rows
    a refit not yet in force was handed (`hand_over`: none of those is folded here)."""

    prior: LatencyPredictor
    predictor: LatencyPredictor
    stats: PredictorStats
    window: BatchWindow
    pending: Rows
    priced: int = 0
    since_refit: int = 0
    handed: int = 0

    @property
    def pending_rows(self) -> int:
        """How many observations wait to be folded."""
        return len(self.pending.latencies)


def start(prior: LatencyPredictor, config: OnlineConfig) -> Learner:
    """Nothing observed yet: the prior, put in the fit's monotone order (`fit.in_order`, so
    that every predictor the learner installs is), with at least the cold margin."""
    prior = in_order(prior)
    width = len(prior.fallback.weights)
    margin = min(max(prior.margin, config.cold_margin), config.max_margin)
    predictor = attrs.evolve(prior, margin=margin)
    window = BatchWindow.empty(config.margin_window, width)
    stats = PredictorStats.empty(prior.tile)
    return Learner(prior, predictor, stats, window, Rows.empty(width))


def observe(
    learner: Learner, config: OnlineConfig, features: FloatArray, scenario: int, latency: float
) -> Learner:
    """One iteration ran a batch with `features` of `scenario` in `latency` seconds."""
    learner, due = _observed(learner, config, features, scenario, latency)
    return refit(learner, config) if due else learner


def observe_deferring(
    learner: Learner, config: OnlineConfig, features: FloatArray, scenario: int, latency: float
) -> tuple[Learner, bool]:
    """`observe`, but the refit it would run is left to the caller (True when one is due):
    it hands the learner over (`hand_over`), refits it aside (`refitted`) and puts the
    refit in force (`installed`)."""
    learner, due = _observed(learner, config, features, scenario, latency)
    return (attrs.evolve(learner, since_refit=0), True) if due else (learner, False)


@attrs.frozen(slots=True)
class Refit:
    """A refit done aside (`refitted`): the statistics and window with the `rows` handed
    over folded in, and the predictor fitted on them."""

    stats: PredictorStats
    window: BatchWindow
    predictor: LatencyPredictor
    rows: int


def hand_over(learner: Learner) -> Learner:
    """The learner with its pending rows handed to a refit (`refitted` of the learner
    returned); none of them is folded until that refit is `installed`."""
    if learner.handed:
        raise InvalidRecordError(
            "learner", "handed", f"={learner.handed}: a refit is out already; install it first"
        )
    return attrs.evolve(learner, handed=learner.pending_rows)


def refitted(learner: Learner, config: OnlineConfig) -> Refit:
    """The refit of a learner handed over: its handed rows folded (`_fold`, weighed by the
    predictor they were observed under) and `fitted` on them. Off the engine's path."""
    folded = _fold(learner, config)
    return Refit(folded.stats, folded.window, fitted(folded, config), learner.handed)


def installed(learner: Learner, refit: Refit) -> Learner:
    """`learner` with `refit` in force: its statistics, window and predictor, and the rows
    observed since it was handed over still pending."""
    if refit.rows != learner.handed:
        raise InvalidRecordError(
            "refit", "rows", f"={refit.rows}, but the learner handed over {learner.handed}"
        )
    return attrs.evolve(
        learner,
        predictor=refit.predictor,
        stats=refit.stats,
        window=refit.window,
        pending=learner.pending.after(refit.rows),
        handed=0,
    )


def _observed(
    learner: Learner, config: OnlineConfig, features: FloatArray, scenario: int, latency: float
) -> tuple[Learner, bool]:
    """The observation pending (folded when `FOLD_ROWS` wait), and whether a refit is due."""
    rows = Rows(features.reshape(1, -1), np.array([scenario]), np.array([latency]))
    learner = _pend(learner, rows)
    if scenario != DECODE:
        priced, since = learner.priced + 1, learner.since_refit + 1
        learner = attrs.evolve(learner, priced=priced, since_refit=since)
        if priced <= config.warmup or since >= config.refit_every:
            return learner, True
    return _fold_if_full(learner, config), False


def observe_decodes(
    learner: Learner, config: OnlineConfig, count: int, context: int, latencies: Sequence[float]
) -> Learner:
    """len(latencies) decode-only iterations of `count` decodes holding `context` cached
    tokens before the first (each iteration adds `count`): as many `observe` calls would,
    the rows built at once."""
    steps = len(latencies)
    width = learner.stats.moment.shape[1] - 1
    features = np.zeros((steps, width))
    held = context + count * np.arange(steps, dtype=np.float64)
    features[:, 2] = held
    features[:, 3] = count
    features[:, 4] = held
    if learner.prior.tile is not None:
        features[:, 7] = tile_count(count, learner.prior.tile)
    scenarios = np.full(steps, DECODE, dtype=np.int64)
    measured = np.asarray(latencies, dtype=np.float64)
    if learner.handed:
        return _pend(learner, Rows(features, scenarios, measured))
    learner, done = _fold_if_full(learner, config), 0
    while done < steps:
        take = min(steps - done, FOLD_ROWS - learner.pending_rows)
        part = slice(done, done + take)
        learner = _pend(learner, Rows(features[part], scenarios[part], measured[part]))
        if learner.pending_rows >= FOLD_ROWS:
            learner = _fold(learner, config)
        done += take
    return learner


def refit(learner: Learner, config: OnlineConfig) -> Learner:
    """Fold what is pending, and put the predictor fitted on it in force: the three steps
    of a refit aside (`hand_over`, `refitted`, `installed`) run at once."""
    handed = hand_over(learner)
    return attrs.evolve(installed(handed, refitted(handed, config)), since_refit=0)


def fitted(learner: Learner, config: OnlineConfig) -> LatencyPredictor:
    """The predictor a refit of `learner` (its rows folded) puts in force: the prior scaled
    during the warm-up, else `fit.solve`, with the margin calibrated on the window re-priced
    by it."""
    prior, stats = learner.prior, learner.stats
    if warming_up(learner, config):
        fit = prior.scaled(prior_scale(stats, prior))
    else:
        fit = solve(stats, prior=prior, source=prior.source, prior_weight=config.prior_weight)
    ratios = learner.window.ratios(fit, config.margin_floor)
    quantile = config.margin_quantile
    margin = max(calibrate_margin(ratios, quantile), log_normal_margin(ratios, quantile))
    if len(ratios) < config.warmup:
        margin = max(margin, config.cold_margin)
    margin = min(margin, config.max_margin)
    return attrs.evolve(fit, margin=margin)


def warming_up(learner: Learner, config: OnlineConfig) -> bool:
    """Whether a refit of `learner` is the warm-up's: a scaling of the prior (fewer than
    `warmup` priced batches seen), a fraction of a full fit's cost."""
    return learner.priced < config.warmup


def _pend(learner: Learner, rows: Rows) -> Learner:
    return attrs.evolve(learner, pending=learner.pending.then(rows))


def _fold_if_full(learner: Learner, config: OnlineConfig) -> Learner:
    """Folded when `FOLD_ROWS` rows wait and none is handed over (`hand_over`)."""
    if learner.pending_rows < FOLD_ROWS or learner.handed:
        return learner
    return _fold(learner, config)


def _fold(learner: Learner, config: OnlineConfig) -> Learner:
    """The pending rows folded into the statistics, and the priced ones into the window.

    Each row weighs (floor / T̂)², T̂ its price by the predictor in force (every pending row
    was observed under it) and at least `margin_floor`: least squares on relative errors.
    Step noise is multiplicative (its spread grows with the latency), and the margin covers
    y/T̂: unweighted, 300 ms batches outweigh 20 ms ones 225 to 1 and the fit gives the
    small chunks that a tight T_cur leaves the error the margin must then cover."""
    if learner.pending_rows == 0:
        return learner
    pending = learner.pending
    features, scenarios, latencies = pending.features, pending.scenarios, pending.latencies
    floor = config.margin_floor
    predicted = np.maximum(learner.predictor.predict_rows(features, scenarios), floor)
    weights = (floor / predicted) ** 2
    stats = learner.stats.fold(features, scenarios, latencies, config.forgetting, weights)
    priced = scenarios != DECODE
    window = learner.window.push(
        read_only(features[priced]), read_only(scenarios[priced]), read_only(latencies[priced])
    )
    empty = Rows.empty(features.shape[1])
    return attrs.evolve(learner, stats=stats, window=window, pending=empty)

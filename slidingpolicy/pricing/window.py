"""The recent batches with prefill work, kept to calibrate the latency margin online.

A bounded ring of the last `capacity` such batches — features, scenario, measured latency —
so that the margin is the offline rule (`fit.calibrate_margin` over y/T̂) applied to what the
engine ran lately, with T̂ the predictor in force now: a refit re-prices the whole window.
"""

from __future__ import annotations

import attrs
import numpy as np

from slidingpolicy import _validate
from slidingpolicy._arrays import read_only
from slidingpolicy.pricing.features import FloatArray, IntArray
from slidingpolicy.pricing.model import LatencyPredictor


@attrs.frozen(slots=True)
class BatchWindow:
    """The last `size` (≤ capacity) batches pushed: rows of `features`, `scenarios` and
    `latencies`; `start` is the slot the next one overwrites once the ring is full."""

    features: FloatArray
    scenarios: IntArray
    latencies: FloatArray
    size: int = 0
    start: int = 0

    @classmethod
    def empty(cls, capacity: int, width: int) -> BatchWindow:
        """Room for `capacity` batches of `width` features."""
        _validate.integer("batch window", "capacity", capacity, 1)
        return cls(
            read_only(np.zeros((capacity, width))),
            read_only(np.zeros(capacity, dtype=np.int64)),
            read_only(np.zeros(capacity)),
        )

    @property
    def capacity(self) -> int:
        """The most batches it keeps."""
        return len(self.latencies)

    def push(self, features: FloatArray, scenarios: IntArray, latencies: FloatArray) -> BatchWindow:
        """The window after the batches in these rows, in order (the oldest drop out)."""
        k = len(latencies)
        if k == 0:
            return self
        capacity = self.capacity
        if k > capacity:
            features, scenarios, latencies = (
                features[-capacity:],
                scenarios[-capacity:],
                latencies[-capacity:],
            )
            k = capacity
        slots = (self.start + np.arange(k)) % capacity
        kept_features, kept_scenarios, kept_latencies = (
            self.features.copy(),
            self.scenarios.copy(),
            self.latencies.copy(),
        )
        kept_features[slots] = features
        kept_scenarios[slots] = scenarios
        kept_latencies[slots] = latencies
        return BatchWindow(
            read_only(kept_features),
            read_only(kept_scenarios),
            read_only(kept_latencies),
            min(capacity, self.size + k),
            int((self.start + k) % capacity),
        )

    def ratios(self, predictor: LatencyPredictor, floor: float) -> FloatArray:
        """y / T̂ of the batches `predictor` prices at ≥ `floor` seconds, and above 0
        (`fit.held_out_ratios`' rule), in slot order."""
        size = self.size
        predicted = predictor.predict_rows(self.features[:size], self.scenarios[:size])
        priced = (predicted >= floor) & (predicted > 0.0)
        ratios: FloatArray = self.latencies[:size][priced] / predicted[priced]
        return ratios

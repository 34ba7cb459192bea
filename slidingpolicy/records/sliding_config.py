"""`SlidingConfig`: every knob of SlidingServe, with the paper's defaults."""

from __future__ import annotations

from typing import Literal

import attrs

from slidingpolicy import _validate
from slidingpolicy.errors import InvalidRecordError

MAX_WINDOW = 16
"""The most iterations planned jointly: the split's cost grows with the window (≈13 ms per
decision at 16 on a 60-request state, 0.17 s at 256), and the paper goes no further than k = 2."""

SplitSearch = Literal["ternary", "exact"]
Order = Literal["mlps", "edf"]
LevelOrder = Literal["remaining", "deadline"]


@attrs.frozen(slots=True)
class SlidingConfig:
    """Configuration of the SlidingServe policy and of its ablations.

    - `max_batch_tokens`: B_max, the token budget of one iteration (decodes included).
    - `urgency_threshold`: α of eq. 14, the urgency above which a request is urgent.
    - `epsilon`: ε of eq. 13 (seconds), the floor of the slack in the urgency ratio.
    - `window`: iterations planned jointly (1 = greedy eq. 3, 2 = the paper, k > 2 = our
      generalization), at most 16 (`MAX_WINDOW`).
    - `demote_late`: requests past their TTFT deadline sort after every live one.
    - `split_search`: the paper's ternary search or the exact minimizer of eq. 9.
    - `order`: MLPS (eq. 16) or EDF on the TTFT deadline (the ablation's base).
    - `level_order`: MLPS's key inside a level: the remaining prefill r_i (eq. 15, the
      paper's) or the TTFT deadline, r_i among equal deadlines (docs/decisions.md).
    - `late_grace`: G, with `demote_late`: a request whose TTFT deadline passed more than G
      seconds ago is promoted (in the windows of `late_share`): served, in deadline order,
      before every live request of its protection class, so that what a demoted request
      waits is bounded (docs/decisions.md, "Bursts"). None (the paper's): late requests stay
      last.
    - `late_share`: f in (0, 1], the share of each second (`stages.order.LATE_PERIOD`), its
      first f, in which promoted requests go first; the rest of the time they stay last, so
      that they take at most f of the engine from live requests under sustained overload.
    - `give_up_after`: X (seconds): a waiting or prefilling request, not protected, whose TTFT
      deadline passed X or more seconds ago is given up: its SLO can no longer be met, the
      plan names it in `given_up` and runs none of its tokens, and the engine finishes it with
      its own reason, so that a client or router can retry it elsewhere (0: as soon as the
      deadline passes). Every first token then comes by d_i + X plus one batch. None (the
      paper's): no request is given up.
    - `shed_bursts`: with `demote_late` and MLPS, when the live requests cannot all finish
      their prefill by their TTFT deadlines at ρ_t (taken in deadline order), the largest
      unprotected prompts are demoted to the late stage until the rest can (`stages.order.
      burst_shed`): a burst's misses are its largest prompts, not whichever request is late.
      False: only requests past their deadline are demoted (docs/decisions.md, "How close to
      the limit").
    - `kv_headroom`: a waiting request starts its prefill only if the KV slots left free
      after its prompt are at least this many per running request (decoding or prefilling,
      itself included): room for their next tokens, so that decodes do not run the cache
      out and get preempted. 0 (the paper's): any request whose prompt fits starts.
    - `urgent_first`: urgent requests (e_i = 1, eq. 14) sort before the others, as the paper
      has it; False sorts them after, as QoServe relegates requests that cannot make it.
    - `constructor`: route risky batches to BatchConstructor (eq. 17–22); off for the ablations.
    - `latency_margin`: m ≥ 1; every predicted latency is compared with a deadline as T̂·m
      (None = the predictor's own, calibrated by `fit`; 1.0 = the paper's zero margin).
    """

    max_batch_tokens: int = 2048
    urgency_threshold: float = 1.0
    epsilon: float = 1e-3
    window: int = 2
    demote_late: bool = True
    split_search: SplitSearch = "exact"
    order: Order = "mlps"
    level_order: LevelOrder = "remaining"
    urgent_first: bool = True
    constructor: bool = True
    latency_margin: float | None = None
    late_grace: float | None = None
    late_share: float = 1.0
    kv_headroom: int = 0
    shed_bursts: bool = False
    give_up_after: float | None = None

    def __attrs_post_init__(self) -> None:
        record = "sliding config"
        _validate.integer(record, "max_batch_tokens", self.max_batch_tokens, 1)
        _validate.positive(record, "urgency_threshold", self.urgency_threshold)
        _validate.positive(record, "epsilon", self.epsilon)
        if _validate.integer(record, "window", self.window, 1) > MAX_WINDOW:
            raise InvalidRecordError(record, "window", f"={self.window} must be <= {MAX_WINDOW}")
        self._check_promotion(record)
        _validate.integer(record, "kv_headroom", self.kv_headroom, 0)
        if self.latency_margin is not None:
            margin = _validate.finite(record, "latency_margin", self.latency_margin)
            if margin < 1.0:
                raise InvalidRecordError(record, "latency_margin", f"={margin} must be >= 1")
        for field, allowed in (
            ("split_search", ("ternary", "exact")),
            ("order", ("mlps", "edf")),
            ("level_order", ("remaining", "deadline")),
        ):
            if getattr(self, field) not in allowed:
                raise InvalidRecordError(
                    record, field, f"={getattr(self, field)!r} is not one of {allowed}"
                )
        for field in ("demote_late", "constructor", "urgent_first", "shed_bursts"):
            if not isinstance(getattr(self, field), bool):
                raise InvalidRecordError(record, field, "must be a bool")

    def _check_promotion(self, record: str) -> None:
        """`late_grace` (seconds, only with `demote_late`), `late_share` in (0, 1],
        `give_up_after` (seconds), and `shed_bursts` only with `demote_late` and MLPS."""
        share = _validate.finite(record, "late_share", self.late_share)
        if not 0.0 < share <= 1.0:
            raise InvalidRecordError(record, "late_share", f"={share} must be in (0, 1]")
        if self.give_up_after is not None:
            _validate.seconds(record, "give_up_after", self.give_up_after)
        if self.late_grace is not None:
            _validate.seconds(record, "late_grace", self.late_grace)
            if not self.demote_late:
                raise InvalidRecordError(
                    record, "late_grace", "needs demote_late=True: nothing is demoted otherwise"
                )
        if self.shed_bursts is True and (not self.demote_late or self.order != "mlps"):
            raise InvalidRecordError(
                record,
                "shed_bursts",
                "needs demote_late=True and order='mlps' (it demotes to MLPS's late stage)",
            )

"""One live request as the engine sees it now, with its deadline and slack (eq. 1, 10, 11)."""

from __future__ import annotations

import enum
from typing import TYPE_CHECKING, Any, overload

import attrs

from slidingpolicy import _validate
from slidingpolicy.errors import InvalidRecordError
from slidingpolicy.records._unchecked import constructor
from slidingpolicy.records.plan import Allocation, trusted_allocation

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray


@overload
def next_token_deadline(
    arrival: float, ttft_slo: float, tbt_slo: float, generated: int
) -> float: ...


@overload
def next_token_deadline(
    arrival: NDArray[np.float64],
    ttft_slo: NDArray[np.float64],
    tbt_slo: NDArray[np.float64],
    generated: NDArray[np.int64],
) -> NDArray[np.float64]: ...


def next_token_deadline(arrival: Any, ttft_slo: Any, tbt_slo: Any, generated: Any) -> Any:
    """d = a_i + L_ttft + generated · L_tbt (eq. 1): when the next token of a request that has
    produced `generated` tokens is due (the first token's at generated = 0). Elementwise on
    arrays; the one place the formula is written, in this order of float operations."""
    return arrival + ttft_slo + generated * tbt_slo


class Phase(enum.Enum):
    """Where a request is in its life: no prompt token cached, some, or all."""

    WAITING = "waiting"
    PREFILLING = "prefilling"
    DECODING = "decoding"


@attrs.frozen(slots=True)
class Request:
    """A live request: waiting (prefilled = 0), prefilling, or decoding (prefilled = prompt).

    `generated` counts output tokens produced so far; the iteration that completes the prefill
    produces token 1, so a decoding request has generated >= 1 and one in prefill 0. A request
    preempted by recompute after g tokens waits again as one whose prompt holds those g
    tokens, with generated 0 and a TTFT SLO of L_ttft + g·L_tbt: its deadline is still that of
    its token g + 1 (eq. 1), and u_i counts only what is cached.

    What a policy reads off it, derived when it is built:

    - `deadline`: when its next token is due, d = a_i + L_ttft + generated · L_tbt (eq. 1):
      in prefill, its first token's (the TTFT deadline); decoding, its next token's.
      `slack(now)` is d − now, negative once it has passed.
    - `remaining_prefill`: r_i = p_i − prefilled (eq. 10): the most tokens a plan may give it
      (invariant 2); 0 once it decodes.
    - `is_decoding`: whether its whole prompt is cached; a plan then gives it exactly one token
      or lists it as left out, `preempted` or `deferred` (invariants 2 and 3).
    - `context_tokens`: u_i = prefilled + generated, the tokens already in its KV cache: its
      entry of `contexts` in `LatencyPredictor.predict`.
    - `one_token`: `Allocation(id, 1)`, all a decode runs (invariant 2): made with the record
      and carried by `next_token`, so that a plan does not build one per decode per iteration.
    """

    id: str
    arrival: float
    prompt_tokens: int
    prefilled: int
    generated: int
    ttft_slo: float
    tbt_slo: float
    protected: bool = False
    max_new_tokens: int | None = None
    deadline: float = attrs.field(init=False, eq=False, repr=False)
    remaining_prefill: int = attrs.field(init=False, eq=False, repr=False)
    context_tokens: int = attrs.field(init=False, eq=False, repr=False)
    is_decoding: bool = attrs.field(init=False, eq=False, repr=False)
    one_token: Allocation = attrs.field(init=False, eq=False, repr=False)

    def __attrs_post_init__(self) -> None:
        if not isinstance(self.id, str) or not self.id:
            raise InvalidRecordError("request", "id", f"must be a non-empty str, got {self.id!r}")
        record = self._name
        _validate.seconds(record, "arrival", self.arrival)
        prompt = _validate.integer(record, "prompt_tokens", self.prompt_tokens, 1)
        prefilled = _validate.integer(record, "prefilled", self.prefilled, 0)
        generated = _validate.integer(record, "generated", self.generated, 0)
        _validate.duration(record, "ttft_slo", self.ttft_slo)
        _validate.duration(record, "tbt_slo", self.tbt_slo)
        _validate.flag(record, "protected", self.protected)
        if prefilled > prompt:
            raise _validate.fail(
                record, "prefilled", f"={prefilled} exceeds prompt_tokens={prompt}"
            )
        if prefilled == prompt and generated == 0:
            raise _validate.fail(
                record,
                "generated",
                "=0 but the prefill is complete: the iteration that completes it produces token 1",
            )
        if prefilled < prompt and generated > 0:
            raise _validate.fail(
                record,
                "generated",
                f"={generated} but the prefill is not complete (prefilled={prefilled} < "
                f"prompt_tokens={prompt}): no token comes before it is (a request recomputing "
                "after preemption has its tokens in its prompt, generated=0, and ttft_slo "
                "extended by generated·tbt_slo)",
            )
        if self.max_new_tokens is not None:
            limit = _validate.integer(record, "max_new_tokens", self.max_new_tokens, 1)
            if generated >= limit:
                raise _validate.fail(
                    record,
                    "generated",
                    f"={generated} reaches max_new_tokens={limit}: a finished request is not live",
                )
        self._derive()

    def _derive(self) -> None:
        """Set the derived fields (every field above must already be set)."""
        prompt, prefilled, generated = self.prompt_tokens, self.prefilled, self.generated
        put = object.__setattr__
        put(
            self,
            "deadline",
            next_token_deadline(self.arrival, self.ttft_slo, self.tbt_slo, generated),
        )
        put(self, "remaining_prefill", prompt - prefilled)
        put(self, "context_tokens", prefilled + generated)
        put(self, "is_decoding", prefilled == prompt)
        put(self, "one_token", trusted_allocation(self.id, 1))

    def next_token(self) -> Request:
        """This decoding request once its next token is out: generated + 1, and the deadline
        L_tbt later (eq. 1). Checks only what one token can break, so an engine can carry
        each decode's record from one iteration to the next cheaply."""
        generated = self.generated + 1
        if not self.is_decoding:
            raise _validate.fail(
                self._name, "generated", "cannot advance by one token: the prefill is not done"
            )
        if self.max_new_tokens is not None and generated >= self.max_new_tokens:
            raise _validate.fail(
                self._name,
                "generated",
                f"={generated} reaches max_new_tokens={self.max_new_tokens}: "
                "a finished request is not live",
            )
        return _unchecked(
            self.id,
            self.arrival,
            self.prompt_tokens,
            self.prefilled,
            generated,
            self.ttft_slo,
            self.tbt_slo,
            self.protected,
            self.max_new_tokens,
            next_token_deadline(self.arrival, self.ttft_slo, self.tbt_slo, generated),
            0,
            self.context_tokens + 1,
            True,
            self.one_token,
        )

    def _name(self) -> str:
        return f"request {self.id!r}"

    @property
    def phase(self) -> Phase:
        """Waiting, prefilling or decoding, from how much of the prompt is cached."""
        if self.prefilled == self.prompt_tokens:
            return Phase.DECODING
        return Phase.WAITING if self.prefilled == 0 else Phase.PREFILLING

    def slack(self, now: float) -> float:
        """s_i(t) = d − t: TBT slack when decoding, TTFT slack (eq. 11) in prefill."""
        return self.deadline - now


_unchecked = constructor(Request)


def trusted_request(
    id: str,
    arrival: float,
    prompt_tokens: int,
    prefilled: int,
    generated: int,
    ttft_slo: float,
    tbt_slo: float,
) -> Request:
    """`Request(id, arrival, ...)`, not protected and with no output cap, without its checks;
    the derived fields as `Request._derive` sets them. The engine's most frequent call: an
    engine that keeps its columns valid vouches for the values (`engine.trusted`)."""
    return _unchecked(
        id,
        arrival,
        prompt_tokens,
        prefilled,
        generated,
        ttft_slo,
        tbt_slo,
        False,
        None,
        next_token_deadline(arrival, ttft_slo, tbt_slo, generated),
        prompt_tokens - prefilled,
        prefilled + generated,
        prefilled == prompt_tokens,
        trusted_allocation(id, 1),
    )

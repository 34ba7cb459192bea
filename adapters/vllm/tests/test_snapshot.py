"""vLLM's request state as records: a request resumed after preemption is recorded as the
offline engine records a recompute, so that `Request` can refuse a prefill that has
produced tokens (no token comes before the prefill completes)."""

from __future__ import annotations

import pytest
from slidingpolicy import Slo

from slidingpolicy_vllm.snapshot import to_request
from slidingpolicy_vllm.testing import TOKEN, make_request

SLO = Slo(3.0, 0.1)


@pytest.mark.parametrize("computed", [0, 17])
def test_a_request_resumed_after_preemption_recomputes_with_its_deadline(computed: int) -> None:
    request = make_request("r", 40, 60, arrival_time=0.0)
    request.append_output_token_ids([TOKEN] * 5)
    request.num_computed_tokens = computed
    record = to_request(request, SLO, arrival=1.0)
    assert record is not None
    assert (record.prompt_tokens, record.prefilled, record.generated) == (45, computed, 0)
    assert record.ttft_slo == pytest.approx(3.0 + 5 * 0.1)
    assert record.deadline == pytest.approx(1.0 + 3.0 + 5 * 0.1), "token 6's deadline (eq. 1)"
    assert record.context_tokens == computed, "only what is cached"


def test_a_decoding_request_keeps_its_own_slo() -> None:
    request = make_request("r", 40, 60, arrival_time=0.0)
    request.append_output_token_ids([TOKEN] * 5)
    request.num_computed_tokens = 44
    record = to_request(request, SLO, arrival=1.0)
    assert record is not None
    assert (record.prompt_tokens, record.prefilled, record.generated) == (40, 40, 5)
    assert record.ttft_slo == 3.0
    assert record.deadline == pytest.approx(1.0 + 3.0 + 5 * 0.1)

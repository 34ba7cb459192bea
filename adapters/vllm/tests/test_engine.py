"""A full in-process vLLM engine on CPU (dummy weights, the tiny model) with the adapter as
`scheduler_cls` and its door: every request finishes with its whole output, every line of the
trace passes `slidingpolicy check` with the step's measured latency, and a request with a
malformed SLO is refused before it reaches the engine."""

from __future__ import annotations

import gc
import json
from pathlib import Path

import pytest
from vllm import LLM, SamplingParams
from vllm.exceptions import VLLMValidationError
from vllm.inputs import TokensPrompt

from slidingpolicy_vllm.door import DOOR
from tests.test_trace import check

pytestmark = pytest.mark.engine
REQUESTS = 36


@pytest.mark.parametrize(
    ("policy", "scheduler"),
    [
        ("slidingserve", "AsyncSlidingScheduler"),
        ("sarathi-edf", "AsyncSlidingScheduler"),
        ("qoserve", "AsyncSlidingScheduler"),
        ("slidingserve", "SlidingScheduler"),
    ],
)
def test_an_engine_completes_mixed_requests_under_the_policy(
    model_dir: Path, tmp_path: Path, policy: str, scheduler: str
) -> None:
    trace = tmp_path / "trace.jsonl"
    llm = LLM(
        model=str(model_dir),
        load_format="dummy",
        skip_tokenizer_init=True,
        enforce_eager=True,
        gpu_memory_utilization=0.15,
        max_model_len=1024,
        max_num_batched_tokens=2048,
        max_num_seqs=16,
        async_scheduling=scheduler.startswith("Async"),
        scheduler_cls=f"slidingpolicy_vllm.{scheduler}",
        logits_processors=[DOOR],
        seed=0,
        additional_config={"slidingpolicy": {"policy": policy, "trace": str(trace)}},
    )
    prompts: list[TokensPrompt] = [
        {"prompt_token_ids": [5] * (8 + (53 * i) % 700)} for i in range(REQUESTS)
    ]
    lengths = [1 + (7 * i) % 40 for i in range(REQUESTS)]
    params = [
        SamplingParams(
            max_tokens=n, ignore_eos=True, extra_args={"ttft_slo": 1.0 + i % 3, "tbt_slo": 0.2}
        )
        for i, n in enumerate(lengths)
    ]
    outputs = llm.generate(prompts, params, use_tqdm=False)
    hostile = SamplingParams(max_tokens=1, extra_args={"ttft_slo": -1})
    with pytest.raises(VLLMValidationError, match=r"ttft_slo=-1\.0 must be > 0"):
        llm.generate(prompts[:1], hostile, use_tqdm=False)
    del llm
    gc.collect()
    assert [len(o.outputs[0].token_ids) for o in outputs] == lengths
    assert all(o.outputs[0].finish_reason == "length" for o in outputs)
    lines = [json.loads(line) for line in trace.read_text().splitlines()]
    assert lines, "the adapter planned the engine's steps"
    assert all(line["fallback"] is None for line in lines)
    assert len({r["id"] for line in lines for r in line["state"]["requests"]}) == REQUESTS
    ran = [line["latency"] for line in lines if line["scheduled"]]
    assert len(ran) > 1
    assert all(latency is not None and latency > 0 for latency in ran), "measured steps"
    done = check(trace)
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"{len(lines)} plans checked: 0 break an invariant, 0 malformed" in done.stdout

"""The tiny shape of these tests is the one `slidingpolicy replay --launch transformers
--shape qwen2-tiny` serves, so that a replay's tiny runs are these tests' engine."""

from __future__ import annotations

from slidingpolicy.replay.shapes import SHAPES

from slidingpolicy_transformers.testing import TINY_QWEN2


def test_replays_qwen2_tiny_is_the_tiny_test_shape() -> None:
    assert dict(SHAPES["qwen2-tiny"]) == TINY_QWEN2

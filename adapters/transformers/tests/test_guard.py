"""The version guard: one clear line for a transformers the adapter was not tested on."""

from __future__ import annotations

import pytest
import transformers
from slidingpolicy.embedding import version_series
from transformers.generation.continuous_batching.scheduler import FIFOScheduler

from slidingpolicy_transformers import UnsupportedTransformersError, check_transformers
from slidingpolicy_transformers.guard import SUPPORTED_SERIES


def test_the_installed_transformers_is_a_supported_series() -> None:
    assert version_series(transformers.__version__) in SUPPORTED_SERIES
    check_transformers()


@pytest.mark.parametrize("version", ["5.16.1", "5.24.0", "4.57.6", "6.0.0", "dev"])
def test_another_version_is_refused_in_one_line(version: str) -> None:
    with pytest.raises(UnsupportedTransformersError, match=r"supports transformers 5\.17\.x") as e:
        check_transformers(version)
    assert "\n" not in str(e.value)
    assert repr(version) in str(e.value)


class _Renamed(FIFOScheduler):
    def _process_candidates(self, candidates, budget, cache, removed):  # type: ignore[no-untyped-def]
        raise AssertionError


def test_a_changed_hook_is_refused() -> None:
    with pytest.raises(UnsupportedTransformersError, match="_process_candidates"):
        check_transformers(transformers.__version__, _Renamed)

"""A door with a hole, for the end-to-end test: a request whose `extra_args` hold `LEAK`
passes unchecked, as it would through a front end without the door, so that the test can
show what the scheduler does with a request that reaches it invalid."""

from __future__ import annotations

from vllm.sampling_params import SamplingParams

from slidingpolicy_vllm.door import SloDoor

LEAK = "test_leaks_past_the_door"


class LeakyDoor(SloDoor):
    """`SloDoor`, except for requests marked with `LEAK`."""

    @classmethod
    def validate_params(cls, sampling_params: SamplingParams) -> None:
        """The door's check, unless the request is marked."""
        if LEAK not in (sampling_params.extra_args or {}):
            super().validate_params(sampling_params)

"""A request the policy cannot represent, or one it gives up on, is finished alone, with the
reason, while every other request keeps the policy.

A policy with `give_up_after` names in its plan (`BatchPlan.given_up`) the waiting requests
whose TTFT deadline passed that long ago: they are finished the same way, so that a client
or a router learns early that it may retry elsewhere (`slidingpolicy.embedding.given_up_notice`).

The door (`door.SloDoor`) refuses malformed SLO metadata before a request reaches the
scheduler; a request that reaches it all the same (another front end, or counts no record
holds, e.g. a recompute whose TTFT SLO L_ttft + g·L_tbt runs past the longest time a record
holds) is left out of the snapshot and finished at the step's output, through vLLM's own
`finish_requests`, with an output that tells the client why (the texts:
`slidingpolicy.embedding.notices`):

- vLLM 0.33's `EngineCoreOutput` carries a request-level error (`error`, a `RequestError`)
  that its front end raises for that request alone: a validation error with the reason
  (HTTP 400 for a request that is not streamed, an error event in a stream).
- vLLM 0.32's has no such field, and a request finished as an error reaches the client as
  "Internal server error" only; there it is finished as aborted (finish reason `abort`),
  the reason in its `stop_reason`, which the OpenAI API returns in the choice.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import vllm.outputs
from vllm.v1.core.sched.scheduler import Scheduler
from vllm.v1.engine import EngineCoreOutput, EngineCoreOutputs
from vllm.v1.request import RequestStatus

_REQUEST_ERROR: Any = getattr(vllm.outputs, "RequestError", None)
CARRIES_ERROR = _REQUEST_ERROR is not None and "error" in EngineCoreOutput.__struct_fields__
"""Whether this vLLM's outputs carry a request-level error (0.33 does, 0.32 does not)."""


def finish_refused(
    scheduler: Scheduler, refused: Mapping[str, str], outputs: dict[int, EngineCoreOutputs]
) -> None:
    """Finish the `refused` requests (id → reason) still live in `scheduler`, and add to
    `outputs` (the step's, by client) the final output that tells each client why."""
    status = RequestStatus.FINISHED_ERROR if CARRIES_ERROR else RequestStatus.FINISHED_ABORTED
    # vLLM's own, not the adapter's, which counts an abort as a client that left
    for request in Scheduler.finish_requests(scheduler, refused, status):
        why = refused[request.request_id]
        error = {"error": _REQUEST_ERROR("validation_error", why)} if CARRIES_ERROR else {}
        output = EngineCoreOutput(
            request_id=request.request_id,
            new_token_ids=[],
            finish_reason=request.get_finished_reason(),
            stop_reason=why,
            events=request.take_events(),
            trace_headers=request.trace_headers,
            **error,
        )
        found = outputs.get(request.client_index)
        if found is None:
            outputs[request.client_index] = EngineCoreOutputs(outputs=[output])
        else:
            found.outputs.append(output)

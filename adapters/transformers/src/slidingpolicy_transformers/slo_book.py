"""The SLOs of the requests added through a binding, by request id, read at the door (`Binding.
add_request`) and kept until the request finishes; the policy's loop reads them when it first
sees a request."""

from __future__ import annotations

import threading

from slidingpolicy import Slo


class SloBook:
    """The SLOs of the requests added through a binding (thread-safe: requests are added on
    the caller's thread, read on the engine's)."""

    def __init__(self, default: Slo) -> None:
        self.default = default
        self._slos: dict[str, Slo] = {}
        self._lock = threading.Lock()

    def put(self, request_id: str, slo: Slo) -> None:
        """Keep `slo` for `request_id` until it is forgotten."""
        with self._lock:
            self._slos[request_id] = slo

    def get(self, request_id: str) -> Slo:
        """The request's SLOs, the default for a request added without them."""
        return self._slos.get(request_id, self.default)

    def forget(self, request_id: str) -> None:
        """Drop the request's SLOs (it finished or was cancelled)."""
        with self._lock:
            self._slos.pop(request_id, None)

    def __len__(self) -> int:
        return len(self._slos)

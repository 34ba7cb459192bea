"""Where trials run: in this process, in a pool of local processes, or on a Ray cluster.

`trial_runner(workers, ray)` opens one of the three for a `with` block; its `map(fn, items)`
returns `fn(item)` for every item, in the order of `items`. It never starts more local
processes than this process may use CPUs, nor than the trials it will run at once (`jobs`).
A trial is a pure function of its spec (a `RunSpec` carries its seed), so where it runs never
changes its result. Leaving the block on an exception (Ctrl-C included) stops what has not
finished: the local pool's workers are terminated, Ray's tasks cancelled with their workers
(`force`: a gentle cancel leaves a running trial to finish).

`ray` is the address of a Ray cluster, as `ray.init(address=...)` reads it: "auto" (the
cluster this machine belongs to, e.g. started by `ray start --head`), "local" (a new Ray
instance on this machine, for the duration of the block), "HOST:PORT" (the head node's GCS
address) or "ray://HOST:PORT" (Ray Client, which needs `ray[client]`). Every node needs this
version of slidingpolicy installed, and any file a spec names (trace, profile, predictor) at
the same path. A process already connected to Ray (it called `ray.init`) runs its trials on
that connection and leaves it open; the block disconnects only from a cluster it connected to,
which shuts down only the instance that "local" started. Ray is imported only when asked for.
"""

from __future__ import annotations

import os
import signal
import socket
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ProcessPoolExecutor, as_completed
from contextlib import contextmanager
from types import ModuleType, TracebackType
from typing import Protocol, TypeVar, cast

from slidingpolicy import _validate
from slidingpolicy.errors import InvalidRecordError, RayUnavailableError

T = TypeVar("T")
R = TypeVar("R")

CONNECT_TIMEOUT = 5.0
"""Seconds to wait for a HOST:PORT address to answer (ray.init itself retries for minutes)."""
CANCEL_TRIES = 10
"""How many times, a second apart, Ray tasks are told to stop before they are left alone."""
INSTALL_HINT = "pip install 'slidingpolicy[ray]'"


class TrialRunner(Protocol):
    """Runs a function over items somewhere (module docstring)."""

    def map(
        self, fn: Callable[[T], R], items: Sequence[T], on_done: Callable[[R], None] | None = None
    ) -> list[R]:
        """`fn(item)` for every item, in the order of `items`; `on_done` is told each result
        as it comes."""
        ...


GRACE = 5.0
"""Seconds a terminated worker has to exit before it is killed."""


STOPPING = {signal.SIGINT, signal.SIGTERM}


def _ignore_interrupts() -> None:
    """Leave Ctrl-C to the parent process, which stops the pool (`WorkerPool`), and let SIGTERM
    end the worker; then take the signals the parent blocked while it forked this worker."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, STOPPING)


class WorkerPool(ProcessPoolExecutor):
    """A process pool whose workers ignore Ctrl-C; on an exception (Ctrl-C included) leaving
    its `with` block, or on `abandon`, queued runs are cancelled and workers stopped at once.

    Workers are forked as runs are submitted, with SIGINT and SIGTERM blocked: a forked worker
    inherits the parent's Python handlers, and a signal then would run them in the worker
    before it ignores Ctrl-C, or in the parent inside the fork's callbacks, where Python
    drops the exception they raise (`cli.signals`); held back, it arrives once the worker
    ignores it and the parent is back in its own code."""

    def __init__(self, workers: int) -> None:
        super().__init__(max_workers=workers, initializer=_ignore_interrupts)

    def submit(self, fn: Callable[..., R], /, *args: object, **kwargs: object) -> Future[R]:
        """`ProcessPoolExecutor.submit`, with SIGINT and SIGTERM held back (class docstring)."""
        held = signal.pthread_sigmask(signal.SIG_BLOCK, STOPPING)
        try:
            return super().submit(fn, *args, **kwargs)
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, held)

    def abandon(self) -> None:
        """Cancel what has not started; terminate the workers, kill those still alive after
        `GRACE` seconds, and reap them all (none is left behind, not even as a zombie). Then
        wait for the pool's manager thread to see them gone and close its pipes: left
        running, it races the interpreter's exit, which writes to a pipe it may be closing
        (an "Exception ignored" traceback, EBADF)."""
        manager = cast("threading.Thread | None", self._executor_manager_thread)
        processes = list((self._processes or {}).values())
        self.shutdown(wait=False, cancel_futures=True)
        for process in processes:
            process.terminate()
        deadline = time.monotonic() + GRACE
        for process in processes:
            process.join(max(0.0, deadline - time.monotonic()))
            if process.is_alive():
                process.kill()
                process.join()
        if manager is not None:
            manager.join(GRACE)

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> bool | None:
        if kind is not None:
            self.abandon()
            return None
        return super().__exit__(kind, error, trace)


def default_workers() -> int:
    """Both cores here: one worker per CPU this process may use."""
    return max(1, len(os.sched_getaffinity(0)))


class _Here:
    """Trials in this process, one after another."""

    def map(
        self, fn: Callable[[T], R], items: Sequence[T], on_done: Callable[[R], None] | None = None
    ) -> list[R]:
        results = []
        for item in items:
            result = fn(item)
            if on_done is not None:
                on_done(result)
            results.append(result)
        return results


class _Processes:
    """Trials in a `WorkerPool` of local processes."""

    def __init__(self, pool: WorkerPool) -> None:
        self._pool = pool

    def map(
        self, fn: Callable[[T], R], items: Sequence[T], on_done: Callable[[R], None] | None = None
    ) -> list[R]:
        futures = [self._pool.submit(fn, item) for item in items]
        if on_done is not None:
            for future in as_completed(futures):
                on_done(future.result())
        return [future.result() for future in futures]


class _RayTasks:
    """Trials as tasks on a Ray cluster (one CPU each), killed if the map fails."""

    def __init__(self, ray: ModuleType) -> None:
        self._ray = ray

    def map(
        self, fn: Callable[[T], R], items: Sequence[T], on_done: Callable[[R], None] | None = None
    ) -> list[R]:
        ray = self._ray
        task = ray.remote(fn)
        refs = [task.remote(item) for item in items]
        got: dict[object, R] = {}
        left = list(refs)
        try:
            while left:
                done, left = ray.wait(left, num_returns=1)
                got[done[0]] = result = ray.get(done[0])
                if on_done is not None:
                    on_done(result)
        except BaseException:
            _cancel(ray, left)
            raise
        return [got[ref] for ref in refs]


def _cancel(ray: ModuleType, refs: list[object]) -> None:
    """Kill the tasks of `refs`, again while any still runs (a cancel that reaches a task as
    it starts is lost), for up to `CANCEL_TRIES` seconds."""
    for _ in range(CANCEL_TRIES):
        for ref in refs:
            ray.cancel(ref, force=True)
        _, refs = ray.wait(refs, num_returns=len(refs), timeout=1.0, fetch_local=False)
        if not refs:
            return


@contextmanager
def trial_runner(
    workers: int | None = None, ray: str | None = None, *, jobs: int | None = None
) -> Iterator[TrialRunner]:
    """Where trials run for a `with` block: on the Ray cluster at `ray` (module docstring), or
    in `workers` local processes (default: one per CPU; one: in this process), at most one per
    CPU and, given `jobs` (the most trials that run at once), at most `jobs`."""
    if ray is not None:
        if workers is not None:
            raise InvalidRecordError(
                "trials",
                "workers",
                f"={workers} with ray={ray!r}: on Ray the cluster's CPUs set how many trials "
                "run at once; give one or the other",
            )
        with _connected(ray) as module:
            yield _RayTasks(module)
        return
    if workers is not None:
        _validate.integer("trials", "workers", workers, 1)
    cores = default_workers()
    count = cores if workers is None else min(workers, cores)
    if jobs is not None:
        count = min(count, _validate.integer("trials", "jobs", jobs, 0))
    if count <= 1:
        yield _Here()
        return
    with WorkerPool(count) as pool:
        yield _Processes(pool)


@contextmanager
def cluster(ray: str | None) -> Iterator[str | None]:
    """One connection to the Ray cluster at `ray` for a block of several `trial_runner`s:
    the address to give them (the connection's own, which they reuse), or None for local
    processes. Connecting once spares each runner its own `ray.init` (seconds)."""
    if ray is None:
        yield None
        return
    with _connected(ray) as module:
        yield str(module.get_runtime_context().gcs_address)


def _import_ray(address: str) -> ModuleType:
    """The `ray` module, or RayUnavailableError saying how to install it."""
    try:
        import ray
    except ImportError:
        raise RayUnavailableError(
            f"Ray cluster {address!r}: Ray is not installed; install it with {INSTALL_HINT}"
        ) from None
    return ray


@contextmanager
def _connected(address: str) -> Iterator[ModuleType]:
    """`ray`, connected to the cluster at `address` for the block (module docstring)."""
    ray = _import_ray(address)
    if ray.is_initialized():
        connected = ray.get_runtime_context().gcs_address
        if address not in ("auto", connected):
            raise RayUnavailableError(
                f"Ray cluster {address!r}: this process is already connected to the Ray "
                f"cluster at {connected}; pass 'auto' or that address"
            )
        yield ray
        return
    if not address.strip():
        raise RayUnavailableError(
            f"Ray cluster {address!r}: give an address: auto, local, HOST:PORT or ray://HOST:PORT"
        )
    _check_answers(address)
    try:
        ray.init(address=address)
    except (ConnectionError, ValueError) as error:
        message = str(error).strip() or type(error).__name__
        raise RayUnavailableError(f"Ray cluster {address!r}: {message.splitlines()[0]}") from None
    try:
        yield ray
    finally:
        ray.shutdown()


def _check_answers(address: str) -> None:
    """Fail within `CONNECT_TIMEOUT` where nothing answers at a HOST:PORT address."""
    host, _, port = address.removeprefix("ray://").rpartition(":")
    if not host or not port.isdigit():
        return
    try:
        socket.create_connection((host.strip("[]"), int(port)), CONNECT_TIMEOUT).close()
    except OSError as error:
        reason = error.strerror or str(error) or type(error).__name__
        raise RayUnavailableError(
            f"Ray cluster {address!r}: nothing answers there ({reason})"
        ) from None

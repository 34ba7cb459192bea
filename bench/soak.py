"""Soak: one adapter server under mixed load for a long time, its memory sampled as it goes.

One server (`replay --launch`'s launcher: `vllm` or `transformers`, a policy arm, its step
trace on) takes open-loop Poisson arrivals of the CPU workload for `--minutes`. Beside the
normal requests, a share is cancelled mid-stream (the client drops the connection after a
few tokens) and a share is bad (malformed or out-of-range SLOs, a body that is not JSON, a
prompt longer than the model): each bad kind is counted by the HTTP status it got, and, for a
200, whether the stream carried an error event (vLLM checks a streamed request's SLOs as the
stream starts, after its 200). Every `--sample` seconds it records the server's memory (the
proportional set size of its whole process group, and of each process: API server, engine
core, workers), the trace's size on disk, and the `slidingpolicy_learner*` series of /metrics
where the server has them.

At the end the server's main process is sent SIGTERM alone: the soak reports whether every
process of its group was gone within the grace (no SIGKILL needed), whether every trace line
parses (the trace was flushed), and runs `slidingpolicy check` on the trace. Memory growth,
of the server and of each process, is the mean of the last three samples against the mean of
the first three after `--warmup` minutes.

    python bench/soak.py --engine vllm --python ~/venvs/vllm/bin/python --minutes 20
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections import Counter
from contextlib import ExitStack, suppress
from pathlib import Path
from typing import Any

import aiohttp
import numpy as np

from slidingpolicy.replay.client import READ_BUFFER
from slidingpolicy.replay.launch import ENGINES, Launch, launch
from slidingpolicy.replay.launcher import Server, group_usage, member_memory
from slidingpolicy.replay.requests import Completion, completions
from slidingpolicy.workloads import Poisson, make_workload

BAD_BODIES: tuple[tuple[str, dict[str, Any] | str], ...] = (
    ("ttft_slo=-1", {"vllm_xargs": {"ttft_slo": -1}}),
    ("ttft_slo=0", {"vllm_xargs": {"ttft_slo": 0}}),
    ("ttft_slo='abc'", {"vllm_xargs": {"ttft_slo": "abc"}}),
    ("ttft_slo=1e308", {"vllm_xargs": {"ttft_slo": 1e308}}),
    ("tbt_slo=1e-9", {"vllm_xargs": {"tbt_slo": 1e-9}}),
    ("protected='yes'", {"vllm_xargs": {"protected": "yes"}}),
    ("not JSON", "{not json"),
    ("prompt too long", {"prompt_tokens": 5000}),
)
"""The bad requests sent, in turn: a name and what replaces the normal body's parts."""


def _bad_body(good: dict[str, Any], change: dict[str, Any] | str) -> str:
    """The text of a bad request's body: `good` with `change` applied."""
    if isinstance(change, str):
        return change
    body = dict(good)
    if "prompt_tokens" in change:
        body["prompt"] = [1 + i % 500 for i in range(int(change["prompt_tokens"]))]
    if "vllm_xargs" in change:
        body["vllm_xargs"] = {**body.get("vllm_xargs", {}), **change["vllm_xargs"]}
    return json.dumps(body)


class Load:
    """The open-loop client of the soak: what it sent and how each kind ended."""

    def __init__(self, url: str, model: str, cancel: float, bad: float, seed: int) -> None:
        self.url, self.model = url, model
        self.cancel, self.bad = cancel, bad
        self.rng = np.random.default_rng(seed)
        self.outcomes: Counter[str] = Counter()
        self._bad_turn = 0

    async def run(self, sent: list[Completion]) -> None:
        """Send every completion at its arrival, each as normal, cancelled or bad."""
        start = time.perf_counter()
        connector = aiohttp.TCPConnector(limit=0, force_close=True)
        timeout = aiohttp.ClientTimeout(total=300)
        async with aiohttp.ClientSession(
            connector=connector, read_bufsize=READ_BUFFER, timeout=timeout
        ) as session:
            tasks = []
            for completion in sent:
                await asyncio.sleep(max(0.0, completion.arrival - (time.perf_counter() - start)))
                draw = float(self.rng.random())
                if draw < self.bad:
                    tasks.append(asyncio.create_task(self._bad(session, completion)))
                elif draw < self.bad + self.cancel:
                    drop = int(self.rng.integers(1, max(2, completion.max_tokens // 2)))
                    tasks.append(asyncio.create_task(self._send(session, completion, drop)))
                else:
                    tasks.append(asyncio.create_task(self._send(session, completion, None)))
            await asyncio.gather(*tasks)

    async def _send(
        self, session: aiohttp.ClientSession, completion: Completion, drop: int | None
    ) -> None:
        kind = "normal" if drop is None else "cancelled"
        events = 0
        try:
            async with session.post(
                f"{self.url}/v1/completions", json=completion.body(self.model)
            ) as response:
                if response.status != 200:
                    self.outcomes[f"{kind}: http {response.status}"] += 1
                    return
                async for raw in response.content:
                    if raw.startswith(b"data:"):
                        events += 1
                    if drop is not None and events >= drop:
                        self.outcomes[f"{kind}: dropped by the client"] += 1
                        return
            self.outcomes[f"{kind}: finished"] += 1
        except (TimeoutError, aiohttp.ClientError) as error:
            self.outcomes[f"{kind}: {type(error).__name__}"] += 1

    async def _bad(self, session: aiohttp.ClientSession, completion: Completion) -> None:
        name, change = BAD_BODIES[self._bad_turn % len(BAD_BODIES)]
        self._bad_turn += 1
        body = _bad_body(completion.body(self.model), change)
        headers = {"Content-Type": "application/json"}
        try:
            async with session.post(
                f"{self.url}/v1/completions", data=body, headers=headers
            ) as response:
                text = await response.read()
                event = " + error event" if response.status == 200 and b'"error"' in text else ""
                self.outcomes[f"bad {name}: http {response.status}{event}"] += 1
        except (TimeoutError, aiohttp.ClientError) as error:
            self.outcomes[f"bad {name}: {type(error).__name__}"] += 1


def _learner_series(url: str) -> dict[str, float]:
    """The `slidingpolicy_learner*` samples of the server's /metrics (none if it has none)."""
    try:
        with urllib.request.urlopen(f"{url}/metrics", timeout=10) as response:
            text = response.read().decode()
    except OSError:
        return {}
    found = {}
    for line in text.splitlines():
        if line.startswith("slidingpolicy_learner"):
            name, _, value = line.rpartition(" ")
            with suppress(ValueError):
                found[name] = float(value)
    return found


async def _sample(
    server: Server, trace: Path | None, every: float, out: list[dict[str, Any]]
) -> None:
    """Every `every` seconds, the server's memory, trace size and learner series into `out`."""
    start = time.monotonic()
    while True:
        usage = server.usage()
        size = trace.stat().st_size if trace is not None and trace.exists() else 0
        learner = await asyncio.to_thread(_learner_series, server.url)
        out.append(
            {
                "seconds": round(time.monotonic() - start, 1),
                "memory_mib": None if usage is None else round(usage.memory / 2**20, 1),
                "processes": None if usage is None else usage.processes,
                "trace_mib": round(size / 2**20, 2),
                "process_mib": {
                    k: round(v / 2**20, 1) for k, v in member_memory(server.pid).items()
                },
                **learner,
            }
        )
        row = out[-1]
        print(
            f"  {row['seconds']:7.0f} s  {row['memory_mib']} MiB {row['process_mib']}"
            f"  trace {row['trace_mib']} MiB  {learner or ''}",
            flush=True,
        )
        await asyncio.sleep(every)


def _terminate(server: Server, grace: float) -> dict[str, Any]:
    """SIGTERM to the server's main process alone, as a process supervisor sends it: whether
    every process of its group (the engine's children too) was gone within `grace` seconds."""
    group = server.pid
    started = time.monotonic()
    os.kill(group, signal.SIGTERM)
    while group_usage(group) is not None and time.monotonic() - started < grace:
        time.sleep(0.1)
    left = group_usage(group)
    server.stop()
    return {
        "exited_on_sigterm": left is None,
        "exit_seconds": round(time.monotonic() - started, 1),
        "processes_left_after_grace": 0 if left is None else left.processes,
    }


def _trace_report(trace: Path | None) -> dict[str, Any]:
    """Whether every line of the trace parses, and what `slidingpolicy check` says of it."""
    if trace is None or not trace.exists():
        return {"trace": None}
    lines = trace.read_text().splitlines()
    broken = 0
    for line in lines:
        try:
            json.loads(line)
        except json.JSONDecodeError:
            broken += 1
    check = subprocess.run(
        [sys.executable, "-m", "slidingpolicy.cli", "check", str(trace)],
        capture_output=True,
        text=True,
        check=False,
    )
    return {
        "trace_lines": len(lines),
        "trace_broken_lines": broken,
        "check_exit": check.returncode,
        "check_says": (check.stdout + check.stderr).strip().splitlines()[-4:],
    }


def _safe(label: str) -> str:
    """The file name the launcher gives an arm's trace."""
    return re.sub(r"[^A-Za-z0-9_.+-]", "_", label)


def growth(values: list[float]) -> float | None:
    """Growth over a run of samples: the last three's mean over the first three's, minus 1."""
    if len(values) < 6:
        return None
    return statistics.fmean(values[-3:]) / statistics.fmean(values[:3]) - 1.0


def growths(samples: list[dict[str, Any]], warmup: float) -> dict[str, float | None]:
    """Memory growth after warm-up of the whole server and of each of its processes."""
    kept = [s for s in samples if s["seconds"] >= warmup and s["memory_mib"]]
    found = {"server": growth([s["memory_mib"] for s in kept])}
    for name in kept[0]["process_mib"] if kept else ():
        found[name] = growth([s["process_mib"].get(name, 0.0) for s in kept])
    return found


def _arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--engine", choices=sorted(ENGINES), default="vllm")
    parser.add_argument("--python", type=Path, help="the engine environment's Python")
    parser.add_argument("--policy", default="slidingserve+")
    parser.add_argument("--shape", help="the packaged model shape (default: the engine's)")
    parser.add_argument("--minutes", type=float, default=20.0)
    parser.add_argument("--warmup", type=float, default=5.0, help="minutes before growth counts")
    parser.add_argument("--rate", type=float, default=1.0, help="requests per second")
    parser.add_argument("--cancel", type=float, default=0.1, help="share cancelled mid-stream")
    parser.add_argument("--bad", type=float, default=0.05, help="share of bad requests")
    parser.add_argument("--sample", type=float, default=30.0, help="seconds between samples")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, help="folder for soak.json, the trace and logs")
    parser.add_argument("extra", nargs="*", help="more server arguments, after --")
    return parser.parse_args()


def main() -> None:
    args = _arguments()
    engine = ENGINES[args.engine]
    python = args.python or Path(os.environ.get(engine.python_variable, ""))
    out = args.out or Path(tempfile.mkdtemp(prefix="soak-"))
    (out / "traces").mkdir(parents=True, exist_ok=True)
    count = max(1, int(args.rate * args.minutes * 60))
    workload = make_workload("cpu-mixed", count, Poisson(args.rate), args.seed)
    plan = Launch(
        engine, args.policy, None, args.shape, python, args.extra, None, out / "traces", out
    )
    samples: list[dict[str, Any]] = []
    with ExitStack() as stack:
        (target,), vocab = launch(stack, plan)
        server, model = target.server, target.model
        if server is None or model is None:
            raise SystemExit("the launcher gave no server to soak")
        trace = out / "traces" / f"{_safe(target.label)}.jsonl"
        server.start()
        server.wait_ready(600)
        print(
            f"{engine.name} {args.policy} ready after {server.ready_after:.0f} s; "
            f"{count} requests at {args.rate} req/s, {args.minutes} min",
            flush=True,
        )
        load = Load(target.url, model, args.cancel, args.bad, args.seed)

        async def soak() -> None:
            sampler = asyncio.create_task(_sample(server, trace, args.sample, samples))
            await load.run(list(completions(workload, args.seed, vocab)))
            sampler.cancel()
            with suppress(asyncio.CancelledError):
                await sampler

        asyncio.run(soak())
        ending = _terminate(server, grace=30.0)
    report = {
        "engine": engine.name,
        "policy": args.policy,
        "minutes": args.minutes,
        "rate": args.rate,
        "requests": count,
        "outcomes": dict(sorted(load.outcomes.items())),
        "memory_growth_after_warmup": growths(samples, args.warmup * 60),
        **ending,
        **_trace_report(trace),
        "samples": samples,
    }
    (out / "soak.json").write_text(json.dumps(report, indent=1) + "\n")
    print(json.dumps({k: v for k, v in report.items() if k != "samples"}, indent=1))
    print(f"written: {out / 'soak.json'}")


if __name__ == "__main__":
    main()

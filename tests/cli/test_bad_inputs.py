"""The command line's bad-input table: each input gets one line on stderr, exit code 2, no
traceback, and a message that says what is wrong.

`{file}` in the arguments is replaced by a file holding the case's bytes, `{dir}` by a folder.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any, NamedTuple

import pytest

from slidingpolicy import Allocation, BatchPlan, Request, SchedulerState, default_predictor
from slidingpolicy.cli import main
from slidingpolicy.codec import log_line
from slidingpolicy.hardware.profiled import PER_LAYER_OPS
from slidingpolicy.runs.workers import default_workers
from tests.bad_input_docs import documented_rows, own_registry
from tests.cli.conftest import run_cli

PROFILE_HEADER = ",".join(
    ["num_tokens", "num_tensor_parallel_workers"]
    + [f"time_stats.{op}.median" for op in PER_LAYER_OPS]
)
PROFILE_ROW = "{tokens},2," + ",".join(["0.01"] * len(PER_LAYER_OPS))
VIDUR = "num_prefill_tokens,num_decode_tokens"
SAMPLE = '{"chunks": [1], "contexts": [5], "latency": 0.01}\n'
BINARY = bytes(range(128, 256)) * 4


def _predictor(**changes: Any) -> bytes:
    """The default predictor's JSON with top-level fields changed (None: removed) or, for
    "weights", its decode model's weights replaced."""
    data = default_predictor().to_dict()
    if "weights" in changes:
        data["models"]["decode"]["weights"] = changes.pop("weights")
    data.update(changes)
    return json.dumps({k: v for k, v in data.items() if v is not None}).encode()


class Case(NamedTuple):
    name: str
    args: list[str]
    needle: str
    content: bytes | None = None
    file: str = "input.txt"
    """The name of the file `{file}` names (a plugin's ends in .py)."""


def _trace(text: str) -> bytes:
    return text.encode()


LEAST_SLACK = (Path(__file__).resolve().parents[2] / "examples" / "least_slack.py").read_bytes()
OVER_BUDGET = b"""
import attrs
from slidingpolicy import Allocation, BatchPlan, PlanBranch, register

@attrs.frozen
class OverBudget:
    name: str = "over-budget"
    token_budget: int = 512

    def init(self):
        return None

    def plan(self, pstate, state):  # every prefill whole, whatever the budget
        batch = [Allocation(r.id, 1 if r.is_decoding else r.remaining_prefill)
                 for r in state.requests]
        return BatchPlan(tuple(batch), PlanBranch.WHOLE, self.name, 0, 0.0), pstate

    def observe(self, pstate, state, plan, latency):
        return pstate

register("over-budget", lambda predictor: OverBudget())
"""
FRAGILE = b"""
from slidingpolicy import register
from slidingpolicy.policies import FixedBudget
from slidingpolicy.stages.order import FCFS

def fragile(predictor, chunk: int = 256):
    if chunk > 4096:
        raise ValueError(f"no GPU runs {chunk}-token chunks")
    return FixedBudget(predictor, "fragile", chunk, FCFS)

register("fragile", fragile, ("chunk",))
"""


CASES = [
    Case(
        "a replay trial too large to send",
        ["replay", "--url", "http://127.0.0.1:9", "--rate", "5000", "-n", "10"],
        "--rate 5000: a steady-state trial of 10 requests sends 227,971 with its warm-up and tail",
    ),
    # numeric options
    Case("negative rate", ["simulate", "--rate", "-1"], "--rate"),
    Case("NaN rate", ["simulate", "--rate", "nan"], "--rate"),
    Case("infinite rate", ["simulate", "--rate", "inf"], "--rate"),
    Case(
        "rate 1e-300",
        ["simulate", "--rate", "1e-300"],
        "--rate=1e-300 must be between 1e-06 and 1e+06 req/s",
    ),
    Case("rate 5e-324", ["simulate", "--rate", "5e-324"], "--rate=4.94066e-324 must be between"),
    Case("rate 1e7", ["simulate", "--rate", "1e7"], "--rate=1e+07 must be between 1e-06"),
    Case(
        "rate too low for the requests",
        ["simulate", "--rate", "1e-6", "-n", "20000"],
        "poisson arrivals: rate=1e-06 spreads 20000 requests over 2",
    ),
    Case("slo scale 1e308", ["simulate", "--slo-scale", "1e308"], "slo_scale=1e+308 stretches"),
    Case(
        "slo scale 1e7 with tiers",
        ["simulate", "--slo-scale", "1e7", "--slo-tiers"],
        "SLOs of up to 1800 s beyond the 1e+10 s a record holds; at most 5.556e+06",
    ),
    Case("capacity start 1e308", ["capacity", "--start", "1e308"], "--start=1e+308 must be"),
    Case(
        "capacity start 1e-300",
        ["capacity", "--start", "1e-300"],
        "--start=1e-300 must be between 0.015625 and 4096 req/s",
    ),
    Case(
        "profile a billion samples",
        ["profile", "--samples", "1000000000"],
        "--samples=1,000,000,000 is above the limit of 100,000",
    ),
    Case("zero requests", ["simulate", "--requests", "0"], "--requests"),
    Case("negative requests", ["capacity", "--requests", "-3"], "--requests"),
    Case("requests not a number", ["simulate", "--requests", "abc"], "--requests"),
    Case("requests beyond memory", ["simulate", "-n", "100000000"], "8.2 KB per request, 820.0 GB"),
    Case("negative seed", ["simulate", "--seed", "-5"], "--seed"),
    Case("seed not a number", ["simulate", "--seed", "x"], "--seed"),
    Case("demo negative seed", ["demo", "--seed", "-1"], "--seed"),
    Case("demo zero requests", ["demo", "--requests", "0"], "--requests"),
    Case("tensor parallel 0", ["simulate", "--tp", "0"], "--tp"),
    Case("slo scale 0", ["simulate", "--slo-scale", "0"], "slo_scale"),
    Case("slo scale NaN", ["simulate", "--slo-scale", "nan"], "slo_scale"),
    Case("workers 0", ["sweep", "--workers", "0"], "--workers"),
    Case("workers -1", ["capacity", "--workers", "-1"], "--workers"),
    Case(
        "workers with ray",
        ["capacity", "--workers", "2", "--ray", "auto", "-n", "5", "-o", "{dir}"],
        "give one or the other",
    ),
    Case("capacity start 0", ["capacity", "--start", "0"], "--start"),
    Case("capacity start NaN", ["capacity", "--start", "nan"], "--start"),
    Case("profile 0 samples", ["profile", "--samples", "0"], "--samples"),
    Case("holdout 2", ["fit", "--holdout", "2"], "holdout"),
    Case("holdout 0", ["fit", "--holdout", "0"], "holdout"),
    Case("reproduce workers 0", ["reproduce", "--quick", "--workers", "0"], "--workers"),
    Case("reproduce out a file", ["reproduce", "--quick", "--out", "{file}"], "--out", b""),
    # names and lists
    Case("unknown policy", ["simulate", "--policy", "fifo"], "known: greedy, qoserve, sarathi"),
    Case(
        "unknown hardware",
        ["simulate", "--hardware", "tpu"],
        "known: a100-80g, a100-80g-measured, a100-80g-quantized, h100, h100-quantized, "
        "rtx3090, rtx3090-quantized",
    ),
    Case("unknown model", ["simulate", "--model", "gpt5"], "known:"),
    Case(
        "unknown workload", ["simulate", "--workload", "chat"], "known: arxiv, cpu-mixed, mixed-v1"
    ),
    Case("empty policy list", ["sweep", "-p", ""], "name at least one policy"),
    Case("policy list of commas", ["capacity", "-p", ",,"], "name at least one policy"),
    Case("unknown policy in list", ["capacity", "--policy", "vllm,nope"], "unknown policy"),
    Case("unknown policy option", ["capacity", "-p", "sarathi-edf[budget=9]"], "its options"),
    Case("policy option bad value", ["sweep", "-p", "qoserve[kappa=-1]"], "kappa"),
    Case("policy option no value", ["capacity", "-p", "qoserve[kappa]"], "key=value"),
    Case("policy option twice", ["capacity", "-p", "qoserve[kappa=0,kappa=1]"], "twice"),
    Case("policy label unclosed", ["sweep", "-p", "qoserve[kappa=0"], "name[key=value"),
    Case("policy named twice", ["capacity", "-p", "qoserve,qoserve"], "named twice"),
    Case("simulate policy option", ["simulate", "-p", "slidingserve[window=0]"], "window"),
    # a policy of your own (--plugin)
    Case(
        "a policy of your own over its budget",
        ["simulate", "--plugin", "{file}", "-p", "over-budget", "-n", "20", "-o", "{dir}"],
        "policy 'over-budget' at t=",
        OVER_BUDGET,
        "policy.py",
    ),
    Case(
        "a capacity search of it",
        ["capacity", "--plugin", "{file}", "-p", "over-budget", "-n", "20", "-o", "{dir}"],
        "policy 'over-budget' at t=",
        OVER_BUDGET,
        "policy.py",
    ),
    Case(
        "a sweep of it",
        ["sweep", "--plugin", "{file}", "-p", "over-budget", "-n", "20", "-o", "{dir}"],
        "policy 'over-budget' at t=",
        OVER_BUDGET,
        "policy.py",
    ),
    Case(
        "its option not an int",
        ["simulate", "--plugin", "{file}", "-p", "least-slack[chunk=abc]"],
        "policy 'least-slack': chunk must be an int, got 'abc'",
        LEAST_SLACK,
        "policy.py",
    ),
    Case(
        "its option a fraction",
        ["capacity", "--plugin", "{file}", "-p", "least-slack[chunk=2.5]"],
        "policy 'least-slack': chunk must be an int, got 2.5",
        LEAST_SLACK,
        "policy.py",
    ),
    Case(
        "its factory raises",
        ["sweep", "--plugin", "{file}", "-p", "fragile[chunk=8192]"],
        "policy 'fragile': chunk=8192 made its factory raise ValueError: no GPU runs",
        FRAGILE,
        "policy.py",
    ),
    Case(
        "policies with a plugin missing",
        ["policies", "--plugin", "/no/such/policies.py"],
        "plugin '/no/such/policies.py': import failed: no such file",
    ),
    Case("empty rates", ["sweep", "--rates", ""], "--rates"),
    Case("rate not a number", ["sweep", "--rates", "1,x"], "--rates"),
    Case("negative rate in list", ["sweep", "--rates", "1,-2"], "--rates"),
    Case("zero rate in list", ["sweep", "--rates", "0"], "--rates"),
    Case("rate 1e-300 in list", ["sweep", "--rates", "1,1e-300"], "every rate must be between"),
    # the parser itself
    Case("unknown command", ["nonsense"], "No such command"),
    Case("unknown option", ["simulate", "--bogus"], "No such option"),
    Case("flag given a value", ["simulate", "--strict", "true"], "unexpected extra argument"),
    Case("check without a log", ["check"], "Missing argument"),
    # trace files
    Case("trace missing", ["simulate", "--trace", "/no/such/trace.csv"], "no such file"),
    Case("trace is a folder", ["simulate", "--trace", "{dir}"], "is a directory"),
    Case("trace binary", ["simulate", "--trace", "{file}"], ":1: not UTF-8", BINARY),
    Case(
        "trace binary on line 3",
        ["simulate", "--trace", "{file}"],
        ":3: not UTF-8",
        _trace(f"{VIDUR}\n5,2\n") + b"\xff\xfe,2\n",
    ),
    Case(
        "trace 1e20 tokens",
        ["simulate", "--trace", "{file}"],
        ":2: num_prefill_tokens='1e20'",
        _trace(f"{VIDUR}\n1e20,2\n"),
    ),
    Case(
        "trace infinite tokens",
        ["simulate", "--trace", "{file}"],
        "num_decode_tokens='inf'",
        _trace(f"{VIDUR}\n5,inf\n"),
    ),
    Case(
        "trace negative tokens",
        ["simulate", "--trace", "{file}", "-n", "1"],
        ":3: num_prefill_tokens='-3'",
        _trace(f"{VIDUR}\n10,5\n-3,4\n"),
    ),
    Case(
        "trace fractional tokens",
        ["simulate", "--trace", "{file}"],
        "must be an int",
        _trace(f"{VIDUR}\n2.5,4\n"),
    ),
    Case(
        "trace unknown header",
        ["simulate", "--trace", "{file}"],
        "unrecognized header",
        _trace("prompt,output\n5,2\n"),
    ),
    Case("trace empty", ["simulate", "--trace", "{file}"], "unrecognized header", b""),
    Case("trace header only", ["simulate", "--trace", "{file}"], "no requests", _trace(VIDUR)),
    Case(
        "trace short row",
        ["simulate", "--trace", "{file}"],
        ":2: 1 fields, header has 2",
        _trace(f"{VIDUR}\n5\n"),
    ),
    Case(
        "trace NUL byte",
        ["simulate", "--trace", "{file}"],
        "num_decode_tokens='\\x002' is not a number",
        _trace(f"{VIDUR}\n5,\x002\n"),
    ),
    Case(
        "trace time goes back",
        ["simulate", "--trace", "{file}", "-n", "2"],
        "goes back in time",
        _trace(f"{VIDUR},arrived_at\n5,2,3.0\n5,2,1.0\n"),
    ),
    Case(
        "trace arrival at 1e300 s",
        ["simulate", "--trace", "{file}", "-n", "2"],
        ":3: arrived_at='1e300' is beyond 1e+10 s (317 years)",
        _trace(f"{VIDUR},arrived_at\n5,2,0\n5,2,1e300\n"),
    ),
    Case(
        "trace column twice",
        ["simulate", "--trace", "{file}", "-n", "1"],
        ":1: the header names column 'num_prefill_tokens' twice",
        _trace(f"{VIDUR},num_prefill_tokens\n5,2,7\n"),
    ),
    Case(
        "trace Azure column twice",
        ["simulate", "--trace", "{file}", "-n", "1"],
        "names column 'TIMESTAMP' twice",
        _trace("TIMESTAMP,ContextTokens,GeneratedTokens,TIMESTAMP\n0,5,2,1\n"),
    ),
    Case("trace endless", ["simulate", "--trace", "/dev/zero"], "/dev/zero:1: a line longer"),
    Case(
        "trace line of 2 MiB",
        ["simulate", "--trace", "{file}"],
        ":2: a line longer than 1 MiB",
        _trace(f"{VIDUR}\n5,{'2' * 2**21}\n"),
    ),
    Case(
        "trace bad timestamp",
        ["simulate", "--trace", "{file}", "-n", "1"],
        "neither seconds nor a date-time",
        _trace("TIMESTAMP,ContextTokens,GeneratedTokens\nyesterday,5,2\n"),
    ),
    Case(
        "more requests than the trace",
        ["simulate", "--trace", "{file}", "-n", "300"],
        "--requests=300 but",
        _trace(f"{VIDUR}\n5,2\n6,3\n"),
    ),
    # profile files
    Case("profile missing", ["simulate", "--profile", "/no/such/profile.csv"], "no such file"),
    Case("profile is a folder", ["profile", "--profile", "{dir}"], "is a directory"),
    Case("profile binary", ["profile", "--profile", "{file}"], "not UTF-8", BINARY),
    Case(
        "profile header only",
        ["profile", "--profile", "{file}"],
        "a header but no data rows",
        _trace(PROFILE_HEADER + "\n"),
    ),
    Case(
        "profile infinite tokens",
        ["profile", "--profile", "{file}"],
        "num_tokens='inf'",
        _trace(f"{PROFILE_HEADER}\n{PROFILE_ROW.format(tokens='inf')}\n"),
    ),
    Case(
        "profile 1e400 tokens",
        ["profile", "--profile", "{file}"],
        "num_tokens='1e400'",
        _trace(f"{PROFILE_HEADER}\n{PROFILE_ROW.format(tokens='1e400')}\n"),
    ),
    Case(
        "profile missing columns",
        ["profile", "--profile", "{file}"],
        "missing column(s)",
        _trace("num_tokens,num_tensor_parallel_workers\n8,2\n"),
    ),
    Case(
        "profile column twice",
        ["profile", "--profile", "{file}"],
        ":1: the header names column 'num_tokens' twice",
        _trace(f"{PROFILE_HEADER},num_tokens\n{PROFILE_ROW.format(tokens=8)},9\n"),
    ),
    Case("profile endless", ["profile", "--profile", "/dev/zero"], "a line longer than 1 MiB"),
    # predictor files
    Case("predictor missing", ["simulate", "--predictor", "/no/such.json"], "no such file"),
    Case("predictor binary", ["simulate", "--predictor", "{file}"], "not UTF-8", BINARY),
    Case("predictor not JSON", ["simulate", "--predictor", "{file}"], "not JSON", b"{oops"),
    Case(
        "predictor of another format",
        ["simulate", "--predictor", "{file}"],
        "not a slidingpolicy.predictor file",
        b'{"format": "other"}',
    ),
    Case("predictor is a folder", ["check", "x", "--predictor", "{dir}"], "is a directory"),
    Case(
        "predictor nested deep",
        ["simulate", "--predictor", "{file}"],
        "nested deeper than 32 levels",
        b"[" * 100_000 + b"]" * 100_000,
    ),
    Case(
        "predictor objects nested deep",
        ["check", "x", "--predictor", "{file}"],
        "nested deeper than 32 levels",
        b'{"a":' * 50_000 + b"1" + b"}" * 50_000,
    ),
    Case("predictor endless", ["simulate", "--predictor", "/dev/zero"], "larger than 16 MiB"),
    Case(
        "predictor weights a string of digits",
        ["simulate", "--predictor", "{file}"],
        "linear model: weights must be a list of numbers, got str",
        _predictor(weights="1234567"),
    ),
    Case(
        "predictor weight 1e300",
        ["simulate", "--predictor", "{file}"],
        "weights[2]=1e+300 s is beyond 1e+10 s",
        _predictor(weights=[0, 0, 1e300, 0, 0, 0, 0]),
    ),
    Case(
        "predictor version 3 without its tile",
        ["simulate", "--predictor", "{file}"],
        "version 3 (tile-aware) needs its 'tile'",
        _predictor(version=3),
    ),
    Case(
        "predictor version 2 with a tile",
        ["simulate", "--predictor", "{file}"],
        "version 2 has no 'tile' (a tile-aware predictor is version 3)",
        _predictor(tile=64),
    ),
    # samples files
    Case("samples missing", ["fit", "--samples", "/no/such.jsonl"], "no such file"),
    Case("samples binary", ["fit", "--samples", "{file}"], "not UTF-8", BINARY),
    Case(
        "samples 10**30 tokens",
        ["fit", "--samples", "{file}"],
        ":2: not a sample",
        (
            SAMPLE + '{"chunks": [1000000000000000000000000000000], "contexts": [5], "latency": 1}'
        ).encode(),
    ),
    Case(
        "samples 1e400 latency",
        ["fit", "--samples", "{file}"],
        "too large for a float",
        b'{"chunks": [1], "contexts": [5], "latency": 1e400}',
    ),
    Case(
        "samples NaN latency",
        ["fit", "--samples", "{file}"],
        "NaN",
        b'{"chunks": [1], "contexts": [5], "latency": NaN}',
    ),
    Case("samples empty", ["fit", "--samples", "{file}"], "no samples", b"\n\n"),
    Case("samples not JSON", ["fit", "--samples", "{file}"], ":1: not a sample", b"[1,"),
    Case(
        "sample without latency",
        ["fit", "--samples", "{file}"],
        "'latency'",
        b'{"chunks": [1], "contexts": [5]}',
    ),
    Case(
        "samples nested deep",
        ["fit", "--samples", "{file}"],
        ":2: not a sample (nested deeper than 32 levels)",
        SAMPLE.encode() + b"[" * 10_000 + b"]" * 10_000,
    ),
    Case("samples endless", ["fit", "--samples", "/dev/zero"], "a line longer than 64 MiB"),
    # logs for check
    Case("log missing", ["check", "/no/such/log.jsonl"], "no such file"),
    Case("log is a folder", ["check", "{dir}"], "is a directory"),
    Case("log empty", ["check", "{file}"], "no plans to check", b""),
    Case("log binary", ["check", "{file}"], "not UTF-8", BINARY),
    Case("log endless", ["check", "/dev/zero"], "/dev/zero:1: a line longer than 64 MiB"),
    Case(
        "check unknown hardware",
        ["check", "{file}", "--hardware", "tpu"],
        "unknown hardware 'tpu'",
        b"x",
    ),
    Case(
        "check two predictors",
        ["check", "{file}", "--predictor", "p.json", "--hardware", "h100"],
        "not both",
        b"x",
    ),
    # a cluster
    Case("router unknown", ["simulate", "--router", "nearest"], "unknown router 'nearest'"),
    Case(
        "router option unknown",
        ["simulate", "--router", "round-robin[x=1]"],
        "x is not one of its options (none)",
    ),
    Case(
        "router option of the wrong type",
        ["capacity", "--router", "slo-aware[notice=maybe]"],
        "router 'slo-aware': notice must be a bool",
    ),
    Case("router label malformed", ["sweep", "--router", "slo-aware["], "expected name"),
    Case("several routers to simulate", ["simulate", "--router", "all"], "name one router"),
    Case(
        "router named twice",
        ["sweep", "--replicas", "2", "--router", "slo-aware,slo-aware"],
        "a router is named twice",
    ),
    Case("no replica", ["simulate", "--replicas", "0"], "'--replicas'"),
    Case("report period negative", ["capacity", "--report-period", "-1"], "'--report-period'"),
    Case(
        "report period endless",
        ["sweep", "--replicas", "2", "--report-period", "inf"],
        "cluster: report_period=inf must be finite",
    ),
    Case(
        "reroute with no give-up",
        ["capacity", "-p", "slidingserve+", "--replicas", "2", "--reroute"],
        "--reroute: policy 'slidingserve+' gives no request up",
    ),
    Case(
        "step log of a cluster",
        ["simulate", "--replicas", "2", "--log", "{file}"],
        "record one engine's steps: not with a cluster",
    ),
    # where results go
    Case("out is a file", ["simulate", "--out", "{file}"], "cannot write there", b"x"),
    Case("log is a folder to write", ["simulate", "--log", "{dir}"], "is a directory"),
    Case("profile out is a folder", ["profile", "--out", "{dir}"], "is a directory"),
    Case("fit out is a folder", ["fit", "--out", "{dir}"], "is a directory"),
    Case("sweep out under a file", ["sweep", "--out", "{file}/sub"], "cannot write there", b"x"),
]


def test_the_table_is_large_and_distinct() -> None:
    assert len(CASES) >= 60
    assert len({c.name for c in CASES}) == len(CASES)
    assert len({(tuple(c.args), c.content) for c in CASES}) == len(CASES)


def _one_line_error(args: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    """`slidingpolicy ARGS` exits with code 2 and one line on stderr, no traceback: that line."""
    with pytest.raises(SystemExit) as done:
        main(args)
    captured = capsys.readouterr()
    assert "Traceback" not in captured.out + captured.err
    assert done.value.code == 2, captured
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1, captured.err
    assert lines[0].startswith("slidingpolicy: error: ")
    return lines[0]


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_bad_input_is_one_line_exit_2_and_no_traceback(
    case: Case, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    file = tmp_path / case.file
    if case.content is not None:
        file.write_bytes(case.content)
    folder = tmp_path / "folder"
    folder.mkdir()
    args = [a.replace("{file}", str(file)).replace("{dir}", str(folder)) for a in case.args]
    with own_registry():
        assert case.needle in _one_line_error(args, capsys)


@pytest.mark.parametrize("command", ["capacity", "sweep"])
def test_ray_missing_is_one_line_naming_the_extra(
    command: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setitem(sys.modules, "ray", None)
    line = _one_line_error([command, "--ray", "auto", "-n", "5", "-o", str(tmp_path)], capsys)
    assert "Ray is not installed" in line
    assert "pip install 'slidingpolicy[ray]'" in line


@pytest.mark.parametrize(
    ("address", "needle"),
    [
        ("", "give an address"),
        ("nonsense", "Invalid address format"),
        ("127.0.0.1:1", "nothing answers there"),
        ("ray://127.0.0.1:1", "nothing answers there"),
    ],
)
def test_a_bad_ray_address_is_one_line(
    address: str, needle: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("ray", reason="Ray is an optional extra: slidingpolicy[ray]")
    line = _one_line_error(["capacity", "--ray", address, "-n", "5", "-o", str(tmp_path)], capsys)
    assert f"Ray cluster {address!r}" in line
    assert needle in line


def test_a_log_line_nested_deep_is_malformed_not_a_broken_plan(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Exit 2 (malformed lines), not 1 (a plan breaks an invariant), and no RecursionError."""
    log = tmp_path / "log.jsonl"
    log.write_bytes(b'{"state":' * 5000 + b"1" + b"}" * 5000 + b"\n")
    code, out, err = run_cli(["check", str(log)], capsys)
    assert code == 2
    assert "Traceback" not in out + err
    deep = "not JSON a record can hold: nested deeper than 32 levels"
    assert err.strip() == f"{log}:1: malformed: {deep}"


def test_a_log_line_with_a_waiting_request_that_generated_tokens_is_malformed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Such a request was once accepted by `Request` and so by `check` (exit 0)."""
    waiting = Request("a", 0.0, 10, 0, 0, 3.0, 0.1)
    state = SchedulerState(1.0, (waiting,), 8000.0)
    plan = BatchPlan((Allocation("a", 10),), "chunker", "slidingserve", 10, 0.01)
    line = json.loads(log_line(state, plan, 2048))
    line["state"]["requests"][0]["generated"] = 1
    log = tmp_path / "log.jsonl"
    log.write_text(json.dumps(line) + "\n")
    code, out, err = run_cli(["check", str(log)], capsys)
    assert code == 2
    assert "Traceback" not in out + err
    assert err.strip().startswith(
        f"{log}:1: malformed: request 'a': generated=1 but the prefill is not complete "
        "(prefilled=0 < prompt_tokens=10)"
    )


def test_workers_beyond_the_cpus_are_capped_with_a_note(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cores = default_workers()
    args = ["sweep", "-p", "vllm", "--rates", "1", "-n", "5", "--workers", "99"]
    code, _, err = run_cli([*args, "-o", str(tmp_path)], capsys)
    assert code == 0
    assert f"--workers 99: this process may use {cores} CPUs; running {cores} workers" in err


def test_the_docs_list_every_case() -> None:
    """docs/bad-input.md holds each case with its message (`scripts/bad_input_tables.py`)."""
    rows = documented_rows(Path(__file__).resolve().parents[2] / "docs" / "bad-input.md")
    missing = [c.name for c in CASES if c.needle not in " ".join(rows.get(c.name, "").split())]
    assert missing == [], "run python scripts/bad_input_tables.py"

"""`slidingpolicy explain`: one SlidingServe decision walked through, as text and a figure."""

from __future__ import annotations

from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.markup import escape
from rich.table import Table

from slidingpolicy.cli.checked_run import HardwareChoice, WorkloadChoice, run_spec
from slidingpolicy.cli.option_sets import (
    NAMED_HARDWARE,
    SEED,
    WORKLOAD_NAME,
    OptionSet,
    Param,
    takes,
)
from slidingpolicy.cli.options import CliError, PredictorOpt, writable_file
from slidingpolicy.cli.output import can_plot, console, fmt

if TYPE_CHECKING:
    from slidingpolicy.explanation import Explanation, Split
    from slidingpolicy.pricing.model import LatencyPredictor
    from slidingpolicy.records.state import SchedulerState

STATE_FORMAT = 'expected a JSON state {"now", "requests", "prefill_throughput", ...} or a log line'
AT_WORKLOAD = OptionSet(
    WorkloadChoice,
    (
        WORKLOAD_NAME,
        Param(
            "rate",
            Annotated[float, typer.Option("--rate", "-r", help="Poisson rate with --at.")],
            2.0,
        ),
        SEED,
    ),
    partial(WorkloadChoice, requests=None),
)
"""The workload that --at runs: --workload at --rate (2 req/s by default), --seed."""


@takes(AT_WORKLOAD, NAMED_HARDWARE)
def explain_command(
    example: Annotated[
        str | None,
        typer.Option(
            "--example",
            help="A built-in state: readme (the README's) or scene (the docs' worked example, "
            "with its hand-checkable predictor). The default when no --state or --at is given.",
        ),
    ] = None,
    state_file: Annotated[
        Path | None,
        typer.Option(
            "--state",
            help="A state as JSON (slidingpolicy.codec; a line of `simulate --log` works too), "
            "priced with the hardware's predictor or --predictor.",
        ),
    ] = None,
    at: Annotated[
        float | None,
        typer.Option(
            "--at",
            help="Run --workload at --rate and explain the first decision at or after this "
            "time (seconds), with the predictor and margin the policy had learned by then.",
        ),
    ] = None,
    policy: Annotated[
        str, typer.Option("--policy", "-p", help="A SlidingServe variant (see `policies`).")
    ] = "slidingserve",
    *,
    workload: WorkloadChoice,
    hardware: HardwareChoice,
    predictor: PredictorOpt = None,
    figure: Annotated[
        Path | None, typer.Option("--figure", help="Also draw the decision as a PNG here.")
    ] = None,
) -> None:
    """Walk one SlidingServe decision through: the MLPS levels and order, T_cur and the decode
    that binds it, the violation check, the BatchConstructor's knapsack per anchor when a
    request is at risk, else the window's budget B_Σ and the split B* against its
    alternatives (greedy, the ternary search), and the plan.

    Equations as numbered on the docs' equations page (docs/algorithms/equations.md).
    """
    from slidingpolicy.explanation import explain, sliding_of
    from slidingpolicy.policies import by_name
    from slidingpolicy.policies.labels import parse_label

    if sum(x is not None for x in (example, state_file, at)) > 1:
        raise CliError("give one of --example, --state and --at")
    if figure is not None:
        writable_file(figure, "--figure")
    prices, state = _scene(example, state_file, at, policy, workload, hardware)
    if predictor is not None:
        from slidingpolicy.pricing.model import LatencyPredictor

        prices = LatencyPredictor.load(predictor)
    name, options = parse_label(policy)
    chosen = sliding_of(by_name(name, prices, **dict(options)))
    if chosen is None:
        raise CliError(f"--policy {policy!r} is a baseline: explain walks SlidingServe's steps")
    found = explain(chosen, state)
    print_explanation(found)
    if figure is not None and can_plot():
        from slidingpolicy.figures.explain_figure import plot_explanation

        plot_explanation(found, figure)
        console.print(f"figure in {figure}", markup=False)


def _scene(
    example: str | None,
    state_file: Path | None,
    at: float | None,
    policy: str,
    workload: WorkloadChoice,
    hardware: HardwareChoice,
) -> tuple[LatencyPredictor, SchedulerState]:
    """The predictor and state to explain, from whichever source was given."""
    if state_file is not None:
        return _predictor_of(hardware), _read_state(state_file)
    if at is not None:
        checked = run_spec(policy, hardware, workload)
        return _state_at(checked, at)
    from slidingpolicy.examples import EXAMPLES

    name = example or "readme"
    if name not in EXAMPLES:
        from slidingpolicy.errors import UnknownNameError

        raise UnknownNameError("example", name, tuple(EXAMPLES))
    return EXAMPLES[name]()


def _predictor_of(hardware: HardwareChoice) -> LatencyPredictor:
    spec = hardware.spec()
    spec.build()
    return spec.predictor()


def _read_state(path: Path) -> SchedulerState:
    """A state from a JSON file: the state itself, or an object with a "state" (a log line)."""
    from slidingpolicy._parse import read_json
    from slidingpolicy.codec import state_from_dict

    data = read_json(path, CliError, STATE_FORMAT)
    if isinstance(data, dict) and "state" in data:
        data = data["state"]
    return state_from_dict(data, f"{path}: state")


class _ReachedError(Exception):
    """Stops the run at the decision to explain, with the predictor it is priced with."""

    def __init__(self, state: Any, predictor: Any) -> None:
        super().__init__()
        self.state = state
        self.predictor = predictor


class _Until:
    """The run's policy up to its first decision at or after `at`, where it stops the run
    with the state and the predictor in force: the learned one (its margin included) for a
    policy that learns online, else its own."""

    def __init__(self, policy: Any, at: float) -> None:
        self.policy, self.at = policy, at
        self.name, self.token_budget = policy.name, policy.token_budget

    def init(self) -> Any:
        return self.policy.init()

    def plan(self, pstate: Any, state: Any) -> Any:
        if state.now >= self.at:
            raise _ReachedError(state, getattr(pstate, "predictor", None) or self.policy.predictor)
        return self.policy.plan(pstate, state)

    def observe(self, pstate: Any, state: Any, plan: Any, latency: float) -> Any:
        return self.policy.observe(pstate, state, plan, latency)

    def observe_decodes(self, pstate: Any, decodes: Any, latencies: Any) -> Any:
        return self.policy.observe_decodes(pstate, decodes, latencies)


def _state_at(checked: Any, at: float) -> tuple[LatencyPredictor, SchedulerState]:
    """The engine's state at its first decision at or after `at` seconds, and the predictor
    the policy prices it with."""
    from slidingpolicy.engine.simulator import simulate

    spec = checked.spec
    until = _Until(checked.policy, at)
    try:
        simulate(until, checked.workload, checked.hardware, spec.seed)
    except _ReachedError as found:
        return found.predictor, found.state
    raise CliError(f"--at {at}: the run decides nothing at or after {at} s")


def _ms(seconds: float | None) -> str:
    return "—" if seconds is None else f"{1000 * seconds:.1f} ms"


def print_explanation(found: Explanation) -> None:
    """The decision, step by step."""
    state = found.state
    decodes, others = len(state.decoding), len(state.requests) - len(state.decoding)
    say = console.print
    say(
        f"{found.policy} at t = {state.now:g} s: {decodes} decoding, {others} waiting or "
        f"prefilling; ρ = {state.prefill_throughput:g} tokens/s; {len(found.decodes)} decodes "
        f"admitted, {found.prefill_cap} tokens left for prefill; latency margin m = "
        f"{found.margin:.3f}",
        markup=False,
    )
    _order(found)
    say("\n2. The window (eq. 7–8)", style="bold")
    if found.t_cur is None:
        say("   no live decode bounds this iteration: the queue fills up to the cap")
    else:
        say(
            f"   T_cur = {_ms(found.t_cur.value)}, set by {found.t_cur.request} (its next "
            f"token's slack); T_next = {_ms(found.t_next.value if found.t_next else None)}, "
            f"set by {found.t_next.request if found.t_next else '—'}",
            markup=False,
        )
    say("\n3. The violation check", style="bold")
    if found.candidate_latency is None:
        say(f"   not run: {found.handover}", markup=False)
    else:
        say(
            f"   candidate batch (the ordered queue up to the cap): "
            f"{', '.join(found.candidate) or 'none'}; T̂_full = {_ms(found.candidate_latency)}; "
            f"at risk (0 < s_i < m·T̂_full): {', '.join(found.risky) or 'none'}",
            markup=False,
        )
    if found.risky and found.handover:
        say(f"   the BatchConstructor passes: {found.handover}", markup=False)
    if found.anchors:
        _anchors(found)
    if found.split is not None:
        _split(found.split, found)
    _plan(found)


def _order(found: Explanation) -> None:
    edf = any(row.level == "edf" for row in found.order)
    title = "EDF order (earliest TTFT deadline first)" if edf else "MLPS order (eq. 10–16)"
    console.print(f"\n1. {title}", style="bold")
    table = Table(box=None, pad_edge=False)
    for column in ("#", "request", "r_i", "slack", "u_i", "level"):
        table.add_column(column, justify="right" if column != "level" else "left")
    for k, row in enumerate(found.order, start=1):
        table.add_row(
            str(k),
            escape(row.request.id),
            str(row.remaining),
            _ms(row.slack),
            fmt(row.urgency, 3),
            row.level,
        )
    console.print(table)
    if edf:
        return
    console.print(
        "   key (1 − g, late, 1 − e, r): protected first, live before late, urgent "
        "(u = r / (ρ·max(s, ε)) > α) before calm, then least remaining prefill",
        markup=False,
    )


def _anchors(found: Explanation) -> None:
    console.print("\n4. BatchConstructor (eq. 17–22): one knapsack per risky anchor", style="bold")
    for work in found.anchors:
        head = (
            f"   anchor {work.anchor}: T_a = min(s_a, T_cur)/m = {_ms(work.limit)}, "
            f"C_a = TimeToBudget(T_a) = {work.capacity} tokens, of which C_a − r_a = "
            f"{work.capacity - work.remaining} for S_a"
        )
        if work.skipped:
            console.print(f"{head}; skipped: {work.skipped}", markup=False)
            continue
        console.print(head, markup=False)
        pool = ", ".join(
            f"{rid} (r={r}, v={v:.3f}{', taken' if rid in work.chosen else ''})"
            for rid, r, v in work.pool
        )
        console.print(f"     S_a: {pool or 'empty'}", markup=False)
        console.print(
            f"     Y_a = {{{', '.join(work.chosen)}}}, T̂ = {_ms(work.latency)}"
            f"{' after repair' if work.repaired else ''}; eq. 21 rank (|Y|, Σv, Σr) = "
            f"{work.rank[:3] if work.rank else '—'}",
            markup=False,
        )


def _split(split: Split, found: Explanation) -> None:
    console.print("\n4. SlidingChunker (eq. 9): the window's split", style="bold")
    cost = {b: (one, whole, ok) for b, one, whole, ok in split.curve}
    least = min((whole for _, _, whole, ok in split.curve if ok), default=float("nan"))
    console.print(
        f"   B_Σ = TimeToBudget(T_cur + T_next) = {split.budget_sum} tokens; B* = "
        f"{split.chosen}; greedy (eq. 3) would run {split.greedy}; the ternary search "
        f"finds {split.ternary if split.ternary is not None else '—'}",
        markup=False,
    )
    table = Table(box=None, pad_edge=False)
    for column in ("b (now)", "B_Σ − b (next)", "T̂₁(b)", "T̂₁ + T̂₂", "within T_cur", "note"):
        table.add_column(column, justify="right")
    marks = {split.chosen: "B* (chosen)", split.greedy: "greedy"}
    if split.ternary is not None:
        marks.setdefault(split.ternary, "ternary")
    shown = sorted({split.curve[0][0], split.curve[-1][0], *marks})
    for b in shown:
        if b not in cost:
            continue
        one, whole, ok = cost[b]
        note = marks.get(b, "")
        if whole == least and ok and not note:
            note = "least cost"
        table.add_row(
            str(b), str(split.budget_sum - b), _ms(one), _ms(whole), "yes" if ok else "no", note
        )
    console.print(table)
    if split.chosen == split.greedy and split.chosen != split.ternary:
        console.print(
            "   no deferral: the whole queue fits now within T_cur, so it runs now "
            "(docs/decisions.md)",
            markup=False,
        )


def _plan(found: Explanation) -> None:
    plan = found.plan
    console.print("\n5. The plan", style="bold")
    tokens = plan.tokens_of()
    decodes = sum(1 for rid in tokens if rid in found.decodes)
    prefills = {rid: c for rid, c in tokens.items() if rid not in found.decodes}
    console.print(
        f"   path {plan.branch}: {decodes} decodes × 1 token, prefill "
        f"{', '.join(f'{rid} {c}' for rid, c in prefills.items()) or 'none'}; "
        f"{sum(tokens.values())} tokens, predicted {_ms(plan.predicted_latency)}",
        markup=False,
    )

"""A policy of your own (examples/my_policy.py), run by its registered name through every path:
the registry and its options, a plugin or an entry point in another process's place,
`simulate` (the function and the command line), `capacity`, `check` on the trace it wrote,
and a codec round trip; it and the one written from scratch (examples/least_slack.py) pass
the test kit."""

from __future__ import annotations

import ast
import json
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings

from slidingpolicy import (
    BatchPlan,
    InvalidRecordError,
    Request,
    SchedulerState,
    UnknownNameError,
    by_name,
    default_predictor,
    load_plugins,
    names,
    register,
)
from slidingpolicy.codec import log_line, parse_step
from slidingpolicy.engine import EngineOptions, simulate
from slidingpolicy.hardware import default_hardware
from slidingpolicy.policies import plugin_loader, registry, summary
from slidingpolicy.policies.labels import parse_label
from slidingpolicy.policies.option_docs import policy_options
from slidingpolicy.policies.vllm_fcfs import vllm
from slidingpolicy.records.candidates import remaining_key
from slidingpolicy.testing import check_policy, check_step
from slidingpolicy.testing.strategies import states
from slidingpolicy.workloads import Poisson, make_workload
from tests.cli.conftest import run_cli
from tests.cli.test_bad_inputs import OVER_BUDGET

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "my_policy.py"
LEAST_SLACK = EXAMPLE.parent / "least_slack.py"
NAME = "shortest-first"


@pytest.fixture
def own_registry(monkeypatch: pytest.MonkeyPatch) -> None:
    """The registry and the plugins loaded as they are now, restored after the test."""
    monkeypatch.setattr(registry, "_REGISTRY", dict(registry._REGISTRY))
    monkeypatch.setattr(plugin_loader, "_LOADED", set())


@pytest.fixture
def example(own_registry: None) -> None:
    """The example registered, as ``--plugin examples/my_policy.py`` registers it."""
    load_plugins([str(EXAMPLE)])


def test_the_example_is_about_twenty_lines() -> None:
    assert len(EXAMPLE.read_text().splitlines()) <= 30


@pytest.mark.usefixtures("example")
def test_its_name_options_and_summary_are_the_registrys_own() -> None:
    assert NAME in names()
    assert summary(NAME).startswith("Shortest remaining prefill first")
    policy = by_name(NAME, default_predictor())
    assert (policy.name, policy.token_budget) == (NAME, 1024)
    name, options = parse_label(f"{NAME}[token_budget=256]")
    assert by_name(name, default_predictor(), **dict(options)).token_budget == 256
    budget, learn = policy_options(NAME)
    assert (budget.name, budget.default, budget.meaning) == (
        "token_budget",
        1024,
        "tokens per iteration, decodes included.",
    )
    assert (learn.name, learn.default) == ("learn", False)
    with pytest.raises(InvalidRecordError, match="chunk is not one of its options"):
        by_name(NAME, default_predictor(), chunk=3)


@pytest.mark.usefixtures("example")
@pytest.mark.parametrize(
    ("name", "factory", "options", "needle"),
    [
        ("vllm", vllm, (), "policy 'vllm': name is taken"),
        (NAME, vllm, (), "policy 'shortest-first': name is taken"),
        ("mine[x=1]", vllm, (), "must be a plain name"),
        ("a,b", vllm, (), "must be a plain name"),
        ("a b", vllm, (), "must be a plain name"),
        ("all", vllm, (), "must be a plain name"),
        ("", vllm, (), "must be a plain name"),
        ("mine", vllm, ("chunk",), "chunk is not a parameter of its factory"),
        ("mine", vllm, ("learn",), "learn is an option of every policy already"),
        ("mine", "vllm", (), "factory must be callable"),
        ("mine", vllm, ["token_budget"], "options must be a tuple of names"),
    ],
)
def test_a_registration_that_cannot_be_told_apart_is_refused(
    name: str, factory: object, options: object, needle: str
) -> None:
    with pytest.raises(InvalidRecordError, match=needle.replace("[", r"\[")):
        register(name, factory, options)  # type: ignore[arg-type]


@pytest.mark.usefixtures("own_registry")
def test_a_factory_must_build_a_policy_of_the_name_it_is_registered_as() -> None:
    register("misnamed", vllm)
    assert "misnamed" in names()
    with pytest.raises(InvalidRecordError, match="name='vllm': its factory must build"):
        by_name("misnamed", default_predictor())


@pytest.mark.usefixtures("example")
def test_a_plugin_is_loaded_once_however_its_path_is_written(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(EXAMPLE.parents[1])
    load_plugins([str(EXAMPLE), "examples/my_policy.py", "./examples/../examples/my_policy.py"])
    assert names().count(NAME) == 1


@pytest.mark.usefixtures("own_registry")
@pytest.mark.parametrize(
    ("plugin", "needle"),
    [
        ("no_such_module_of_policies", "plugin 'no_such_module_of_policies': import failed"),
        ("missing/policy.py", "plugin 'missing/policy.py': import failed: no such file"),
        ("", "plugin: name must be a module or a .py file"),
    ],
)
def test_a_plugin_that_cannot_be_imported_is_named(plugin: str, needle: str) -> None:
    with pytest.raises(InvalidRecordError, match=needle):
        load_plugins([plugin])


@pytest.fixture
def installed(
    own_registry: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[None]:
    """A distribution on `sys.path` offering the example and a module that registers nothing
    as entry points of `slidingpolicy.policies`, as ``pip install`` would."""
    site = tmp_path / "site"
    info = site / "my_policies-1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: my-policies\nVersion: 1.0\n")
    points = f"[{registry.GROUP}]\n{NAME} = my_policy_module\nghost = json\n"
    (info / "entry_points.txt").write_text(points)
    (site / "my_policy_module.py").write_text(EXAMPLE.read_text())
    monkeypatch.syspath_prepend(str(site))
    yield
    sys.modules.pop("my_policy_module", None)


@pytest.mark.usefixtures("installed")
def test_an_installed_entry_point_is_named_at_once_and_loaded_when_looked_up() -> None:
    assert NAME in names()
    assert "ghost" in names()
    assert NAME not in registry._REGISTRY
    assert by_name(NAME, default_predictor()).name == NAME
    assert NAME in registry._REGISTRY
    with pytest.raises(InvalidRecordError, match="'json' loaded but registered no policy 'ghost'"):
        by_name("ghost", default_predictor())
    with pytest.raises(UnknownNameError, match="unknown policy 'nobody'"):
        by_name("nobody", default_predictor())


@pytest.mark.usefixtures("example")
def test_it_serves_the_shortest_prefills_first_within_its_budget() -> None:
    waiting = (
        Request("long", 0.0, 900, 0, 0, 3.0, 0.1),
        Request("short", 0.5, 100, 0, 0, 3.0, 0.1),
        Request("middle", 0.2, 400, 0, 0, 3.0, 0.1),
    )
    state = SchedulerState(1.0, waiting, 8000.0)
    policy = by_name(NAME, default_predictor())
    plan, _ = policy.plan(policy.init(), state)
    assert plan.tokens_of() == {"short": 100, "middle": 400, "long": 524}
    assert (plan.branch, plan.policy) == ("whole", NAME)


@pytest.mark.usefixtures("example")
@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(state=states())
def test_every_plan_keeps_the_invariants_and_serves_prefills_shortest_first(
    state: SchedulerState,
) -> None:
    policy = by_name(NAME, default_predictor())
    plan, _ = check_step(policy, policy.init(), state)
    assert plan.branch in ("whole", "idle")
    assert plan.policy == NAME
    prefills = [state.request(a.request_id) for a in plan.allocations]
    keys = [remaining_key(r) for r in prefills if r is not None and not r.is_decoding]
    assert keys == sorted(keys)


@pytest.mark.usefixtures("own_registry")
@pytest.mark.parametrize(
    ("example", "name", "options"),
    [
        (EXAMPLE, NAME, {}),
        (EXAMPLE, NAME, {"token_budget": 64}),
        (LEAST_SLACK, "least-slack", {}),
        (LEAST_SLACK, "least-slack", {"chunk": 32, "token_budget": 100}),
    ],
)
def test_the_examples_pass_the_test_kit(example: Path, name: str, options: dict[str, int]) -> None:
    load_plugins([str(example)])
    check_policy(by_name(name, default_predictor(), **options))


@pytest.mark.parametrize("example", [EXAMPLE, LEAST_SLACK], ids=["short", "from scratch"])
def test_each_example_is_the_line_count_its_page_says(example: Path) -> None:
    """docs/own-policy.md gives each one's length, blank lines and docstrings left out."""
    page = (EXAMPLE.parents[1] / "docs" / "own-policy.md").read_text()
    assert f"{code_lines(example)} lines of code" in page


def code_lines(path: Path) -> int:
    """The lines of `path` that are neither blank nor part of a docstring."""
    tree = ast.parse(path.read_text())
    strings = {
        line
        for node in ast.walk(tree)
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)
        for line in range(node.lineno, (node.end_lineno or node.lineno) + 1)
    }
    lines = path.read_text().splitlines()
    return sum(1 for i, line in enumerate(lines, 1) if line.strip() and i not in strings)


@pytest.mark.usefixtures("own_registry")
def test_policies_lists_a_plugins_policy_with_its_options(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, err = run_cli(["policies", "--plugin", str(LEAST_SLACK)], capsys)
    assert code == 0, err
    row = next(line for line in out.splitlines() if line.startswith("least-slack"))
    assert "token_budget=512, chunk=256" in row
    assert "the most prefill tokens one request gets in an iteration" in out


@pytest.mark.usefixtures("example")
def test_simulate_runs_it_by_name_and_every_plan_names_it() -> None:
    seen: list[BatchPlan] = []
    run = simulate(
        by_name(NAME, default_predictor()),
        make_workload("mixed-v1", 40, Poisson(2.0), 3),
        default_hardware(),
        3,
        EngineOptions(strict=True),
        on_plan=lambda state, plan, budget: seen.append(plan),
    )
    assert not run.stalled
    assert seen
    assert {p.policy for p in seen} == {NAME}
    assert {p.branch for p in seen} <= {"whole", "idle"}


@pytest.mark.usefixtures("own_registry")
def test_the_command_line_simulates_checks_and_reads_back_its_trace(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log, out = tmp_path / "steps.jsonl", tmp_path / "out"
    args = ["simulate", "-p", NAME, "-n", "30", "--strict", "--log", str(log), "-o", str(out)]
    code, _, err = run_cli(args, capsys)
    assert code == 2
    assert f"unknown policy '{NAME}'" in err
    code, _, err = run_cli([*args, "--plugin", str(EXAMPLE)], capsys)
    assert code == 0, err
    lines = log.read_text().splitlines()
    plans = [json.loads(line)["plan"] for line in lines]
    assert {p["policy"] for p in plans if p is not None} == {NAME}
    for line in lines:
        state, plan, budget = parse_step(line)
        if plan is not None:
            assert parse_step(log_line(state, plan, budget)) == (state, plan, budget)
    code, text, err = run_cli(["check", str(log)], capsys)
    assert code == 0, text + err
    assert "plans checked" in text


@pytest.mark.slow
@pytest.mark.usefixtures("own_registry")
def test_capacity_searches_it_beside_a_baseline(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from slidingpolicy.cli.app import app

    out = tmp_path / "cap"
    policies = f"{NAME}[token_budget=512],sarathi-edf"
    args = ["capacity", "--plugin", str(EXAMPLE), "-p", policies, "-n", "40", "--seeds", "1",
            "--workers", "1", "-o", str(out)]  # fmt: skip
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    found = json.loads((out / "results.json").read_text())["capacity"]
    assert [c["policy"] for c in found] == policies.split(",")


@pytest.mark.usefixtures("own_registry")
def test_an_adapter_config_loads_its_plugins_before_it_builds_the_policy() -> None:
    from slidingpolicy.embedding import AdapterConfig

    config = AdapterConfig.from_mapping({"policy": NAME, "plugins": [str(EXAMPLE)]})
    assert config.plugins == (str(EXAMPLE),)
    assert config.build_policy().name == NAME
    with pytest.raises(InvalidRecordError, match="adapter config: plugins must be a list"):
        AdapterConfig(plugins="my_policy.py")


@pytest.mark.usefixtures("own_registry")
@pytest.mark.parametrize("command", ["simulate", "sweep", "capacity"])
def test_no_strict_runs_a_policy_of_your_own_unchecked(
    command: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Checking is the default for a policy of your own (the bad-input cases show it stop);
    --no-strict is the user saying otherwise, on every command that runs a policy."""
    plugin = tmp_path / "over_budget.py"
    plugin.write_bytes(OVER_BUDGET)
    args = [command, "--plugin", str(plugin), "-p", "over-budget", "-n", "20", "--no-strict"]
    code, _, err = run_cli([*args, "-o", str(tmp_path / "out")], capsys)
    assert code == 0, err

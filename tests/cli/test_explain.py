"""`slidingpolicy explain`: on the README's state, the docs' scene, a state from a log and a
decision of a running workload; a figure; one line and exit 2 for what it cannot explain."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cli.conftest import run_cli


def _text(args: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    code, out, err = run_cli(["explain", *args], capsys)
    assert code == 0, err
    return " ".join(out.split())


def test_the_readme_state_by_default(capsys: pytest.CaptureFixture[str]) -> None:
    text = _text([], capsys)
    for step in ("1. MLPS order", "2. The window", "3. The violation check", "5. The plan"):
        assert step in text
    assert "T_cur = 2400.0 ms, set by a" in text
    assert "B* = 2000; greedy (eq. 3) would run 2000; the ternary search finds 1000" in text
    assert "no deferral" in text
    assert "path chunker" in text


def test_the_scene_with_its_knapsack_and_a_figure(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    figure = tmp_path / "scene.png"
    text = _text(["--example", "scene", "--figure", str(figure)], capsys)
    assert "at risk (0 < s_i < m·T̂_full): r1" in text
    assert "anchor r1: T_a = min(s_a, T_cur)/m = 30.0 ms, C_a = TimeToBudget(T_a) = 1060" in text
    assert "Y_a = {r1}" in text
    assert "path constructor" in text
    assert figure.read_bytes().startswith(b"\x89PNG")


def test_a_state_from_a_simulate_log(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    log = tmp_path / "plans.jsonl"
    args = ["simulate", "-p", "slidingserve", "-n", "12", "-r", "3", "--log", str(log)]
    code, _, err = run_cli([*args, "-o", str(tmp_path / "sim")], capsys)
    assert code == 0, err
    line = log.read_text().splitlines()[5]
    (tmp_path / "state.json").write_text(line)
    text = _text(["--state", str(tmp_path / "state.json")], capsys)
    assert "5. The plan" in text


def test_a_decision_of_a_running_workload(capsys: pytest.CaptureFixture[str]) -> None:
    text = _text(["--workload", "sharegpt", "--at", "5", "-r", "2"], capsys)
    assert "slidingserve at t = 5." in text


def test_a_running_decision_is_priced_as_the_policy_learned_it(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """slidingserve learns online by default: 60 s in, its margin is the learned one, not the
    packaged predictor's 1.071 that the reference without learning keeps."""
    run = ["--workload", "sharegpt", "--at", "60", "-r", "2"]
    learned = _text([*run, "-p", "slidingserve"], capsys)
    reference = _text([*run, "-p", "slidingserve[learn=false]"], capsys)
    assert "latency margin m = 1.071" in reference
    assert "latency margin m = " in learned
    assert "latency margin m = 1.071" not in learned


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["-p", "sarathi"], "is a baseline"),
        (["--example", "scene", "--at", "3"], "give one of"),
        (["--example", "nope"], "nope"),
    ],
)
def test_what_it_cannot_explain_is_one_line(
    args: list[str], says: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = run_cli(["explain", *args], capsys)
    assert code == 2
    assert says in err
    assert len(err.strip().splitlines()) == 1

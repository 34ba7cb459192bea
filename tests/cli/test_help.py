"""Every command's --help prints its source text as written: no bracket swallowed by rich
markup (`name[key=value,...]`, `'slidingpolicy[ray]'`, `[default: 1]`), no `<bool>` type on
a flag, no braces round an argument in the usage line; `policies` lists every option."""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable
from typing import Any, get_args

import pytest
import typer

from slidingpolicy.cli.app import app
from tests.cli.conftest import run_cli

COMMANDS = sorted(typer.main.get_command(app).commands)  # type: ignore[attr-defined]


def _collapsed(text: str) -> str:
    return " ".join(text.split())


def _source_texts(callback: Callable[..., Any]) -> list[str]:
    """The help texts as the source writes them: the docstring and every option's help."""
    texts = [inspect.getdoc(callback) or ""]
    for parameter in inspect.signature(callback, eval_str=True).parameters.values():
        for info in get_args(parameter.annotation)[1:]:
            if getattr(info, "help", None):
                texts.append(info.help)
    return texts


def _help(args: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    code, out, err = run_cli([*args, "--help"], capsys)
    assert code == 0, err
    return out


@pytest.fixture(autouse=True)
def _wide(monkeypatch: pytest.MonkeyPatch) -> None:
    """A terminal wide enough that no help line wraps."""
    monkeypatch.setenv("COLUMNS", "2000")
    monkeypatch.setenv("TERMINAL_WIDTH", "2000")


def test_the_commands_are_all_checked() -> None:
    assert {"demo", "simulate", "capacity", "sweep", "check", "policies"} <= set(COMMANDS)


@pytest.mark.parametrize("name", COMMANDS)
def test_every_help_text_prints_whole(name: str, capsys: pytest.CaptureFixture[str]) -> None:
    command = typer.main.get_command(app).commands[name]  # type: ignore[attr-defined]
    shown = _collapsed(re.sub(r"[│╭╮╰╯─]", " ", _help([name], capsys)))
    for text in _source_texts(command.callback):
        for bracket in re.findall(r"\[[^\]]*\]", text):
            assert bracket in shown, f"{name}: {bracket!r} is lost from its --help"
        for paragraph in text.split("\n\n"):
            assert _collapsed(paragraph) in shown, f"{name}: {paragraph!r} is not shown"


@pytest.mark.parametrize("name", ["", *COMMANDS])
def test_no_type_noise_and_plain_usage(name: str, capsys: pytest.CaptureFixture[str]) -> None:
    shown = _help([name] if name else [], capsys)
    assert "<bool>" not in shown
    usage = next(line for line in shown.splitlines() if "Usage:" in line)
    assert "{" not in usage
    assert "}" not in usage


def test_policies_lists_every_option_with_its_default_and_meaning(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from slidingpolicy.policies import names
    from slidingpolicy.policies.option_docs import online_options, policy_options

    code, out, _ = run_cli(["policies"], capsys)
    assert code == 0
    shown = _collapsed(out)
    for name in names():
        assert name in shown
        for option in policy_options(name):
            assert option.meaning
            assert f"{option.name}=" in shown
            assert _collapsed(option.meaning) in shown
    for option in online_options():
        assert f"{option.name}={option.default}" in shown
    assert "token_budget=8192" in shown
    assert "token_budget=512" in shown

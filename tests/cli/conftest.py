"""Shared helper of the CLI suites: run the console script in-process."""

from __future__ import annotations

import pytest

from slidingpolicy.cli import main


def run_cli(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    """`slidingpolicy ARGS`: its exit code, stdout and stderr."""
    with pytest.raises(SystemExit) as done:
        main(args)
    captured = capsys.readouterr()
    code = done.value.code
    return (code if isinstance(code, int) else 0), captured.out, captured.err

"""An engine's arms (its own schedulers by name, or policies with their options) and the
Python of its environment, checked before any server starts; `--launch` names an engine."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import attrs
import pytest

from slidingpolicy.errors import EngineError, PolicyLabelError, UnknownNameError
from slidingpolicy.replay.engines import Arm, engine_python, parse_arms
from slidingpolicy.replay.launch import ENGINES, engine_named
from slidingpolicy.replay.vllm_server import VLLM

TWO_NATIVES = ("native", "prefill_first")
"""The own schedulers of an engine with two (transformers')."""


def test_arms_parse_native_and_policies_with_options() -> None:
    arms = parse_arms("native, sarathi-edf[token_budget=256],slidingserve")
    assert [a.label for a in arms] == ["native", "sarathi-edf[token_budget=256]", "slidingserve"]
    assert arms[0] == Arm()
    assert arms[1].options == (("token_budget", 256),)


def test_each_of_an_engines_own_schedulers_is_an_arm() -> None:
    arms = parse_arms("prefill_first,native,sarathi-edf", TWO_NATIVES)
    assert [a.label for a in arms] == ["prefill_first", "native", "sarathi-edf"]
    assert arms[0] == Arm(native="prefill_first")
    assert [a.policy for a in arms] == [None, None, "sarathi-edf"]


@pytest.mark.parametrize(
    ("text", "natives", "error", "match"),
    [
        ("fcfs", ("native",), UnknownNameError, "native"),
        ("prefill_first", ("native",), UnknownNameError, "unknown arm 'prefill_first'"),
        ("fcfs", TWO_NATIVES, UnknownNameError, "prefill_first"),
        ("native,native", ("native",), PolicyLabelError, "twice"),
        ("prefill_first,prefill_first", TWO_NATIVES, PolicyLabelError, "twice"),
        ("", ("native",), PolicyLabelError, "at least one arm (native or a policy)"),
        ("", TWO_NATIVES, PolicyLabelError, "(native, prefill_first or a policy)"),
        ("sarathi-edf[nope=1]", ("native",), Exception, "nope"),
    ],
)
def test_bad_arms_are_named(
    text: str, natives: tuple[str, ...], error: type[Exception], match: str
) -> None:
    with pytest.raises(error, match=re.escape(match)):
        parse_arms(text, natives)


def test_the_engine_python_must_be_given(tmp_path: Path) -> None:
    with pytest.raises(EngineError, match="pass --vllm-python PATH or set SLIDINGPOLICY_VLLM_P"):
        engine_python(None, VLLM)
    plain = tmp_path / "python"
    plain.write_text("")
    with pytest.raises(
        EngineError, match=re.escape(f"--vllm-python {plain}: not an executable file")
    ):
        engine_python(plain, VLLM)


def test_the_engine_python_must_find_the_adapter() -> None:
    python = Path(sys.executable)
    lacking = attrs.evolve(VLLM, package="no_such_adapter_here")
    with pytest.raises(EngineError, match="cannot import no_such_adapter_here; install vLLM"):
        engine_python(python, lacking)
    holding = attrs.evolve(VLLM, package="slidingpolicy")
    assert engine_python(python, holding) == python


def test_launch_names_vllm_or_transformers() -> None:
    assert list(ENGINES) == ["vllm", "transformers"]
    assert engine_named("transformers").natives == TWO_NATIVES
    with pytest.raises(EngineError, match="'sglang': the engines it can launch are 'vllm' or 't"):
        engine_named("sglang")

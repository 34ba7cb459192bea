"""Policy labels, ``name[key=value,...]``: what the command line reads and results print."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from slidingpolicy.errors import PolicyLabelError
from slidingpolicy.policies.labels import label, parse_label, split_labels

keys = st.from_regex(r"[a-z_]{1,12}", fullmatch=True)
values = st.one_of(
    st.integers(-(10**6), 10**6),
    st.floats(-1e6, 1e6, allow_nan=False),
    st.booleans(),
    st.none(),
    st.from_regex(r"[a-z][a-z-]{0,10}", fullmatch=True).filter(
        lambda v: v not in ("true", "false", "null")
    ),
)
names = st.from_regex(r"[a-z][a-z0-9.+-]{0,20}", fullmatch=True)


@given(names, st.dictionaries(keys, values, max_size=4))
def test_a_label_reads_back_as_its_name_and_options(name: str, options: dict[str, Any]) -> None:
    text = label(name, tuple(options.items()))
    assert parse_label(text) == (name, tuple(options.items()))
    assert split_labels(f"{text}, {text}") == [text, text]


def test_the_examples_of_the_help() -> None:
    assert parse_label("sarathi-edf[token_budget=768]") == ("sarathi-edf", (("token_budget", 768),))
    assert parse_label(" slidingserve[level_order=deadline, window=1] ") == (
        "slidingserve",
        (("level_order", "deadline"), ("window", 1)),
    )
    assert split_labels("qoserve[kappa=0,relegate=false],vllm") == [
        "qoserve[kappa=0,relegate=false]",
        "vllm",
    ]
    assert label("vllm") == "vllm"


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("", "expected name"),
        ("[kappa=0]", "expected name"),
        ("qoserve[kappa=0", "expected name"),
        ("qoserve]", "expected name"),
        ("qoserve[kappa]", "'kappa' is not key=value"),
        ("qoserve[=1]", "is not key=value"),
        ("qoserve[kappa=]", "is not key=value"),
        ("qoserve[kappa=0,kappa=1]", "'kappa' is given twice"),
    ],
)
def test_a_malformed_label_names_what_is_wrong(text: str, needle: str) -> None:
    with pytest.raises(PolicyLabelError, match=needle):
        parse_label(text)

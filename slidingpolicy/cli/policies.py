"""`slidingpolicy policies`: the registered policies, their options with defaults, and what
each option means."""

from __future__ import annotations

import json
from typing import Any

from rich.markup import escape
from rich.table import Table

from slidingpolicy.cli.output import console
from slidingpolicy.cli.plugins import PluginOpt, load_plugins


def option_value(value: Any) -> str:
    """An option's default as a label's `name[key=value]` takes it (JSON, strings bare)."""
    if isinstance(value, str):
        return value
    return json.dumps(list(value) if isinstance(value, tuple) else value)


def policies(plugin: PluginOpt = None) -> None:
    """List the registered policies, yours with ours: a line on each, its options with their
    defaults, and what each option means. Give options as --policy 'name[key=value,...]'."""
    from slidingpolicy.policies import names, summary

    load_plugins(plugin)
    from slidingpolicy.policies.option_docs import OptionDoc, online_options, policy_options

    table = Table(box=None, pad_edge=False, show_edge=False)
    table.add_column("policy", no_wrap=True, style="bold")
    table.add_column("what it is")
    table.add_column("options (default)")
    meanings: dict[str, OptionDoc] = {}
    for name in names():
        options = policy_options(name)
        meanings.update({o.name: o for o in options if o.name not in meanings})
        shown = ", ".join(f"{o.name}={option_value(o.default)}" for o in options)
        table.add_row(escape(name), escape(summary(name)), escape(shown), end_section=True)
    console.print(table)
    console.print()
    described = Table(title="what each option means", box=None, pad_edge=False)
    described.add_column("option", no_wrap=True, style="bold")
    described.add_column("meaning")
    for option in meanings.values():
        described.add_row(option.name, escape(option.meaning))
    console.print(described)
    console.print()
    learning = Table(
        title="every policy also takes, to tune how it learns its predictor and margin online "
        "(learn=true, the default of SlidingServe's configurations)",
        box=None,
        pad_edge=False,
    )
    learning.add_column("option (default)", no_wrap=True, style="bold")
    learning.add_column("meaning")
    for option in online_options():
        learning.add_row(f"{option.name}={option_value(option.default)}", escape(option.meaning))
    console.print(learning)
    console.print(
        "e.g. --policy 'sarathi-edf[token_budget=768],slidingserve[window=3]'; "
        "slidingserve+[learn=false] is the reference without learning",
        markup=False,
    )

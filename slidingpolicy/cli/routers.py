"""`slidingpolicy routers`: the registered routers of a cluster (`--router`), their options
with defaults, and what each option means."""

from __future__ import annotations

from rich.markup import escape
from rich.table import Table

from slidingpolicy.cli.output import console
from slidingpolicy.cli.plugins import PluginOpt, load_plugins
from slidingpolicy.cli.policies import option_value


def routers(plugin: PluginOpt = None) -> None:
    """List the routers --router takes (on simulate, sweep and capacity with --replicas): a
    line on each, its options with their defaults, and what each option means. Give options
    as --router 'name[key=value,...]'."""
    from slidingpolicy.routing import names, options_of, summary

    load_plugins(plugin)
    table = Table(box=None, pad_edge=False, show_edge=False)
    table.add_column("router", no_wrap=True, style="bold")
    table.add_column("what it is")
    table.add_column("options (default)")
    meanings: dict[str, str] = {}
    for name in names():
        options = options_of(name)
        meanings.update({o.name: o.meaning for o in options if o.name not in meanings})
        shown = ", ".join(f"{o.name}={option_value(o.default)}" for o in options) or "none"
        table.add_row(escape(name), escape(summary(name)), escape(shown), end_section=True)
    console.print(table)
    if meanings:
        console.print()
        described = Table(title="what each option means", box=None, pad_edge=False)
        described.add_column("option", no_wrap=True, style="bold")
        described.add_column("meaning")
        for option, meaning in meanings.items():
            described.add_row(option, escape(meaning))
        console.print(described)
    console.print(
        "e.g. --replicas 4 --router 'slo-aware[notice=true]' --report-period 10; "
        "--router all compares every router on sweep and capacity",
        markup=False,
    )

"""`--plugin`: the modules or Python files that register policies of your own, loaded before
a command looks up the policies it is given (docs/own-policy.md)."""

from __future__ import annotations

from typing import Annotated

import typer

PluginOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--plugin",
        help="A module (my_package.policies) or Python file (my_policy.py) whose import "
        "registers a policy of your own with slidingpolicy.register; repeat for more. An "
        "installed package's entry point needs none.",
    ),
]


def load_plugins(plugins: list[str] | None) -> tuple[str, ...]:
    """Load `plugins` here, and return them as another process names them (a file by its
    absolute path), for the engines a command launches."""
    from slidingpolicy.policies.plugin_loader import load_plugins as load
    from slidingpolicy.policies.plugin_loader import plugin_key

    chosen = tuple(plugin_key(plugin) for plugin in plugins or ())
    load(chosen)
    return chosen

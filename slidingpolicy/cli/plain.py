"""Help that reads as written: the command classes every command of the app is built with.

Typer renders help with rich, whose markup takes `[...]` for a style tag and drops it
(`name[key=value,...]` would print as `name`, `'slidingpolicy[ray]'` as `'slidingpolicy'`).
These classes escape every help text once, where the command is built, and keep the
rest of the rendering quiet: no `<bool>` type on `--help`, and the usage line names an
argument by its metavar (`LOG`, not `{LOG}`).
"""

from __future__ import annotations

import re
from typing import Any

from rich.markup import escape
from typer.core import TyperCommand, TyperGroup


def _escape(text: str | None) -> str | None:
    return None if text is None else escape(text)


def _plain(command: Any) -> None:
    """Escape the help of `command` and of each of its parameters, in place."""
    command.help = _escape(command.help)
    command.short_help = _escape(command.short_help)
    for param in command.params:
        if getattr(param, "help", None):
            param.help = escape(param.help)


def _quiet_help_option(option: Any) -> Any:
    """The `--help` option with no type shown (a flag takes no value)."""
    if option is not None:
        option.metavar = " "
    return option


def _usage(pieces: list[str]) -> list[str]:
    """Usage pieces with an argument's braces dropped: `{LOG}` → `LOG`, `{DIR}...` → `DIR...`."""
    return [re.sub(r"^\{([^{}]*)\}(\.\.\.)?$", r"\1\2", p) for p in pieces]


class PlainCommand(TyperCommand):
    """A command whose help texts print as written."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        _plain(self)

    def get_help_option(self, ctx: Any) -> Any:
        """Click's `--help`, without a type."""
        return _quiet_help_option(super().get_help_option(ctx))

    def collect_usage_pieces(self, ctx: Any) -> list[str]:
        """[OPTIONS] and the arguments by their metavars."""
        return _usage(super().collect_usage_pieces(ctx))


class PlainGroup(TyperGroup):
    """The app: its help prints as written, and its commands are `PlainCommand`s."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        _plain(self)

    def get_help_option(self, ctx: Any) -> Any:
        """Click's `--help`, without a type."""
        return _quiet_help_option(super().get_help_option(ctx))

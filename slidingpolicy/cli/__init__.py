"""The `slidingpolicy` command line (typer); `main` is the console script's entry point."""

from __future__ import annotations

from slidingpolicy.cli.app import app, main

__all__ = ["app", "main"]

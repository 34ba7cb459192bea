"""Plugins: modules whose import registers policies of your own (`registry.register`), named
where a process is configured (``--plugin`` on the command line, `AdapterConfig.plugins` in an
engine adapter), so that a policy registered in one process is found by name in another.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import sys
from collections.abc import Iterable
from pathlib import Path

from slidingpolicy.errors import InvalidRecordError

_LOADED: set[str] = set()
"""The plugins this process has loaded (a module's name, a file's resolved path)."""


def plugin_key(plugin: str) -> str:
    """How a plugin is named in another process: a Python file (ends in .py) by its absolute
    path, a module by its name."""
    return str(Path(plugin).resolve()) if plugin.endswith(".py") else plugin


def load_plugins(plugins: Iterable[str]) -> None:
    """Import each plugin once per process: a module's name (``my_package.policies``, imported
    from `sys.path`) or the path of a Python file (``examples/my_policy.py``). InvalidRecordError
    naming the plugin when it cannot be imported."""
    for plugin in plugins:
        if not isinstance(plugin, str) or not plugin:
            raise InvalidRecordError(
                "plugin", "name", f"must be a module or a .py file: {plugin!r}"
            )
        key = plugin_key(plugin)
        if key in _LOADED:
            continue
        try:
            _import(key)
        except Exception as error:
            raise InvalidRecordError(f"plugin {plugin!r}", "import", f"failed: {error}") from error
        _LOADED.add(key)


def _import(key: str) -> None:
    """Import the module `key` names, or run the file at path `key` as a module."""
    if not key.endswith(".py"):
        importlib.import_module(key)
        return
    path = Path(key)
    if not path.is_file():
        raise FileNotFoundError(f"no such file {key}")
    name = f"_slidingpolicy_plugin_{hashlib.sha256(key.encode()).hexdigest()[:16]}"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"{key} is not a Python module")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[name]
        raise

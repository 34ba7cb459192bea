"""The README's Python example runs as written."""

from __future__ import annotations

import re
from pathlib import Path


def test_readme_example_runs() -> None:
    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text()
    blocks = re.findall(r"```python\n(.*?)```", readme, re.S)
    assert blocks, "the README has a Python example"
    for block in blocks:
        exec(compile(block, "README.md", "exec"), {})

"""Write the two tables of docs/bad-input.md from the bad-input tests' own cases: each case of
`tests/cli/test_bad_inputs.py` run through the command line, each of
`tests/test_bad_library_inputs.py` called, and the message each gives, as it gives it.

Usage: python scripts/bad_input_tables.py   (rewrites the tables between their markers; the
tests check that every case is in the page with its message, `test_the_docs_list_every_case`.)
"""

from __future__ import annotations

import contextlib
import io
import re
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from slidingpolicy.cli import main as cli  # noqa: E402
from slidingpolicy.errors import SlidingPolicyError  # noqa: E402
from tests.bad_input_docs import own_registry  # noqa: E402
from tests.cli.test_bad_inputs import CASES as CLI_CASES  # noqa: E402
from tests.test_bad_library_inputs import CASES as LIBRARY_CASES  # noqa: E402

PAGE = ROOT / "docs" / "bad-input.md"
MARKERS = {"cli": "command line", "library": "library"}


def cell(text: str) -> str:
    """`text` as one cell of a Markdown table."""
    return " ".join(text.split()).replace("|", "\\|")


def code(text: str) -> str:
    """`text` as a code span in one cell of a Markdown table (messages hold backticks and
    brackets; a pipe inside a code span does not split the cell)."""
    return f"`` {' '.join(text.split())} ``"


def cli_rows(folder: Path) -> list[str]:
    """| case | command | message | for each command-line case."""
    rows = []
    for case in CLI_CASES:
        file, directory = folder / case.file, folder / "folder"
        file.unlink(missing_ok=True)
        directory.mkdir(exist_ok=True)
        if case.content is not None:
            file.write_bytes(case.content)
        args = [a.replace("{file}", str(file)).replace("{dir}", str(directory)) for a in case.args]
        err = io.StringIO()
        with (
            contextlib.redirect_stderr(err),
            contextlib.redirect_stdout(io.StringIO()),
            contextlib.suppress(SystemExit),
            own_registry(),
        ):
            cli(args)
        message = err.getvalue().strip().replace(str(file), "FILE")
        message = message.replace(str(directory), "DIR")
        command = " ".join(["slidingpolicy", *case.args]).replace("{file}", "FILE")
        command = command.replace("{dir}", "DIR")
        rows.append(f"| {cell(case.name)} | {code(command)} | {code(message)} |")
    return rows


def library_rows(folder: Path) -> list[str]:
    """| case | message | for each library case."""
    rows = []
    for case in LIBRARY_CASES:
        path = folder / "input"
        path.unlink(missing_ok=True)
        if case.content is not None:
            path.write_bytes(case.content)
        try:
            case.call(path)
            message = "(no error: the test fails)"
        except SlidingPolicyError as error:
            message = f"{type(error).__name__}: {error}".replace(f"{folder}/", "")
        rows.append(f"| {cell(case.name)} | {code(message)} |")
    return rows


def replace(text: str, marker: str, rows: list[str], header: str) -> str:
    """`text` with the table between `<!-- marker -->` and `<!-- /marker -->` replaced."""
    pattern = re.compile(rf"(<!-- {marker} -->\n).*?(<!-- /{marker} -->)", re.S)
    table = "\n".join([header, *rows]) + "\n"
    return pattern.sub(lambda m: m.group(1) + table + m.group(2), text)


def main() -> None:
    with tempfile.TemporaryDirectory() as temporary:
        folder = Path(temporary)
        text = PAGE.read_text()
        text = replace(
            text,
            "cli",
            cli_rows(folder),
            "| case | command | message (stderr; exit code 2) |\n|---|---|---|",
        )
        text = replace(text, "library", library_rows(folder), "| case | error raised |\n|---|---|")
    PAGE.write_text(text)
    print(f"{PAGE}: {len(CLI_CASES)} command-line and {len(LIBRARY_CASES)} library cases")


if __name__ == "__main__":
    main()

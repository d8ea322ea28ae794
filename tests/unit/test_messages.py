"""The library speaks of parameters: no message it raises (or hint it gives) names a command-line flag.
Parameters are named with `errors.param(...)`, which the CLI renders as the flag the user typed and the
library as the Python name, so a notebook user is never told to pass `--accountant`."""

from __future__ import annotations

import ast
import re
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "pillar_cli"
FLAG = re.compile(r"(?<![\w-])--[a-z][a-z-]*")


def _text(node: ast.AST) -> str:
    """The literal text of a string expression (f-string parts joined, interpolations left out)."""
    return "".join(
        part.value
        for part in ast.walk(node)
        if isinstance(part, ast.Constant) and isinstance(part.value, str)
    )


def library_messages() -> list[tuple[str, int, str]]:
    """(file, line, text) of every message and hint raised outside cli/: a PillarError's arguments."""
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if "cli" in path.relative_to(PACKAGE).parts[:1]:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Raise) and isinstance(node.exc, ast.Call):
                for argument in [*node.exc.args, *(keyword.value for keyword in node.exc.keywords)]:
                    found.append((str(path.relative_to(PACKAGE)), node.lineno, _text(argument)))
    return found


def test_no_library_message_names_a_flag():
    messages = library_messages()
    assert len(messages) > 300  # the scan reads the library's raises, not nothing
    assert [(file, line, FLAG.findall(text)) for file, line, text in messages if FLAG.search(text)] == []

"""What README.md and docs/ say that can be checked mechanically, checked against the CLI and the schemas:
every `pillar` command line shown uses a command and flags that exist, both artifact tables list every kind,
the model row names every run column, and the claims about --json, --config and `make test-fast` hold."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import click
import pytest

from pillar_cli.artifacts import KINDS
from pillar_cli.artifacts.schema import RUN_COLUMNS
from pillar_cli.cli import COMMANDS, command_of, runnable_commands

ROOT = Path(__file__).resolve().parents[2]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def flags(command: click.Command) -> set[str]:
    params = command.params
    return {name for param in params for name in (*param.opts, *param.secondary_opts)} | {"--help"}


def shown_command_lines(text: str) -> list[str]:
    """`pillar …` lines of the fenced code blocks, continuation lines joined and comments dropped."""
    lines = []
    for block in re.findall(r"```(?:bash|sh|console)?\n(.*?)```", text, re.S):
        for line in block.replace("\\\n", " ").splitlines():
            line = line.split(" #")[0].strip()
            if line.startswith("pillar "):
                lines.append(line)
    return lines


@pytest.mark.parametrize("doc", DOCS, ids=lambda path: path.name)
def test_every_command_line_shown_uses_commands_and_flags_that_exist(doc):
    wrong = []
    for line in shown_command_lines(doc.read_text()):
        words = shlex.split(line)
        if len(words) < 2 or words[1].startswith("-"):
            continue
        if words[1] not in COMMANDS:
            wrong.append(f"{line}: no command {words[1]}")
            continue
        named, rest = command_of(words[1:])
        unknown = [
            word.split("=")[0]
            for word in rest
            if word.startswith("--") and word.split("=")[0] not in flags(named)
        ]
        wrong += [f"{line}: {words[1]} has no {flag}" for flag in unknown]
    assert wrong == []


def table_kinds(text: str) -> dict[str, str]:
    """The first two columns of the artifact table: kind → 'written by'."""
    rows = re.findall(r"^\| ([a-z-]+) \| ([^|]+) \|", text, re.M)
    return {kind: written_by for kind, written_by in rows if kind in KINDS}


def test_the_artifact_table_lists_every_kind_and_real_writers():
    """docs/cli.md holds the one table (the README links it)."""
    assert "[docs/cli.md](docs/cli.md#artifacts)" in (ROOT / "README.md").read_text()
    table = table_kinds((ROOT / "docs/cli.md").read_text())
    assert sorted(table) == sorted(KINDS)
    writers = {name for written_by in table.values() for name in re.findall(r"`([a-z-]+)", written_by)}
    assert writers <= set(COMMANDS)
    assert {"train-private", "pretrain", "finetune"} <= set(re.findall(r"`([a-z-]+)", table["model"]))


def test_the_model_row_names_every_run_column():
    model_row = next(
        line for line in (ROOT / "docs/cli.md").read_text().splitlines() if line.startswith("| model |")
    )
    columns = re.search(r"`/runs/\{([^}]*)\}`", model_row).group(1).split(",")
    assert sorted(columns) == sorted(RUN_COLUMNS)


def test_json_and_config_are_where_the_readme_says():
    assert (
        "all but `run` take `--json` (one document on stdout) and `--config FILE.yaml`"
        in (ROOT / "README.md").read_text()
    )
    for name, command in runnable_commands().items():
        has = {"--json", "--config"} & flags(command)
        assert has == (set() if name == "run" else {"--json", "--config"}), name


def test_make_test_fast_is_what_the_readme_says():
    assert "(make test-fast: without the tests marked slow)" in (ROOT / "README.md").read_text()
    recipe = re.search(r"^test-fast:.*\n\t(.*)$", (ROOT / "Makefile").read_text(), re.M).group(1)
    assert recipe.endswith('-m pytest -m "not slow"')

"""Every command's --help at 80 columns: no line wider than the terminal, every flag written out whole, every
option under a named panel, and every `Example:` a command line whose command and flags exist (copied at 60
columns, where the long ones are continued with backslashes)."""

from __future__ import annotations

import shlex

import pytest
from typer.testing import CliRunner

from pillar_cli.cli import app, command_of, runnable_commands
from pillar_cli.cli.help import PANEL_ORDER, panel_of, shell_lines

RUNNER = CliRunner()


def help_text(command: str, columns: int = 80) -> str:
    result = RUNNER.invoke(app, [*command.split(), "--help"], env={"COLUMNS": str(columns)})
    assert result.exit_code == 0, result.output
    return result.output


def examples(text: str) -> list[str]:
    """The `Example:` commands of a help text, continuation lines joined."""
    joined = text.replace(" \\\n", " ")
    return [
        " ".join(line.split("Example:", 1)[1].split()) for line in joined.splitlines() if "Example:" in line
    ]


@pytest.mark.parametrize("command", list(runnable_commands()))
def test_help_fits_80_columns_and_writes_every_flag_whole(command):
    text = help_text(command)
    assert max(len(line) for line in text.splitlines()) <= 80
    assert "…" not in text
    words = set(text.replace("/", " ").replace(",", " ").split())
    flags = {
        flag
        for param in runnable_commands()[command].params
        if param.param_type_name == "option" and not param.hidden
        for flag in (*param.opts, *param.secondary_opts)
    }
    assert flags - words == set()


@pytest.mark.parametrize("command", list(runnable_commands()))
def test_every_option_is_listed_under_a_named_panel(command):
    params = runnable_commands()[command].params
    assert [p.name for p in params if panel_of(p) not in PANEL_ORDER] == []
    text = help_text(command)
    shown = [line[:-1] for line in text.splitlines() if line.endswith(":") and not line.startswith(" ")]
    assert shown == sorted(shown, key=PANEL_ORDER.index)
    assert "Output" in shown


@pytest.mark.parametrize("command", list(runnable_commands()))
def test_every_example_names_a_command_and_flags_that_exist(command):
    shown = examples(help_text(command, columns=60))
    assert shown, command
    for line in shown:
        words = shlex.split(line)
        assert words[0] == "pillar", line
        named, _ = command_of(words[1:])
        flags = {name for param in named.params for name in (*param.opts, *param.secondary_opts)}
        assert [w for w in words if w.startswith("-") and w.split("=")[0] not in flags] == [], line


def test_a_long_example_is_broken_at_spaces_with_backslashes():
    lines = shell_lines(
        "Example: pillar train-private emb.h5 -p pca.h5 --k 5,10,40,full --eps 0.1,1,inf -o m.h5", width=40
    ).splitlines()
    assert lines[0] == "\b"
    assert all(len(line) <= 40 for line in lines[1:])
    assert all(line.endswith(" \\") for line in lines[1:-1]) and lines[2].startswith("    ")
    assert " ".join(" ".join(lines[1:]).replace(" \\", "").split()) == (
        "Example: pillar train-private emb.h5 -p pca.h5 --k 5,10,40,full --eps 0.1,1,inf -o m.h5"
    )

"""The command line starts without the heavy libraries: `import pillar_cli.cli`, `pillar --help` and every
`pillar <command> --help` import none of torch, scikit-learn, timm, opacus or scipy, and `inspect` (reading an
artifact) none either; the top-level help lists every command with its summary, and each command loads as the
summary says."""

from __future__ import annotations

import json
import subprocess
import sys

from pillar_cli.cli import COMMANDS, load_command, runnable_commands

HEAVY = ("torch", "sklearn", "timm", "opacus", "scipy")


def imported_after(code: str) -> list[str]:
    probe = f"{code}\nimport json, sys\nprint(json.dumps([m for m in {HEAVY!r} if m in sys.modules]))"
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    return json.loads(result.stdout.splitlines()[-1])


def test_the_cli_package_and_the_top_level_help_import_no_heavy_library():
    assert imported_after("import pillar_cli, pillar_cli.cli") == []
    help_then_probe = (
        "from typer.testing import CliRunner\nfrom pillar_cli.cli import app\n"
        "assert CliRunner().invoke(app, ['--help']).exit_code == 0"
    )
    assert imported_after(help_then_probe) == []


def test_every_commands_help_imports_no_heavy_library():
    commands = list(runnable_commands())
    each_help = (
        f"from typer.testing import CliRunner\nfrom pillar_cli.cli import app\nfor name in {commands!r}:\n"
        "    result = CliRunner().invoke(app, [*name.split(), '--help'])\n"
        "    assert result.exit_code == 0 and 'Example:' in result.output, (name, result.output)"
    )
    assert imported_after(each_help) == []


def test_inspect_imports_no_heavy_library():
    assert imported_after("from pillar_cli.cli import load_command\nload_command('inspect')") == []


def test_every_command_loads_under_its_name_with_its_summary():
    for name, (_, _, summary) in COMMANDS.items():
        command = load_command(name)
        assert (command.name, command.short_help) == (name, summary)
        assert command.help.split("\n\n")[0].strip()  # its own docstring is its --help


def test_an_interrupt_while_the_command_line_loads_is_one_line_and_exit_130():
    """Ctrl-C during the start-up imports (here: the first import of the command line raises it)."""
    interrupted = (
        "import builtins\nreal = builtins.__import__\n"
        "def interrupting(name, *args, **kwargs):\n"
        "    if name == 'pillar_cli.cli':\n        raise KeyboardInterrupt\n"
        "    return real(name, *args, **kwargs)\n"
        "builtins.__import__ = interrupting\nfrom pillar_cli.__main__ import main\nmain()"
    )
    result = subprocess.run([sys.executable, "-c", interrupted], capture_output=True, text=True)
    assert (result.returncode, result.stderr, result.stdout) == (
        130,
        "error: interrupted while starting; nothing was done\n",
        "",
    )

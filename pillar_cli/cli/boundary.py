"""Where failures become what the user sees: one line on stderr (plus a hint), an exit code, never a
traceback.

A PillarError from the library is shown with its parameters spelt as this command's flags; a refused file
operation (a name too long, a full disk) as the system's words; a usage error found by the option parser (an
unknown flag, a missing argument, a bad --config key) as one line pointing at --help, instead of click's
framed box.
"""

from __future__ import annotations

import functools
import json
import math
import os
import sys
import threading
from collections.abc import Callable
from typing import Any

import typer
from typer.core import TyperGroup

from pillar_cli.artifacts.outputs import one_command
from pillar_cli.errors import PillarError, UsageError, param

# Library parameters whose flag is not --<name with dashes>.
FLAG_NAMES = {"epsilon": "--eps", "params": "--param"}


def flag_name(name: str, value: str | None, overrides: dict[str, str]) -> str:
    """The flag a user types for a library parameter (`k_max` → --k-max; `pretrained=False` →
    --no-pretrained)."""
    flag = overrides.get(name) or FLAG_NAMES.get(name) or "--" + name.replace("_", "-")
    return flag.replace("--", "--no-", 1) if value == "False" else flag


class _JsonOutput:
    """Whether the running command has already printed its JSON document (then an error adds none: stdout
    holds one document whatever happens)."""

    written = False


JSON_OUTPUT = _JsonOutput()


# Ctrl-C or SIGTERM arrived during the running command, even where Python dropped it
INTERRUPTED = threading.Event()
_FINISHING: list[bool] = []  # per running command, innermost last: its outputs are final, a signal only noted


def interrupt(signum: int, frame: object) -> None:
    """SIGINT and SIGTERM (a scheduler's kill, a timeout): remember the signal, then unwind as Ctrl-C does,
    unless the running command has finished (its outputs are in place and final: it exits 0). Raised where
    Python cannot propagate it (a finaliser, a lock released by a worker) it is printed as "Exception
    ignored" and dropped; the flag stays, the next progress step raises it again (`check_interrupted`), and a
    command that finishes anyway is undone and exits 130."""
    INTERRUPTED.set()
    if not (_FINISHING and _FINISHING[-1]):
        raise KeyboardInterrupt


def check_interrupted() -> None:
    """Raise the interrupt a signal left behind, if any (called at every progress step)."""
    if INTERRUPTED.is_set():
        raise KeyboardInterrupt


def cli_errors(command: Callable | None = None, *, flags: dict[str, str] | None = None) -> Callable:
    """Turn a PillarError into one line on stderr (plus a hint) and its exit code, Ctrl-C into exit 130;
    PILLAR_DEBUG=1 shows tracebacks. Parameters in messages are shown as this command's flags (`flags` maps
    the library names a command spells differently, e.g. gsd's epsilon → --dp-eps)."""

    def decorate(command: Callable) -> Callable:
        @functools.wraps(command)
        def run(*args: Any, **kwargs: Any) -> Any:
            JSON_OUTPUT.written = False
            INTERRUPTED.clear()
            _FINISHING.append(False)
            try:
                with one_command():  # an output put in place is taken back if the command does not finish
                    for name, value in kwargs.items():
                        _check_number(name, value)
                    try:
                        result = command(*args, **kwargs)
                    except BrokenPipeError:  # the reader of its output stopped reading (| head): a normal end
                        result = _stdout_closed()
                    _FINISHING[-1] = True  # from here a signal is only noted
                    if INTERRUPTED.is_set():  # dropped where it arrived: the command is undone all the same
                        raise KeyboardInterrupt
            except PillarError as err:
                if os.environ.get("PILLAR_DEBUG"):
                    raise
                message, hint = err.render(lambda name, value: flag_name(name, value, flags or {}))
                _report(message, hint, err.exit_code, kwargs.get("as_json"))
                if err.exit_now:
                    sys.stdout.flush(), sys.stderr.flush()
                    os._exit(err.exit_code)
                raise typer.Exit(err.exit_code) from None
            except OSError as err:  # the system refused a file operation (a name too long, a full disk)
                if os.environ.get("PILLAR_DEBUG"):
                    raise
                where = f"{err.filename}: " if err.filename else ""
                _report(f"{where}{err.strerror or err}", None, 3, kwargs.get("as_json"))
                raise typer.Exit(3) from None
            except KeyboardInterrupt:
                print(
                    "error: interrupted; no artifact was written (existing files are unchanged)",
                    file=sys.stderr,
                )
                raise typer.Exit(130) from None
            finally:
                _FINISHING.pop()
            return result

        return run

    return decorate(command) if command is not None else decorate


def _stdout_closed() -> None:
    """Standard output pointed at /dev/null, so that nothing the command printed (its last buffer, flushed at
    exit) raises again; the command's outputs stand."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)


def _report(message: str, hint: str | None, code: int, as_json: bool | None) -> None:
    """The error on stderr as one line (and a hint); with --json also one JSON document on stdout, unless the
    command printed its own before failing, so that a script reading stdout always gets exactly one."""
    print(f"error: {message}" + (f"\nhint: {hint}" if hint else ""), file=sys.stderr)
    if as_json and not JSON_OUTPUT.written:
        try:
            print(json.dumps({"error": message, "hint": hint, "exit_code": code}, ensure_ascii=False))
            sys.stdout.flush()
        except (OSError, ValueError, AttributeError):  # stdout full, closed or gone: the line above said it
            sys.stdout = open(os.devnull, "w")  # noqa: SIM115  # nothing left for the exit to flush
    elif sys.stdout is not None:
        try:
            sys.stdout.flush()  # what the command printed before failing, flushed while the error is caught
        except (OSError, ValueError):
            sys.stdout = open(os.devnull, "w")  # noqa: SIM115


INT64_MAX = 2**63 - 1  # integers are stored as int64 (seeds, steps, sizes)


def _check_number(name: str, value: Any) -> None:
    """No float option takes NaN or an infinity; no integer option exceeds what an artifact can store."""
    if isinstance(value, float) and not math.isfinite(value):
        raise UsageError(f"{param(name)} must be a finite number (got {value})")
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) > INT64_MAX:
        raise UsageError(f"{param(name)} must be below 2**63 (got {value})")


# click's base error, from typer's own classes: typer ≥ 0.29 carries its own copy of click
ClickError = next(kind for kind in typer.BadParameter.__mro__ if kind.__name__ == "ClickException")


class OneLineUsageErrors(TyperGroup):
    """The command group whose parser errors print as `error: …` and `hint: see pillar CMD --help`, exit 2."""

    def main(self, *args: Any, standalone_mode: bool = True, **kwargs: Any) -> Any:
        if not standalone_mode:
            return super().main(*args, standalone_mode=False, **kwargs)
        try:  # typer returns the code of a typer.Exit when not standalone; a command returns None
            code = super().main(*args, standalone_mode=False, **kwargs)
        except ClickError as err:
            if type(err).__name__ == "NoArgsIsHelpError":  # `pillar` alone: the help, as click shows it
                err.show()
                sys.exit(err.exit_code)
            ctx = getattr(err, "ctx", None)
            words = kwargs.get("args") or (args[0] if args else None) or sys.argv[1:]
            _report(
                err.format_message(),
                f"see {ctx.command_path} --help" if ctx is not None else None,
                err.exit_code,
                "--json" in words,
            )  # a parser error is one JSON document too under --json
            code = err.exit_code
        except typer.Abort:
            print("error: aborted", file=sys.stderr)
            code = 1
        sys.exit(code if isinstance(code, int) else 0)

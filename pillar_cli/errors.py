"""The one error type of pillar.

Library code raises a PillarError subclass with a one-line message (what went wrong, which file or parameter)
and an optional hint (how to fix it). Parameters are named with `param(...)`: the library shows the Python
name (`k_max`), the CLI the flag the user typed (`--k-max`). The CLI boundary turns the error into a single
line on stderr and the subclass's exit code; nothing else in the package decides how a failure looks to the
user.

May import: nothing.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable

_MARK = re.compile(r"⟦(\w+)(?:=(\w+))?⟧")


def param(name: str, value: bool | None = None) -> str:
    """A parameter inside an error message or hint, e.g. f"{param('k_max')} must be positive"; with a boolean
    `value`, the setting (`resume=True`, shown by the CLI as --resume, or --no-pretrained for False)."""
    return f"⟦{name}⟧" if value is None else f"⟦{name}={value}⟧"


def python_names(name: str, value: str | None) -> str:
    return name if value is None else f"{name}={value}"


class PillarError(Exception):
    """A failure the user can act on; never shown with a traceback."""

    exit_code = 1
    exit_now = False  # True: the process must end without running exit handlers (LibraryStateError)

    def __init__(self, message: str, hint: str | None = None):
        super().__init__(message)
        self.message = message
        self.hint = hint

    def render(self, name: Callable[[str, str | None], str] = python_names) -> tuple[str, str | None]:
        """(message, hint) with every parameter shown by `name(parameter, value or None)`."""

        def substitute(text: str) -> str:
            return _MARK.sub(lambda match: name(match.group(1), match.group(2)), text)

        return substitute(self.message), None if self.hint is None else substitute(self.hint)

    def __str__(self) -> str:
        return self.render()[0]


class UsageError(PillarError, ValueError):
    """An option value that cannot work (k > d, ε ≤ 0, unknown name); a ValueError, as Python code expects."""

    exit_code = 2


class ArtifactError(PillarError):
    """A missing, corrupt, wrong-kind or mismatched artifact file."""

    exit_code = 3


class LibraryStateError(ArtifactError):
    """A file write that failed inside libhdf5 (a full disk): the library's state is broken and its exit
    handler would crash the interpreter, so the CLI exits at once after the line (`exit_now`)."""

    exit_now = True


class MissingSplitError(ArtifactError):
    """An embeddings artifact without the split that was asked for."""


class DataError(PillarError, ValueError):
    """Input data that cannot be used (NaN features, empty or single-class split, unreadable source); a
    ValueError, as scikit-learn's conventions expect of bad input."""

    exit_code = 4


class PrivacyError(PillarError):
    """A request that would break a privacy rule or cannot be met by the accountant."""

    exit_code = 5


class Interrupted(PillarError):
    """Ctrl-C: reported as one line, exit 130 (128 + SIGINT)."""

    exit_code = 130


def first_line(err: BaseException) -> str:
    """The first line of a library's error message (its class name when it has none), for a one-line error."""
    text = str(err).strip().splitlines()
    return text[0] if text else type(err).__name__


def check_positive(name: str, value: float) -> None:
    """A finite number above 0 (a clip norm, a learning rate, ε where it must be finite)."""
    if not (math.isfinite(value) and value > 0):
        raise UsageError(f"{param(name)} must be a positive number (got {value})")


def check_non_negative(name: str, value: float) -> None:
    if not (math.isfinite(value) and value >= 0):
        raise UsageError(f"{param(name)} must be a number ≥ 0 (got {value})")


def check_fraction(name: str, value: float) -> None:
    """A share in [0, 1) (momentum, a moving average's decay)."""
    if not 0 <= value < 1:
        raise UsageError(f"{param(name)} must be in [0, 1) (got {value})")


def check_one_of(known: tuple[str, ...]) -> Callable[[str, object], None]:
    """A checker of a word among `known`, e.g. check_one_of(("fast", "opacus"))("engine", value)."""

    def check(name: str, value: object) -> None:
        if value not in known:
            raise UsageError(f"unknown {param(name)} '{value}' (known: {', '.join(known)})")

    return check


def check_probability(name: str, value: float) -> None:
    """A number strictly between 0 and 1 (a failure probability, an error target, a fraction)."""
    if not 0 < value < 1:
        raise UsageError(f"{param(name)} must be in (0, 1) (got {value})")

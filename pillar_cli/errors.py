"""The one error type of pillar.

Library code raises a PillarError subclass with a one-line message (what went wrong, which file or option)
and an optional hint (how to fix it). The CLI boundary turns it into a single line on stderr and the
subclass's exit code; nothing else in the package decides how a failure looks to the user.
"""

from __future__ import annotations


class PillarError(Exception):
    """A failure the user can act on; never shown with a traceback."""

    exit_code = 1

    def __init__(self, message: str, hint: str | None = None):
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __str__(self) -> str:
        return self.message


class UsageError(PillarError):
    """An option value that cannot work (k > d, ε ≤ 0, unknown name)."""

    exit_code = 2


class ArtifactError(PillarError):
    """A missing, corrupt, wrong-kind or mismatched artifact file."""

    exit_code = 3


class DataError(PillarError):
    """Input data that cannot be used (NaN features, empty or single-class split, unreadable source)."""

    exit_code = 4


class PrivacyError(PillarError):
    """A request that would break a privacy rule or cannot be met by the accountant."""

    exit_code = 5


class Interrupted(PillarError):
    """Ctrl-C: reported as one line, exit 130 (128 + SIGINT)."""

    exit_code = 130

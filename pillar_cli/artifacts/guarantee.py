"""What a file says of its own guarantee, as notes `inspect` prints above its attributes: whether its noise
can be regenerated (then nothing in it is private), where its noise came from, the ε of everything it holds
together, the row count its heads read, and a release's statement."""

from __future__ import annotations

from typing import Any

from pillar_cli.randomness import NOT_PRIVATE_NOTE, noise_is_reproducible

NOT_PRIVATE, NOISE, WHOLE_FILE, COUNT, RELEASE = "not-private", "noise", "whole-file", "count", "release"


def guarantee_notes(attrs: dict[str, Any]) -> list[dict[str, str]]:
    """[{"level": …, "text": …}] for the guarantee-bearing attributes an artifact records (none: an empty
    list)."""
    notes = []
    noise = attrs.get("noise") or {}
    if noise_is_reproducible(attrs):
        notes.append((NOT_PRIVATE, f"{NOT_PRIVATE_NOTE} (noise seed {noise.get('noise_seed')})"))
    elif noise:
        notes.append((NOISE, f"noise: {noise.get('note')}"))
    if whole := attrs.get("whole_file"):
        notes.append((WHOLE_FILE, f"{whole.get('statement')} ({whole.get('composition')})"))
    if count := attrs.get("count"):  # a model's row count, as its heads read it
        notes.append((COUNT, f"row count: {count.get('note')}"))
    if statement := attrs.get("privacy"):  # a release's statement
        notes.append((RELEASE, f"release of one classifier: {statement.get('summary')}"))
    return [{"level": level, "text": text} for level, text in notes]

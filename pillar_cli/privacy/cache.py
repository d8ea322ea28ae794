"""Numbers that take seconds to compute and none to look up, kept on disk between runs: the directory named by
the environment variable PILLAR_CACHE_DIR (default ~/.cache/pillar). A cache that cannot be written only costs
time."""

from __future__ import annotations

import json
import os
from pathlib import Path

from pillar_cli.version import PROGRAM


class NumberCache:
    """Numbers by key in a JSON file of the cache directory ($PILLAR_CACHE_DIR, else ~/.cache/pillar): σ by
    (accountant, ε, δ, q, T) in calibration.json, the ε of an event tree by (accountant, tree, δ) in
    spent.json. Computing one takes seconds, looking it up none."""

    def __init__(self, name: str, root: Path | None = None) -> None:
        root = root or Path(os.environ.get("PILLAR_CACHE_DIR", Path.home() / ".cache" / PROGRAM))
        self.path = root / name

    def _load(self) -> dict[str, float]:
        try:
            return json.loads(self.path.read_text())
        except (OSError, ValueError):
            return {}

    def get(self, key: str) -> float | None:
        return self._load().get(key)

    def put(self, key: str, value: float) -> None:
        entries = self._load()
        entries[key] = value
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            tmp = self.path.with_suffix(f".{os.getpid()}.tmp")
            tmp.write_text(json.dumps(entries))
            tmp.replace(self.path)
        except OSError:
            pass  # a cache that cannot be written only costs time

"""The GSD artifact: the distance of every candidate to the private split, the ranking, the settings and, for a
DP release, its ledger."""

from __future__ import annotations

import numpy as np

from pillar_cli.artifacts.core import Artifact


def gsd_artifact(distances: list[float], candidates: list[str], ranking: list[dict], settings: dict,
                 ledger: dict | None) -> Artifact:
    attrs = {"candidates": candidates, "ranking": ranking, "settings": settings}
    if ledger is not None:
        attrs["ledger"] = ledger
    return Artifact("gsd", {"distance": np.array(distances)}, attrs)

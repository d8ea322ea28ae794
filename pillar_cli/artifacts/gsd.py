"""The GSD artifact: the distance of every candidate to the private split, the ranking, the settings and, for
a DP release, its ledger."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from pillar_cli.artifacts.core import Artifact
from pillar_cli.privacy.release import DPRelease, Released


def gsd_artifact(
    distances: list[float], candidates: list[str], ranking: list[dict], settings: dict, ledger: dict | None
) -> Artifact:
    attrs = {"candidates": candidates, "ranking": ranking, "settings": settings}
    if ledger is not None:
        attrs["ledger"] = ledger
    return Artifact("gsd", {"distance": np.array(distances)}, attrs)


@dataclass(frozen=True)
class GsdRanking:
    """A GSD artifact as it is read: the candidates in the order given, the ranking (closest first) and, for a
    DP release, its ledger (None: the distances read the private split without DP)."""

    candidates: list[str]
    ranking: list[dict]  # {"candidate", "gsd", ...}, closest first
    release: DPRelease | None

    @classmethod
    def of(cls, gsd: Artifact) -> GsdRanking:
        ledger = gsd.attrs.get("ledger")
        return cls(
            list(gsd.attrs["candidates"]),
            list(gsd.attrs["ranking"]),
            None if ledger is None else DPRelease.from_attrs(ledger, Released.PUBLIC_CHOICE),
        )

    @property
    def closest(self) -> str:
        return self.ranking[0]["candidate"]

    def distance(self, candidate: str) -> float:
        return next(row["gsd"] for row in self.ranking if row["candidate"] == candidate)

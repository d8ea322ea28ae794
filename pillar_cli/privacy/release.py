"""A DP release of private data that later mechanisms rest on — a DP-PCA of the private rows, or the DP-GSD
ranking that chose the public data — as one typed value: what it released, its mechanism in words, its (ε, δ),
the event tree every run composes it by, and the unit it protects.

The mechanism that makes a release writes its own record (a projection's `private_release`, a GSD file's
`ledger`: mechanism-specific fields beside these); `DPRelease.from_attrs` reads the fields every release has
and refuses a record without them, so that nothing downstream reads a release by key.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import Enum

from pillar_cli.errors import PillarError
from pillar_cli.privacy.events import Event, event_from_dict
from pillar_cli.privacy.unit import PrivacyUnit


class Released(str, Enum):
    """What a release made known (the value is what files store)."""

    PROJECTION = "projection"  # a DP-PCA: components fitted on the private rows
    # a DP-GSD: the private gradient subspace that ranked candidate public data
    PUBLIC_CHOICE = "public choice"

    def __str__(self) -> str:
        return self.value


@dataclass(frozen=True, kw_only=True)
class DPRelease:
    """One DP release another mechanism composes with: its event tree composes into every run that rests on
    it, at the δ total of the guarantee (privacy/guarantee.py)."""

    released: Released
    mechanism: str  # in words, as its mechanism wrote them
    epsilon: float
    delta: float
    event: Event
    unit: PrivacyUnit  # what it protects: a release per row protects a person only at about their rows·ε
    # its noise can be regenerated from a recorded seed: NOT differentially private
    reproducible: bool = False

    @classmethod
    def from_attrs(cls, attrs: Mapping, released: Released | None = None) -> DPRelease:
        """From the record a file keeps (`released`: what it released, where the record predates saying so); a
        record without its event, its unit or its (ε, δ) is a ValueError, which a file's schema turns into one
        line."""
        missing = [
            key for key in ("mechanism", "epsilon", "delta", "event", "unit") if attrs.get(key) is None
        ]
        if missing:
            raise ValueError(f"a DP release records no {', '.join(missing)}")
        noise = attrs.get("noise") or {}
        return cls(
            released=Released(attrs.get("released", released)),
            mechanism=str(attrs["mechanism"]),
            epsilon=float(attrs["epsilon"]),
            delta=float(attrs["delta"]),
            event=event_from_dict(attrs["event"]),
            unit=PrivacyUnit.from_attrs(attrs["unit"]),
            reproducible=bool(attrs.get("reproducible", noise.get("reproducible", False))),
        )

    @classmethod
    def readable(cls, attrs: object, released: Released | None = None) -> bool:
        """Whether a file's record of a release is one `from_attrs` reads."""
        try:
            cls.from_attrs(attrs, released)  # type: ignore[arg-type]
        except (ValueError, TypeError, AttributeError, KeyError, PillarError):
            return False
        return True

    def to_attrs(self) -> dict:
        return {
            "released": self.released.value,
            "mechanism": self.mechanism,
            "epsilon": self.epsilon,
            "delta": self.delta,
            "event": self.event.to_dict(),
            "unit": self.unit.to_attrs(),
            "reproducible": self.reproducible,
        }

    @property
    def words(self) -> str:
        """Its mechanism and budget, as a statement names it."""
        return f"{self.mechanism}; ε = {self.epsilon:.4g}, δ = {self.delta:g}"

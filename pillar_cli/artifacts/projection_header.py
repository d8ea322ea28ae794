"""What a projection artifact states beside its arrays, as one typed record read here only: how it was fitted,
on what, and the DP releases it rests on (a GSD's choice of its public data, or a DP-PCA of private rows)."""

from __future__ import annotations

from dataclasses import dataclass

from pillar_cli.artifacts.core import Artifact
from pillar_cli.artifacts.model_record import PublicChoice


@dataclass(frozen=True, kw_only=True)
class ProjectionHeader:
    method: str  # "pca", "second-moment" or "components"
    k_max: int
    standardized: bool
    row_l2_normalised: bool
    rank: int
    n_public: int  # rows fitted on (0 for a DP-PCA, which records no count of private rows)
    unseen_group: bool = False  # components: a group for the variables no public row holds
    fitted_on: dict | None = None  # the InputRef of the split it was fitted on
    backbone: str | None = None
    # of the source's train part, as the split recipe and --fraction draw it
    public_share: float | None = None
    public_choice: PublicChoice | None = None
    private_release: dict | None = None  # a DP-PCA's release: mechanism, ε, δ, event, noise

    @classmethod
    def of(cls, projection: Artifact) -> ProjectionHeader:
        attrs = projection.attrs
        return cls(
            method=str(attrs.get("method", "pca")),
            k_max=int(attrs["k_max"]),
            standardized=bool(attrs["standardized"]),
            row_l2_normalised=bool(attrs.get("row_l2_normalised", False)),
            rank=int(attrs["rank"]),
            n_public=int(attrs["n_public"]),
            unseen_group=bool(attrs.get("unseen_group", False)),
            fitted_on=attrs.get("fitted_on"),
            backbone=attrs.get("backbone"),
            public_share=attrs.get("public_share"),
            public_choice=PublicChoice.of(projection),
            private_release=attrs.get("private_release"),
        )

    @property
    def origin(self) -> str:
        """FILE:SPLIT it was fitted on, in words."""
        fitted_on = self.fitted_on or {}
        return f"{fitted_on.get('path', '?')}:{fitted_on.get('split', '?')}"

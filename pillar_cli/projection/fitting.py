"""The fit-pca stage as one library call: the projection a recipe fits on a split of an embeddings file (its
public rows, or its private rows by a DP-PCA release) and the inputs it read. `pillar fit-pca` writes what it
returns; the neighbours check (audit/neighbours.py) reruns it on each side."""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass

from pillar_cli import artifacts
from pillar_cli.errors import UsageError, check_positive, param
from pillar_cli.projection.components import PublicComponents, fit_public_components
from pillar_cli.projection.pca import PublicPCA, fit_public_split, projection_artifact
from pillar_cli.projection.private_pca import fit_private_pca, private_projection_artifact
from pillar_cli.projection.public_choice import public_choice
from pillar_cli.randomness import SECRET, NoiseSource

Progress = Callable[[int], AbstractContextManager[Callable[[int], None]]]  # rows to come → what counts them


@dataclass(frozen=True)
class ProjectionRecipe:
    """What fit-pca fits: `k_max` components (None: the default) of the public rows — a keyed `fraction` of
    them, standardised or (`second_moment`) L2-normalised, or the empirical component graph of boolean rows
    (`components`) — or, with `dp_eps`, a DP-PCA of the private rows at (`dp_eps`, `dp_delta`) calibrated by
    `accountant`."""

    k_max: int | None = None
    fraction: float = 1.0
    standardize: bool = True
    second_moment: bool = False
    components: bool = False
    dp_eps: float | None = None
    dp_delta: float = 1e-5
    accountant: str = "prv"

    def __post_init__(self) -> None:
        if self.dp_eps is not None:
            check_positive("dp_eps", self.dp_eps)
            if not 0 < self.dp_delta < 1:
                raise UsageError(f"{param('dp_delta')} must be in (0, 1) (got {self.dp_delta})")
            if self.components:
                raise UsageError(
                    f"{param('dp_eps')} fits a DP-PCA of the private rows; "
                    f"{param('components', True)} fits on public rows: pass one"
                )


@dataclass(frozen=True)
class FittedProjection:
    artifact: artifacts.Artifact
    inputs: list[artifacts.InputRef]
    fitted: PublicPCA | PublicComponents


def fit_projection(
    embeddings: str,
    recipe: ProjectionRecipe,
    *,
    gsd: artifacts.Artifact | None = None,
    allow_nonprivate_choice: bool = False,
    noise: NoiseSource = SECRET,
    progress: Progress | None = None,
) -> FittedProjection:
    """The projection `recipe` fits on `embeddings` (FILE or FILE:SPLIT, default split public; a DP-PCA fits
    on FILE:private), and the inputs it read. `gsd`: the GSD ranking that chose this split, recorded and
    checked. `noise`: where the DP-PCA's noise comes from (default: fresh OS entropy). `progress`: what counts
    the public rows read."""
    if recipe.dp_eps is not None:
        return _fit_private(embeddings, recipe, gsd, noise)
    public = artifacts.read_split(embeddings, default_split="public", on_disk=True).subsample(
        recipe.fraction, "fraction"
    )
    choice = None if gsd is None else public_choice(gsd, embeddings, public, allow_nonprivate_choice)
    with (progress or _uncounted)(len(public.features)) as advance:
        fitted = (
            fit_public_components(public)
            if recipe.components
            else fit_public_split(public, recipe.k_max, recipe.standardize, recipe.second_moment, advance)
        )
    artifact = projection_artifact(fitted, public)
    if public.drawn_share is not None:
        artifact.attrs["public_share"] = recipe.fraction * public.drawn_share
    if choice is not None:
        artifact.attrs["public_choice"] = choice.to_attrs()
    return FittedProjection(artifact, [public.ref, *([gsd.ref()] if gsd else [])], fitted)


def _fit_private(
    embeddings: str, recipe: ProjectionRecipe, gsd: artifacts.Artifact | None, noise: NoiseSource
) -> FittedProjection:
    """DP-PCA on the private split: the projection and its release's record."""
    if gsd is not None:
        raise UsageError(
            f"{param('dp_eps')} fits a DP-PCA of the private rows; {param('public_from')} fits on "
            "public rows: pass one"
        )
    if artifacts.parse_ref(embeddings)[1] != "private":
        raise UsageError(f"{param('dp_eps')} fits on the private split: give it as FILE:private")
    private = artifacts.read_split(embeddings)
    pca, release = fit_private_pca(
        private.features,
        recipe.k_max,
        recipe.dp_eps,
        recipe.dp_delta,
        recipe.accountant,
        noise,
        private.units,
    )
    return FittedProjection(private_projection_artifact(pca, private, release), [private.ref], pca)


@contextlib.contextmanager
def _uncounted(rows: int):
    yield lambda done: None

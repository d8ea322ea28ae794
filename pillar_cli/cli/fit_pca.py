"""pillar fit-pca: standardise + PCA on the PUBLIC split only."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from pillar_cli import artifacts
from pillar_cli.cli.boundary import cli_errors
from pillar_cli.cli.common import (
    ConfigOption,
    ForceOption,
    JsonOption,
    NoiseSeedOption,
    check_output,
    noise_source,
    print_json,
    print_table,
    save,
)
from pillar_cli.cli.progress import progress_bar
from pillar_cli.errors import UsageError, check_positive
from pillar_cli.projection import PublicPCA, fit_public_split, projection_artifact
from pillar_cli.projection.components import PublicComponents, fit_public_components
from pillar_cli.projection.private_pca import fit_private_pca, private_projection_artifact
from pillar_cli.projection.public_choice import chosen_candidate, public_choice


@cli_errors(flags={"epsilon": "--dp-eps", "delta": "--dp-delta"})
def fit_pca(
    ctx: typer.Context,
    embeddings: Optional[str] = typer.Argument(None, help="Embeddings artifact, optionally FILE:SPLIT (default "
                                               "split: public); with --public-from, the candidate (default: the "
                                               "closest)."),
    out: Path = typer.Option(..., "-o", "--out", help="Projection artifact to write."),
    k_max: Optional[int] = typer.Option(None, min=1, help="Components to keep (default: the public rank; with "
                                        "--dp-eps, 200 or the feature dimension)."),
    standardize: bool = typer.Option(True, help="Standardise features (public mean/std) before PCA."),
    second_moment: bool = typer.Option(False, "--second-moment", help="Theory-faithful: L2-normalised rows, "
                                       "uncentred second moment E[xxᵀ], no standardisation (Definition 3)."),
    public_from: Optional[Path] = typer.Option(None, "--public-from", help="GSD artifact whose ranking chose the "
                                               "public split: recorded, and its DP release composed into the ε of "
                                               "every model trained on this projection."),
    allow_nonprivate_choice: bool = typer.Option(False, "--allow-nonprivate-choice", help="Accept a GSD computed "
                                                 "without DP (recorded; every model says its public data was chosen "
                                                 "outside ε)."),
    components: bool = typer.Option(False, "--components", help="Boolean rows: the empirical component graph "
                                    "(variables joined when a public row has both active) instead of a PCA; the "
                                    "structure of the em-components disjunction learner."),
    fraction: float = typer.Option(1.0, help="Fit on a seeded fraction of the public rows (Table 2(b) of the paper: "
                                   "how much public data the projection needs)."),
    dp_eps: Optional[float] = typer.Option(None, "--dp-eps", help="DP-PCA when no public data exists: fit on the "
                                           "PRIVATE split (FILE:private) by one Gaussian release of its second "
                                           "moment at this ε (Analyze Gauss), composed into the ε of every model "
                                           "trained on the projection."),
    dp_delta: float = typer.Option(1e-5, "--dp-delta", help="δ of the DP-PCA release; below 1/n_private."),
    accountant: str = typer.Option("prv", "--accountant", help="Accountant that calibrates the DP-PCA release."),
    noise_seed: Optional[int] = NoiseSeedOption,
    config: Optional[str] = ConfigOption,
    force: bool = ForceOption,
    as_json: bool = JsonOption,
) -> None:
    """Fit the scaler and principal components on PUBLIC unlabelled embeddings.

    Only a split without labels is accepted: fitting on labelled (private) rows would leak them into every model
    trained on the projection.

    Example: pillar fit-pca emb.h5:public -o pca.h5 --k-max 100

    Example: pillar fit-pca emb.h5:public --fraction 0.1 -o pca-small.h5

    Example: pillar fit-pca --public-from dpgsd.h5 -o pca.h5 --k-max 100

    Example: pillar fit-pca bits.h5:public --components -o graph.h5

    Example: pillar fit-pca emb.h5:private --dp-eps 0.3 --k-max 100 -o dppca.h5
    """
    if dp_eps is not None and (components or public_from is not None):
        other = "--components" if components else "--public-from"
        raise UsageError(f"--dp-eps fits a DP-PCA of the private rows; {other} fits on public rows: pass one")
    if dp_eps is not None:
        return _fit_private(ctx, embeddings, out, k_max, dp_eps, dp_delta, accountant, noise_seed, force, as_json)
    gsd = None if public_from is None else artifacts.read(public_from, "gsd")
    if gsd is None and embeddings is None:
        raise UsageError("give the public split to fit on, or --public-from a GSD ranking")
    embeddings = embeddings if gsd is None else chosen_candidate(gsd, embeddings)
    check_output(out, [artifacts.parse_ref(embeddings)[0], *([str(public_from)] if gsd else [])], force=force)
    public = artifacts.read_split(embeddings, default_split="public", on_disk=True).subsample(fraction, "fraction")
    choice = None if gsd is None else public_choice(gsd, embeddings, public, allow_nonprivate_choice)
    with progress_bar("fit-pca", len(public.features), "rows") as advance:
        pca = fit_public_components(public) if components else \
            fit_public_split(public, k_max, standardize, second_moment, advance)
    artifact = projection_artifact(pca, public)
    if public.drawn_share is not None:
        artifact.attrs["public_share"] = fraction * public.drawn_share
    if choice is not None:
        artifact.attrs["public_choice"] = choice.to_attrs()
    save(ctx, out, artifact, [public.ref, *([gsd.ref()] if gsd else [])])
    _report(out, pca, as_json)


def _fit_private(ctx: typer.Context, embeddings: str | None, out: Path, k_max: int | None, epsilon: float,
                 delta: float, accountant: str, noise_seed: int | None, force: bool, as_json: bool) -> None:
    """DP-PCA on the private split: the projection and its release's record."""
    if embeddings is None or artifacts.parse_ref(embeddings)[1] != "private":
        raise UsageError("--dp-eps fits on the private split: give it as FILE:private")
    check_positive("dp_eps", epsilon)
    if not 0 < delta < 1:
        raise UsageError(f"--dp-delta must be in (0, 1) (got {delta})")
    check_output(out, [artifacts.parse_ref(embeddings)[0]], force=force)
    private = artifacts.read_split(embeddings)
    pca, release = fit_private_pca(private.features, k_max, epsilon, delta, accountant, noise_source(noise_seed),
                                   private.units)
    save(ctx, out, private_projection_artifact(pca, private, release), [private.ref])
    _report(out, pca, as_json)


def _report(out: Path, pca: PublicPCA, as_json: bool) -> None:
    if isinstance(pca, PublicComponents):
        return _report_components(out, pca, as_json)
    explained = pca.eigenvalues_.cumsum() / pca.eigenvalues_.sum()
    rows = [{"k": k, "explained_variance": float(explained[k - 1])} for k in (1, 2, 5, 10, 20, 40, 100, 200)
            if k <= len(pca.components_)]
    summary = {"output": str(out), "n_public": pca.n_public_, "dim": pca.dim, "rank": pca.rank_,
               "k_max": len(pca.components_), "explained": rows}
    if as_json:
        return print_json(summary)
    fitted = f"{pca.n_public_} public rows" if pca.n_public_ else "the private rows (DP-PCA)"
    print_table(f"{out}: PCA on {fitted}, {pca.dim} dims, rank {pca.rank_}", rows,
                ["k", "explained_variance"], {"explained_variance": ".3f"})


def _report_components(out: Path, graph: PublicComponents, as_json: bool) -> None:
    last = len(graph.groups()) - 1
    rows = [{"component": i, "variables": int(size), "seen_in_public": not (graph.unseen_ and i == last)}
            for i, size in enumerate(graph.eigenvalues_)]
    summary = {"output": str(out), "n_public": graph.n_public_, "dim": graph.dim, "components": len(rows),
               "candidates": 2 ** len(rows), "sizes": rows}
    if as_json:
        return print_json(summary)
    print_table(f"{out}: {len(rows)} components of {graph.dim} variables from {graph.n_public_} public rows "
                f"({2 ** len(rows):,} candidate disjunctions)", rows[:20], ["component", "variables", "seen_in_public"])

"""pillar fit-pca: standardise + PCA on the PUBLIC split only."""

from __future__ import annotations

from pathlib import Path

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
from pillar_cli.errors import UsageError
from pillar_cli.projection import PublicPCA
from pillar_cli.projection.components import PublicComponents
from pillar_cli.projection.fitting import ProjectionRecipe, fit_projection
from pillar_cli.projection.public_choice import chosen_candidate


@cli_errors(flags={"epsilon": "--dp-eps", "delta": "--dp-delta"})
def fit_pca(
    ctx: typer.Context,
    embeddings: str | None = typer.Argument(
        None,
        help="Embeddings artifact, optionally FILE:SPLIT (default "
        "split: public); with --public-from, the candidate (default: the closest).",
    ),
    out: Path = typer.Option(..., "-o", "--out", help="Projection artifact to write."),
    k_max: int | None = typer.Option(
        None,
        min=1,
        help="Components to keep (default: the public rank; with --dp-eps, 200 or the feature dimension).",
    ),
    standardize: bool = typer.Option(True, help="Standardise features (public mean/std) before PCA."),
    second_moment: bool = typer.Option(
        False,
        "--second-moment",
        help="Theory-faithful: L2-normalised rows, "
        "uncentred second moment E[xxᵀ], no standardisation (Definition 3).",
    ),
    public_from: Path | None = typer.Option(
        None,
        "--public-from",
        help="GSD artifact whose ranking chose the "
        "public split: recorded, and its DP release composed into the ε of "
        "every model trained on this projection.",
    ),
    allow_nonprivate_choice: bool = typer.Option(
        False,
        "--allow-nonprivate-choice",
        help="Accept a GSD computed "
        "without DP (recorded; every model says its public data was chosen outside ε).",
    ),
    components: bool = typer.Option(
        False,
        "--components",
        help="Boolean rows: the empirical component graph "
        "(variables joined when a public row has both active) instead of a PCA; the "
        "structure of the em-components disjunction learner.",
    ),
    fraction: float = typer.Option(
        1.0,
        help="Fit on a seeded fraction of the public rows (Table 2(b) of the paper: "
        "how much public data the projection needs).",
    ),
    dp_eps: float | None = typer.Option(
        None,
        "--dp-eps",
        help="DP-PCA when no public data exists: fit on the "
        "PRIVATE split (FILE:private) by one Gaussian release of its second "
        "moment at this ε (Analyze Gauss), composed into the ε of every model trained on the projection.",
    ),
    dp_delta: float = typer.Option(1e-5, "--dp-delta", help="δ of the DP-PCA release; below 1/n_private."),
    accountant: str = typer.Option(
        "prv", "--accountant", help="Accountant that calibrates the DP-PCA release."
    ),
    noise_seed: int | None = NoiseSeedOption,
    config: str | None = ConfigOption,
    force: bool = ForceOption,
    as_json: bool = JsonOption,
) -> None:
    """Fit the scaler and principal components on PUBLIC unlabelled embeddings.

    Only a split without labels is accepted: fitting on labelled (private) rows would leak them into every
    model trained on the projection.

    Example: pillar fit-pca emb.h5:public -o pca.h5 --k-max 100

    Example: pillar fit-pca emb.h5:public --fraction 0.1 -o pca-small.h5

    Example: pillar fit-pca --public-from dpgsd.h5 -o pca.h5 --k-max 100

    Example: pillar fit-pca bits.h5:public --components -o graph.h5

    Example: pillar fit-pca emb.h5:private --dp-eps 0.3 --k-max 100 -o dppca.h5
    """
    recipe = ProjectionRecipe(
        k_max, fraction, standardize, second_moment, components, dp_eps, dp_delta, accountant
    )
    gsd = None if public_from is None else artifacts.read(public_from, "gsd")
    if gsd is None and embeddings is None:
        raise UsageError(
            "--dp-eps fits on the private split: give it as FILE:private"
            if dp_eps is not None
            else "give the public split to fit on, or --public-from a GSD ranking"
        )
    embeddings = embeddings if gsd is None else chosen_candidate(gsd, embeddings)
    check_output(out, [artifacts.parse_ref(embeddings)[0], *([str(public_from)] if gsd else [])], force=force)
    fitted = fit_projection(
        embeddings,
        recipe,
        gsd=gsd,
        allow_nonprivate_choice=allow_nonprivate_choice,
        noise=noise_source(noise_seed),
        progress=lambda rows: progress_bar("fit-pca", rows, "rows"),
    )
    save(ctx, out, fitted.artifact, fitted.inputs)
    _report(out, fitted.fitted, as_json)


def _report(out: Path, pca: PublicPCA, as_json: bool) -> None:
    if isinstance(pca, PublicComponents):
        return _report_components(out, pca, as_json)
    explained = pca.eigenvalues_.cumsum() / pca.eigenvalues_.sum()
    rows = [
        {"k": k, "explained_variance": float(explained[k - 1])}
        for k in (1, 2, 5, 10, 20, 40, 100, 200)
        if k <= len(pca.components_)
    ]
    summary = {
        "output": str(out),
        "n_public": pca.n_public_,
        "dim": pca.dim,
        "rank": pca.rank_,
        "k_max": len(pca.components_),
        "explained": rows,
    }
    if as_json:
        return print_json(summary)
    fitted = f"{pca.n_public_} public rows" if pca.n_public_ else "the private rows (DP-PCA)"
    print_table(
        f"{out}: PCA on {fitted}, {pca.dim} dims, rank {pca.rank_}",
        rows,
        ["k", "explained_variance"],
        {"explained_variance": ".3f"},
    )


def _report_components(out: Path, graph: PublicComponents, as_json: bool) -> None:
    last = len(graph.groups()) - 1
    rows = [
        {"component": i, "variables": int(size), "seen_in_public": not (graph.unseen_ and i == last)}
        for i, size in enumerate(graph.eigenvalues_)
    ]
    summary = {
        "output": str(out),
        "n_public": graph.n_public_,
        "dim": graph.dim,
        "components": len(rows),
        "candidates": 2 ** len(rows),
        "sizes": rows,
    }
    if as_json:
        return print_json(summary)
    print_table(
        f"{out}: {len(rows)} components of {graph.dim} variables from {graph.n_public_} public rows "
        f"({2 ** len(rows):,} candidate disjunctions)",
        rows[:20],
        ["component", "variables", "seen_in_public"],
    )

"""pillar fit-pca: standardise + PCA on the PUBLIC split only."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from pillar_cli import artifacts
from pillar_cli.cli.common import (
    ConfigOption,
    ForceOption,
    JsonOption,
    check_output,
    cli_errors,
    print_json,
    print_table,
    save,
)
from pillar_cli.projection import fit_public_split, projection_artifact


@cli_errors
def fit_pca(
    ctx: typer.Context,
    embeddings: str = typer.Argument(..., help="Embeddings artifact, optionally FILE:SPLIT (default split: public)."),
    out: Path = typer.Option(..., "-o", "--out", help="Projection artifact to write."),
    k_max: Optional[int] = typer.Option(None, min=1, help="Components to keep (default: the public rank)."),
    standardize: bool = typer.Option(True, help="Standardise features (public mean/std) before PCA."),
    second_moment: bool = typer.Option(False, "--second-moment", help="Theory-faithful: L2-normalised rows, "
                                       "uncentred second moment E[xxᵀ], no standardisation (Definition 3)."),
    config: Optional[str] = ConfigOption,
    force: bool = ForceOption,
    as_json: bool = JsonOption,
) -> None:
    """Fit the scaler and principal components on PUBLIC unlabelled embeddings.

    Only a split without labels is accepted: fitting on labelled (private) rows would leak them into every model
    trained on the projection.

    Example: pillar fit-pca emb.h5:public -o pca.h5 --k-max 100
    """
    path, _ = artifacts.parse_ref(embeddings)
    check_output(out, [path], force=force)
    public = artifacts.read_split(embeddings, default_split="public")
    pca = fit_public_split(public, k_max, standardize, second_moment)
    save(ctx, out, projection_artifact(pca, public), [public.ref])
    explained = pca.eigenvalues_.cumsum() / pca.eigenvalues_.sum()
    rows = [{"k": k, "explained_variance": float(explained[k - 1])} for k in (1, 2, 5, 10, 20, 40, 100, 200)
            if k <= len(pca.components_)]
    summary = {"output": str(out), "n_public": pca.n_public_, "dim": pca.dim, "rank": pca.rank_,
               "k_max": len(pca.components_), "explained": rows}
    if as_json:
        return print_json(summary)
    print_table(f"{out}: PCA on {pca.n_public_} public rows, {pca.dim} dims, rank {pca.rank_}", rows,
                ["k", "explained_variance"], {"explained_variance": ".3f"})

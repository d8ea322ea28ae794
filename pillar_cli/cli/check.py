"""pillar check-assumptions: ξ_k, margins and eigengaps before any private budget is spent."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import numpy as np
import typer

from pillar_cli import artifacts
from pillar_cli.artifacts import Artifact, InputRef
from pillar_cli.cli.common import (ConfigOption, JsonOption, atomic_file, check_output, cli_errors, int_list,
                                   print_json, print_table, save, stderr)
from pillar_cli.errors import DataError, UsageError
from pillar_cli.projection import PublicPCA
from pillar_cli.reporting.figures import spectrum, xi_vs_k
from pillar_cli.theory.assumptions import assess, svm_directions, theorem_recommended_k, theorem_terms


@cli_errors
def check_assumptions(
    ctx: typer.Context,
    embeddings: str = typer.Argument(..., help="Embeddings FILE:SPLIT whose labels define w* (default split: val)."),
    projection: Optional[Path] = typer.Option(None, "--projection", "-p", help="Projection artifact from fit-pca."),
    second_moment: bool = typer.Option(False, "--second-moment", help="Theory-faithful mode: A_k from the uncentred "
                                       "second moment of L2-normalised PUBLIC features (fitted here on FILE:public)."),
    out: Path = typer.Option(..., "-o", "--out", help="Assumptions artifact to write."),
    k: str = typer.Option("1,2,5,10,20,40", help="k values, comma-separated."),
    mode: str = typer.Option("pairs", help="pairs (one SVM per class pair) or ovr (one-vs-rest)."),
    pairs: int = typer.Option(45, min=1, help="Most class pairs to use (seeded sample beyond that)."),
    xi_threshold: float = typer.Option(0.2, help="Recommend the smallest k whose median ξ_k is at most this."),
    eps: Optional[float] = typer.Option(None, help="Target ε: adds Theorem 1's sample-size terms and their best k."),
    alpha: float = typer.Option(0.1, help="Target excess error α of Theorem 1."),
    beta: float = typer.Option(0.05, help="Failure probability β of Theorem 1."),
    seed: int = typer.Option(0),
    plot_xi: Optional[Path] = typer.Option(None, help="PNG: ξ_k against k (mean, median, max over tasks)."),
    plot_spectrum: Optional[Path] = typer.Option(None, help="PNG: the public eigen-spectrum (log scale)."),
    config: Optional[str] = ConfigOption,
    as_json: bool = JsonOption,
) -> None:
    """Measure how well the top-k public subspace captures max-margin directions (ξ_k), margins and Δ_k.

    w* is fitted with labels: this stage reads the labels of the split you name (default: val) and says so.

    Example: pillar check-assumptions emb.h5:val -p pca.h5 --k 1,2,5,10,20,40 -o assumptions.h5
    """
    path, _ = artifacts.parse_ref(embeddings)
    for output in (out, plot_xi, plot_spectrum):
        if output is not None:
            check_output(output, [path, str(projection)])
    if mode not in ("pairs", "ovr"):
        raise UsageError(f"--mode must be 'pairs' or 'ovr'; got '{mode}'")
    split = artifacts.read_split(embeddings, default_split="val")
    if split.labels is None:
        raise DataError(f"split '{split.name}' of {path} has no labels; margins need a labelled split")
    ks = [value for value in int_list(k, "--k") if value is not None]
    pca, basis_ref = _basis(path, projection, second_moment, max(ks))
    z = pca.standardized(split.features)
    table = assess(svm_directions(z, split.labels, mode, pairs, seed), z, {v: pca.basis(v) for v in ks},
                   pca.eigenvalues_)
    label_note = f"w* fitted on the labels of split '{split.name}' ({split.attrs['split_roles'][split.name]})"
    summary = {"rows": table.rows(), "recommended_k": table.recommended_k(xi_threshold), "xi_threshold": xi_threshold,
               "margin_q01_full_median": float(np.median(table.margin_full)), "labels_used": label_note,
               "basis": "second moment of L2-normalised public features" if second_moment else "projection artifact"}
    if eps is not None:
        summary["theorem"] = theorem_terms(table, eps, alpha, beta)
        summary["recommended_k_theorem"] = theorem_recommended_k(summary["theorem"])
        summary["theorem_inputs"] = ("γ, ξ_k and ζ come from w* fitted on labelled data (" + label_note + "); "
                                     "Δ_k from public data only")
    artifact = Artifact("assumptions", {"k": np.array(ks), "xi": table.xi, "margin_full": table.margin_full,
                                        "margin_projected": table.margin_projected, "eigengap": table.eigengap},
                        {"summary": summary, "labels_used": label_note, "mode": mode})
    save(ctx, out, artifact, [split.ref, basis_ref])
    title = (f"{split.attrs.get('source')} / {split.attrs.get('backbone')}: {summary['basis']}\n"
             f"w* from the labels of split '{split.name}' ({len(split.features)} rows, {mode})")
    for target, draw in ((plot_xi, lambda tmp: xi_vs_k(table.rows(), tmp, title)),
                         (plot_spectrum, lambda tmp: spectrum(pca.eigenvalues_, tmp, title))):
        if target is not None:
            with atomic_file(target) as tmp:
                draw(tmp)
    if as_json:
        return print_json(summary)
    print_table(f"{out}: large-margin low-rank diagnostics", table.rows(),
                ["k", "xi_mean", "xi_median", "xi_max", "margin_q01_median", "eigengap", "explained_variance"],
                {c: ".3f" for c in ("xi_mean", "xi_median", "xi_max", "margin_q01_median", "explained_variance")}
                | {"eigengap": ".3g"})
    stderr.print(f"recommended k (median ξ_k ≤ {xi_threshold}): {summary['recommended_k']}; "
                 f"full-space margin (99% of points): {summary['margin_q01_full_median']:.3f}")
    if eps is not None:
        stderr.print(f"Theorem 1 at ε={eps:g}, α={alpha:g}, β={beta:g}: best k {summary['recommended_k_theorem']} "
                     f"({summary['theorem_inputs']})")
    stderr.print(f"note: {label_note}")


def _basis(path: str, projection: Path | None, second_moment: bool, k_max: int) -> tuple[PublicPCA, InputRef]:
    """The projection artifact, or (theory mode) a second-moment basis fitted on the public split right here."""
    if second_moment:
        public = artifacts.read_split(f"{path}:public")
        return PublicPCA(k_max, second_moment=True).fit(public.features), public.ref
    if projection is None:
        raise UsageError("check-assumptions needs --projection (or --second-moment to fit one on the public split)")
    projection_artifact = artifacts.read(projection, "projection")
    return PublicPCA.from_artifact(projection_artifact), projection_artifact.ref()

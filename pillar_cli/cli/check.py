"""pillar check-assumptions: ξ_k, margins and eigengaps before any private budget is spent."""

from __future__ import annotations

import contextlib
import functools
from pathlib import Path

import typer

from pillar_cli import artifacts
from pillar_cli.artifacts import InputRef
from pillar_cli.artifacts.assumptions import assumptions_artifact
from pillar_cli.artifacts.files import replacing_together
from pillar_cli.artifacts.projection_header import ProjectionHeader
from pillar_cli.cli.boundary import cli_errors
from pillar_cli.cli.common import (
    ConfigOption,
    ForceOption,
    JsonOption,
    check_outputs,
    int_list,
    print_json,
    print_table,
    save,
    stderr,
    warn,
)
from pillar_cli.errors import MissingSplitError, UsageError
from pillar_cli.privacy.count import Counted
from pillar_cli.privacy.unit import Units
from pillar_cli.projection import PublicPCA
from pillar_cli.reporting.figures import spectrum, xi_vs_k
from pillar_cli.theory.diagnostics import Diagnosis, diagnose_split

DEFAULT_KS = (1, 2, 5, 10, 20, 40)


@cli_errors
def check_assumptions(
    ctx: typer.Context,
    embeddings: str = typer.Argument(
        ..., help="Embeddings FILE:SPLIT whose labels define w* (default split: val)."
    ),
    projection: Path | None = typer.Option(
        None, "--projection", "-p", help="Projection artifact from fit-pca."
    ),
    second_moment: bool = typer.Option(
        False,
        "--second-moment",
        help="Theory-faithful mode: A_k from the uncentred "
        "second moment of L2-normalised PUBLIC features (fitted here on FILE:public).",
    ),
    out: Path = typer.Option(..., "-o", "--out", help="Assumptions artifact to write."),
    k: str | None = typer.Option(
        None,
        help="k values, comma-separated (default: 1,2,5,10,20,40 up to the "
        "projection's components, and all of them where it holds fewer than 40).",
    ),
    mode: str = typer.Option("pairs", help="pairs (one SVM per class pair) or ovr (one-vs-rest)."),
    pairs: int = typer.Option(45, min=1, help="Most class pairs to use (seeded sample beyond that)."),
    xi_threshold: float = typer.Option(
        0.2, help="Recommend the smallest k whose median ξ_k is at most this."
    ),
    eps: float | None = typer.Option(
        None, help="Target ε: adds Theorem 1's sample-size terms and their best k."
    ),
    alpha: float = typer.Option(0.1, help="Target excess error α of Theorem 1."),
    beta: float = typer.Option(0.05, help="Failure probability β of Theorem 1."),
    seed: int = typer.Option(0),
    plot_xi: Path | None = typer.Option(None, help="PNG: ξ_k against k (mean, median, max over tasks)."),
    plot_spectrum: Path | None = typer.Option(None, help="PNG: the public eigen-spectrum (log scale)."),
    allow_private_labels: bool = typer.Option(
        False,
        "--allow-private-labels",
        help="Fit w* on the PRIVATE split's labels (outside any DP release; recorded and printed).",
    ),
    config: str | None = ConfigOption,
    force: bool = ForceOption,
    as_json: bool = JsonOption,
) -> None:
    """Measure how well the top-k public subspace captures max-margin directions (ξ_k), margins and Δ_k.

    w* is fitted with labels: this stage reads the labels of the split you name (default: val) and says so.

    Example: pillar check-assumptions emb.h5:val -p pca.h5 --k 1,2,5,10,20,40 -o assumptions.h5
    """
    path, _ = artifacts.parse_ref(embeddings)
    check_outputs([out, plot_xi, plot_spectrum], [path, str(projection)], force=force)
    # read: the rows w* is fitted on
    split = artifacts.read_split(embeddings, default_split="val", on_disk=True)
    ks = None if k is None else [value for value in int_list(k, "--k") if value is not None]
    pca, basis_ref = _basis(split, projection, second_moment, max(ks or DEFAULT_KS))
    ks = ks or default_ks(len(pca.components_))
    units, counted = training_units(path)
    described = "second moment of L2-normalised public features" if second_moment else "projection artifact"
    found = diagnose_split(
        split,
        pca,
        ks,
        allow_private_labels,
        mode=mode,
        pairs=pairs,
        seed=seed,
        xi_threshold=xi_threshold,
        epsilon=eps,
        alpha=alpha,
        beta=beta,
        basis_description=described,
        rows=units,
        counted=counted,
    )
    table = found.table
    title = (
        f"{split.source} / {split.backbone}: {described}\n"
        f"w* from the labels of split '{split.name}' ({len(split.features)} rows, {mode})"
    )
    with replacing_together([plot_xi, plot_spectrum], force) as (xi_tmp, spectrum_tmp):
        if xi_tmp is not None:
            xi_vs_k(table.rows(), xi_tmp, title)
        if spectrum_tmp is not None:
            spectrum(pca.eigenvalues_, spectrum_tmp, title)
        save(
            ctx,
            out,
            assumptions_artifact(
                ks,
                table.xi,
                table.margin_full,
                table.margin_projected,
                table.eigengap,
                found.summary,
                found.labels_used,
                mode,
            ),
            [split.ref, basis_ref],
        )
    _report(out, found, eps, alpha, beta, as_json)


def _report(out: Path, found: Diagnosis, eps: float | None, alpha: float, beta: float, as_json: bool) -> None:
    summary = found.summary
    if as_json:
        return print_json(summary)
    print_table(
        f"{out}: large-margin low-rank diagnostics",
        found.table.rows(),
        ["k", "xi_mean", "xi_median", "xi_max", "margin_q01_median", "eigengap", "explained_variance"],
        dict.fromkeys(("xi_mean", "xi_median", "xi_max", "margin_q01_median", "explained_variance"), ".3f")
        | {"eigengap": ".3g"},
    )
    recommended = summary["recommended"]
    stderr.print(f"recommended k: {recommended['k']} ({recommended['reason']})")
    met = summary["recommended_k"]
    stderr.print(
        f"measured: full-space margin (99% of points) {summary['margin_q01_full_median']:.3f}; median ξ_k ≤ "
        f"{summary['xi_threshold']:g} " + (f"from k = {met}" if met is not None else "at no k measured")
    )
    if eps is not None:
        stderr.print(
            f"measured: Theorem 1's sample-size terms at ε={eps:g}, α={alpha:g}, β={beta:g} are smallest at "
            f"k = {summary['recommended_k_theorem']} ({summary['theorem_inputs']})"
        )
    stderr.print(f"note: {found.labels_used}")
    if "approximate_directions" in summary:
        warn(summary["approximate_directions"])


def default_ks(components: int) -> list[int]:
    """DEFAULT_KS up to the projection's components, and all of them where it holds fewer than the largest."""
    every = {components} if components < max(DEFAULT_KS) else set()
    return sorted({k for k in DEFAULT_KS if k <= components} | every)


def training_units(path: str) -> tuple[int, Counted]:
    """(how many, what) train-private's default path trains on, counted in its default privacy unit: the
    persons of the private and val splits where the rows name them, else their rows (read exactly: this advice
    is for the data's holder, not a release)."""
    splits = [artifacts.read_split(f"{path}:private", on_disk=True)]  # their features are not read
    with contextlib.suppress(MissingSplitError):
        splits.append(artifacts.read_split(f"{path}:val", on_disk=True))
    units = functools.reduce(Units.joined, (split.units for split in splits))
    return units.count, Counted.PERSONS if units.grouped else Counted.ROWS


def _basis(
    split: artifacts.Split, projection: Path | None, second_moment: bool, k_max: int
) -> tuple[PublicPCA, InputRef]:
    """The projection artifact (fitted on the same embeddings as the split), or (theory mode) a second-moment
    basis fitted on their public split right here."""
    if second_moment:
        public = artifacts.read_split(f"{split.ref.path}:public", on_disk=True)
        return PublicPCA(k_max, second_moment=True).fit(public.features), public.ref
    if projection is None:
        raise UsageError(
            "check-assumptions needs --projection (or --second-moment to fit one on the public split)"
        )
    projection_artifact = artifacts.read(projection, "projection")
    artifacts.require_derived_from(projection_artifact, split.ref)
    if ProjectionHeader.of(projection_artifact).method == "components":
        raise UsageError(
            f"{projection} is a component graph: the assumptions are about principal components",
            hint="check them against a projection from `pillar fit-pca` without --components",
        )
    return PublicPCA.from_artifact(projection_artifact), projection_artifact.ref()

"""pillar gsd: rank candidate public datasets by gradient subspace distance to the private one."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import typer

from pillar_cli import artifacts
from pillar_cli.artifacts.gsd import gsd_artifact
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
    warn,
)
from pillar_cli.cli.progress import progress_bar
from pillar_cli.gsd.probes import ProbeSpec
from pillar_cli.gsd.ranking import prepare
from pillar_cli.gsd.releases import DPSettings


@cli_errors(flags={"epsilon": "--dp-eps", "delta": "--dp-delta", "mechanism": "--dp-mechanism"})
def gsd(
    ctx: typer.Context,
    private: str = typer.Option(
        ..., "--private", help="Private embeddings FILE:SPLIT (default split: private)."
    ),
    public: list[str] = typer.Option(
        ..., "--public", help="Candidate public embeddings FILE:SPLIT (repeatable)."
    ),
    out: Path = typer.Option(..., "-o", "--out", help="GSD artifact to write."),
    k: int = typer.Option(8, min=1, help="Dimension of the gradient subspaces."),
    probe: str = typer.Option("linear", help="linear (any embeddings), cnn or timm:NAME (pixel embeddings)."),
    trainable: list[str] = typer.Option(
        [],
        "--trainable",
        help="Image probes: differentiate only these parameters (name, prefix "
        "such as fc or layer4.2.conv3, or glob; repeatable). Default: cnn all, timm the classifier.",
    ),
    probe_weights: Path | None = typer.Option(
        None, "--probe-weights", help="timm probe: backbone weights file (default: seeded init)."
    ),
    probe_size: int | None = typer.Option(
        None, "--probe-size", min=8, help="Image probes: resize images to this square size."
    ),
    max_samples: int = typer.Option(2000, min=2, help="Rows per dataset (seeded subsample)."),
    seed: int = typer.Option(0, help="Seed of the probe initialisation, random labels and subsamples."),
    dp_eps: float | None = typer.Option(None, "--dp-eps", help="DP-GSD: ε of the private subspace release."),
    dp_delta: float = typer.Option(1e-5, "--dp-delta", help="δ of DP-GSD (gauss); below 1/n_private."),
    dp_mechanism: str = typer.Option(
        "gauss",
        "--dp-mechanism",
        help="gauss: Analyze-Gauss, (ε, δ)-DP, any size; bingham: exponential "
        "mechanism, ε-DP, gradient dimension ≤ 2,000.",
    ),
    gibbs_sweeps: int = typer.Option(20, "--gibbs-sweeps", min=1, help="bingham with k > 1: Gibbs sweeps."),
    clip: float = typer.Option(1.0, help="DP-GSD: per-row clipping norm of private gradients."),
    noise_seed: int | None = NoiseSeedOption,
    allow_private_labels: bool = typer.Option(
        False, "--allow-private-labels", help="Accept a private split as a candidate (recorded and printed)."
    ),
    normalize_rows: bool = typer.Option(
        False,
        "--normalize-rows",
        help="Scale every gradient row to unit norm "
        "before the SVD (the GSD authors' released script; the paper's text does not).",
    ),
    probe_bias: bool = typer.Option(
        True,
        "--probe-bias/--no-probe-bias",
        help="Differentiate the probe's biases (the authors' released script freezes them).",
    ),
    config: str | None = ConfigOption,
    force: bool = ForceOption,
    as_json: bool = JsonOption,
) -> None:
    """Rank candidate public datasets by GSD to the private data: smaller is closer, better for PILLAR.

    Example: pillar gsd --private emb.h5:private --public a.h5:public --public b.h5:public -o gsd.h5

    Example (images): pillar gsd --probe cnn --private pix.h5 --public other_pix.h5:public -o gsd.h5
    """
    check_output(out, [artifacts.parse_ref(p)[0] for p in [private, *public]], force=force)
    spec = dataclasses.replace(
        ProbeSpec.parse(probe, trainable, probe_weights, probe_size), trainable_bias=probe_bias
    )
    # rows read as sampled
    private_split = artifacts.read_split(private, default_split="private", on_disk=True)
    candidates = [artifacts.read_split(p, default_split="public", on_disk=True) for p in public]
    dp = (
        None
        if dp_eps is None
        else DPSettings(dp_eps, dp_delta, clip, dp_mechanism, gibbs_sweeps, noise_source(noise_seed))
    )
    job = prepare(
        private_split,
        candidates,
        public,
        spec,
        k=k,
        max_samples=max_samples,
        seed=seed,
        dp=dp,
        allow_private_labels=allow_private_labels,
        normalize_rows=normalize_rows,
    )
    with progress_bar("per-sample gradients", job.plan.gradient_rows) as advance:
        ranking = job.run(advance)
    save(
        ctx,
        out,
        gsd_artifact(ranking.distances, public, ranking.rows, ranking.settings, ranking.ledger),
        [private_split.ref, *[c.ref for c in candidates]],
    )
    for message in ranking.settings["warnings"]:
        warn(message)
    if as_json:
        return print_json({"ranking": ranking.rows, "settings": ranking.settings})
    print_table(
        f"GSD to {private} (k={k}; {ranking.settings['privacy']})",
        ranking.rows,
        ["rank", "candidate", "gsd"],
        {"gsd": ".4f"},
    )

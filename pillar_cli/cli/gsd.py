"""pillar gsd: rank candidate public datasets by gradient subspace distance to the private one."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import numpy as np
import typer

from pillar_cli import artifacts
from pillar_cli.artifacts import Artifact
from pillar_cli.cli.common import (ConfigOption, JsonOption, check_output, cli_errors, print_json, print_table,
                                   save)
from pillar_cli.errors import UsageError
from pillar_cli.gsd import DPSettings, gradient_subspace_distances
from pillar_cli.privacy import validate_budget

PRIVACY_NOTE = "non-private: uses the private split's features (not its labels; labels are random)"


@cli_errors
def gsd(
    ctx: typer.Context,
    private: str = typer.Option(..., "--private", help="Private embeddings FILE:SPLIT (default split: private)."),
    public: list[str] = typer.Option(..., "--public", help="Candidate public embeddings FILE:SPLIT (repeatable)."),
    out: Path = typer.Option(..., "-o", "--out", help="GSD artifact to write."),
    k: int = typer.Option(8, min=1, help="Dimension of the gradient subspaces."),
    max_samples: int = typer.Option(2000, min=2, help="Rows per dataset (seeded subsample)."),
    seed: int = typer.Option(0, help="Seed of the probe initialisation, random labels and subsamples."),
    dp_eps: Optional[float] = typer.Option(None, "--dp-eps", help="DP-GSD: (ε, δ)-DP private subspace (Analyze-Gauss)."),
    dp_delta: float = typer.Option(1e-5, "--dp-delta", help="δ of DP-GSD; below 1/n_private."),
    clip: float = typer.Option(1.0, help="DP-GSD: per-row clipping norm of private gradients."),
    config: Optional[str] = ConfigOption,
    as_json: bool = JsonOption,
) -> None:
    """Rank candidate public datasets by GSD to the private data: smaller is closer, better for PILLAR.

    Example: pillar gsd --private emb.h5:private --public a.h5:public --public b.h5:public -o gsd.h5
    """
    check_output(out, [artifacts.parse_ref(p)[0] for p in [private, *public]])
    private_split = artifacts.read_split(private, default_split="private")
    candidates = [artifacts.read_split(p, default_split="public") for p in public]
    num_classes = private_split.num_classes
    if num_classes < 2:
        raise UsageError(f"{private} declares {num_classes} classes; the probe needs at least two")
    dp = None
    if dp_eps is not None:
        validate_budget(dp_eps, dp_delta, len(private_split.features))
        dp = DPSettings(dp_eps, dp_delta, clip)
    distances, released = gradient_subspace_distances(private_split.features, [c.features for c in candidates],
                                                      num_classes, k, seed, max_samples, dp)
    order = np.argsort(distances, kind="stable")
    rows = [{"rank": r + 1, "candidate": public[i], "gsd": distances[i]} for r, i in enumerate(order)]
    settings = {"k": k, "max_samples": max_samples, "seed": seed, "probe": "linear, fixed init, random labels",
                "privacy": PRIVACY_NOTE if dp is None else
                f"(ε={dp.epsilon:g}, δ={dp.delta:g})-DP private subspace: Analyze-Gauss over all "
                f"{released.rows} private rows, clip {dp.clip:g}, noise σ={released.noise_std:.4g} "
                f"(multiplier {released.noise_multiplier:.4g}, PLD)"}
    attrs = {"candidates": public, "ranking": rows, "settings": settings}
    if dp is not None:
        attrs["ledger"] = {"mechanism": "Analyze-Gauss (symmetric Gaussian on GᵀG)", "epsilon": dp.epsilon,
                           "delta": dp.delta, "clip": dp.clip, "noise_multiplier": released.noise_multiplier,
                           "accountant": "pld", "protected_split": private_split.name}
    artifact = Artifact("gsd", {"distance": np.array(distances)}, attrs)
    save(ctx, out, artifact, [private_split.ref, *[c.ref for c in candidates]])
    if as_json:
        return print_json({"ranking": rows, "settings": settings})
    print_table(f"GSD to {private} (k={k}; {settings['privacy']})", rows, ["rank", "candidate", "gsd"],
                {"gsd": ".4f"})

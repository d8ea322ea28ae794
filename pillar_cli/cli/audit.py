"""pillar audit: the one-run canary audit of a training configuration, or an independent check of a model's ledger."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from pillar_cli import artifacts
from pillar_cli.audit.canaries import AuditSettings, audit_artifact, run_audit
from pillar_cli.audit.ledger import check_ledger
from pillar_cli.cli.common import (ConfigOption, ForceOption, JsonOption, check_output, cli_errors, int_list, print_json,
                                   print_table, save, stdout)
from pillar_cli.errors import PrivacyError, UsageError
from pillar_cli.linear.engine import RunConfig
from pillar_cli.methods.base import PrivacySettings, SweepData
from pillar_cli.methods.catalog import get_method
from pillar_cli.projection.components import read_projection

# test-only bugs: (noise scale, clipping-norm scale); no-clip keeps the noise's absolute scale σ·clip
PLANTED = {"none": (1.0, 1.0), "no-noise": (0.0, 1.0), "noise-tenth": (0.1, 1.0), "no-clip": (1.0, 1e6)}


@cli_errors
def audit(
    ctx: typer.Context,
    embeddings: Optional[str] = typer.Argument(None, help="Embeddings artifact whose private split the audited "
                                               "configuration trains on."),
    ledger: Optional[Path] = typer.Option(None, "--ledger", help="Instead: recompute every run's ε of this model "
                                          "artifact with dp-accounting and compare the steps run with those "
                                          "accounted."),
    projection: Optional[Path] = typer.Option(None, "--projection", "-p", help="Projection artifact from fit-pca."),
    out: Optional[Path] = typer.Option(None, "-o", "--out", help="Audit artifact to write."),
    method: str = typer.Option("pillar", help="pillar, dpsgd or dp-ls: the method audited."),
    k: str = typer.Option("40", help="Components ('full': no projection)."),
    eps: float = typer.Option(1.0, help="The configuration's target ε."),
    delta: float = typer.Option(1e-5, help="Its δ."),
    accountant: str = typer.Option("prv", help="Its accountant."),
    lr: float = typer.Option(0.1, help="Its learning rate."),
    steps: int = typer.Option(500, help="Its DP-SGD steps."),
    batch_size: int = typer.Option(512, help="Its expected batch size (scaled with the canaries, so that the "
                                   "sampling rate stays)."),
    clip: float = typer.Option(1.0, help="Its clipping norm."),
    seed: int = typer.Option(0, help="Seed of the training run and of the canaries."),
    canaries: int = typer.Option(1000, help="Number of canaries m, each included with probability 1/2."),
    guesses: Optional[int] = typer.Option(None, help="Guesses 'in' (and as many 'out'), fixed in advance; "
                                          "default m/10."),
    confidence: float = typer.Option(0.95, help="Confidence of the lower bound."),
    plant: str = typer.Option("none", hidden=True, help="Test the audit itself: no-noise, noise-tenth or no-clip."),
    config: Optional[str] = ConfigOption,
    force: bool = ForceOption,
    as_json: bool = JsonOption,
) -> None:
    """Audit a configuration's privacy with one training run and m canaries: a lower bound ε_lb on its ε at the
    stated confidence (Steinke, Nasr & Jagielski 2023); or check a model's ledger independently (--ledger).

    Example: pillar audit emb.h5 -p pca.h5 --method pillar --k 10 --eps 1 --lr 0.5 --steps 500 -o audit.h5

    Example: pillar audit --ledger model.h5
    """
    if ledger is not None:
        return _check_ledger(ledger, as_json)
    if embeddings is None or projection is None:
        raise UsageError("give the embeddings and --projection of the configuration to audit, or --ledger MODEL")
    if out is not None:
        check_output(out, [embeddings, str(projection)], force=force)
    if plant not in PLANTED:
        raise UsageError(f"unknown --plant '{plant}' (known: {', '.join(PLANTED)})")
    data, refs = _data(embeddings, projection)
    config = RunConfig(lr, steps, batch_size, seed)
    settings = AuditSettings(canaries, guesses, confidence, seed, *PLANTED[plant])
    (k_value,) = int_list(k, "--k", allow_full=True)
    result = run_audit(get_method(method), data, k_value, eps, config, PrivacySettings(delta, clip, accountant), settings)
    configuration = {"method": method, "k": k, "epsilon": eps, "delta": delta, "accountant": accountant, "lr": lr,
                     "steps": steps, "batch_size": batch_size, "clip": clip, "seed": seed}
    artifact = audit_artifact(result, settings, configuration, None if plant == "none" else plant)
    if out is not None:
        save(ctx, out, artifact, refs)
    _summary(artifact.attrs, as_json)


def _data(embeddings: str, projection: Path) -> tuple[SweepData, list[artifacts.InputRef]]:
    path, _ = artifacts.parse_ref(embeddings)
    private = artifacts.read_split(f"{path}:private")
    projection_artifact = artifacts.read(projection, "projection")
    artifacts.require_derived_from(projection_artifact, private.ref)
    pca = read_projection(projection_artifact)
    data = SweepData(pca, private.features, private.labels, None, None, private.num_classes)
    return data, [private.ref, projection_artifact.ref()]


def _summary(attrs: dict, as_json: bool) -> None:
    if as_json:
        return print_json(attrs)
    planted = "" if attrs["planted_bug"] == "none" else f" [PLANTED BUG: {attrs['planted_bug']}]"
    stdout.print(f"{attrs['configuration']['method']} at claimed ε = {attrs['epsilon_claimed']:.4g} "
                 f"(δ = {attrs['configuration']['delta']:g}){planted}: {attrs['correct']} of {attrs['guesses']} "
                 f"guesses right over {attrs['canaries']} canaries → ε ≥ {attrs['epsilon_lower_bound']:.3f} at "
                 f"{attrs['confidence']:.0%} confidence ({attrs['ratio']:.2f} of the claim)")


def _check_ledger(path: Path, as_json: bool) -> None:
    checks = check_ledger(artifacts.read(path, "model"))
    rows = [{**{key: getattr(c, key) for key in ("run", "method", "k", "epsilon_target", "seed", "epsilon_claimed",
                                                 "epsilon_recomputed", "steps_accounted", "steps_run", "how")},
             "status": "; ".join(c.problems) or "ok"} for c in checks]
    if as_json:
        print_json({"model": str(path), "runs": rows})
    else:
        print_table(f"{path}: {len(rows)} runs, ε recomputed with dp-accounting", rows,
                    ["run", "method", "k", "epsilon_target", "seed", "epsilon_claimed", "epsilon_recomputed",
                     "steps_accounted", "steps_run", "status"], {"epsilon_claimed": ".4g", "epsilon_recomputed": ".4g"})
    flagged = [c for c in checks if c.problems]
    if flagged:
        raise PrivacyError(f"{len(flagged)} of {len(checks)} runs of {path} fail the ledger check (first: run "
                           f"{flagged[0].run}: {flagged[0].problems[0]})")

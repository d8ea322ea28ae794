"""pillar audit: the one-run canary audit of a training configuration, an independent check of a model's ledger, or
the neighbouring-datasets check of what a pipeline ships."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any, Optional

import typer

from pillar_cli import artifacts
from pillar_cli.audit.canaries import AuditSettings, audit_artifact, audit_summary, run_audit
from pillar_cli.audit.ledger import check_ledger
from pillar_cli.audit.white_box import SharedNoise, run_white_box_audit, white_box_artifact
from pillar_cli.cli.boundary import cli_errors
from pillar_cli.cli.common import (
    ConfigOption,
    ForceOption,
    JsonOption,
    NoiseSeedOption,
    check_output,
    float_list,
    int_list,
    noise_source,
    print_json,
    print_table,
    save,
    stdout,
)
from pillar_cli.cli.method_flags import method_flags
from pillar_cli.cli.neighbours import check_neighbours
from pillar_cli.errors import PrivacyError, UsageError
from pillar_cli.linear.engine import RunConfig
from pillar_cli.methods.base import Method, PrivacySettings, SweepData
from pillar_cli.methods.catalog import DEFAULT_METHOD, auditable, get_method
from pillar_cli.projection.components import read_projection
from pillar_cli.randomness import NOT_PRIVATE_NOTE

# test-only bugs: (noise scale, clipping-norm scale); no-clip keeps the noise's absolute scale σ·clip
PLANTED = {"none": (1.0, 1.0), "no-noise": (0.0, 1.0), "noise-tenth": (0.1, 1.0), "no-clip": (1.0, 1e6)}


@method_flags(auditable())
@cli_errors
def audit(
    ctx: typer.Context,
    embeddings: Optional[str] = typer.Argument(None, help="Embeddings artifact whose private split the audited "
                                               "configuration trains on."),
    ledger: Optional[Path] = typer.Option(None, "--ledger", help="Instead: recompute every run's ε of this model "
                                          "artifact with dp-accounting and compare the steps run with those "
                                          "accounted; or a release's stated ε from its event tree alone."),
    projection: Optional[Path] = typer.Option(None, "--projection", "-p", help="Projection artifact from fit-pca."),
    out: Optional[Path] = typer.Option(None, "-o", "--out", help="Audit artifact to write."),
    method: str = typer.Option(DEFAULT_METHOD, help=f"The method audited: {', '.join(auditable())}."),
    k: str = typer.Option("40", help="Components ('full': no projection)."),
    eps: str = typer.Option("1", help="The configuration's target ε (--white-box: a comma list, e.g. 1,4: one head "
                            "per ε in the attacked file)."),
    delta: float = typer.Option(1e-5, help="Its δ."),
    accountant: str = typer.Option("prv", help="Its accountant."),
    lr: str = typer.Option("0.1", help="Its learning rate (--white-box: a comma list: one head per ε and lr)."),
    steps: int = typer.Option(500, help="Its DP-SGD steps."),
    batch_size: str = typer.Option("512", help="Its expected batch size (scaled with the canaries, so that the "
                                   "sampling rate stays); all = every row in every step."),
    clip: float = typer.Option(1.0, help="Its clipping norm."),
    seed: int = typer.Option(0, help="Seed of the training run and of the canaries."),
    canaries: int = typer.Option(1000, help="Number of canaries m, each included with probability 1/2."),
    guesses: Optional[int] = typer.Option(None, help="Guesses 'in' (and as many 'out'), fixed in advance; "
                                          "default m/10."),
    confidence: float = typer.Option(0.95, help="Confidence of the lower bound."),
    neighbours: bool = typer.Option(False, "--neighbours", help="Instead: embed the embeddings' source again as they "
                                    "record it, as is and less one private record, then run fit-pca → train-private "
                                    "→ release of every private cell → export --runs times a side, and report every "
                                    "value of the shipped files that is the same in every run of a side and differs "
                                    "between the sides (a deterministic function of the private rows). Exits 5 if "
                                    "any is found."),
    train: str = typer.Option("", "--train", help="--neighbours: train-private's options, quoted, e.g. "
                              "\"--eps 0.1,1\" (default: its own defaults)."),
    fit_pca: str = typer.Option("", "--fit-pca", help="--neighbours: fit-pca's options, quoted (default: its own)."),
    export: str = typer.Option("onnx,torchscript,safetensors,hf", "--export", help="--neighbours: the export formats "
                               "checked, comma-separated ('' for none)."),
    runs: int = typer.Option(3, help="--neighbours: runs on each side. A value only noise moves can repeat by chance "
                             "when it takes few values (a k, a step count); more runs make that rarer."),
    remove_row: Optional[int] = typer.Option(None, help="--neighbours: the private row whose record is deleted from "
                                             "the source on the neighbouring side (default: the private record of "
                                             "the rarest label)."),
    remove_person: bool = typer.Option(False, "--remove-person", help="--neighbours: delete every record of that "
                                       "row's person (the person as the privacy unit)."),
    canary_rows: int = typer.Option(1, help="Rows per canary: above 1 each canary is a person of that many identical "
                                    "rows, in or out whole."),
    privacy_unit: str = typer.Option("row", help="The unit the audited configuration protects: row or person (each "
                                     "person's gradient sum clipped; the canaries are persons)."),
    workdir: Optional[Path] = typer.Option(None, help="--neighbours: where the runs are written and kept (default: "
                                           "a temporary folder, removed afterwards)."),
    white_box: bool = typer.Option(False, "--white-box", help="Attack the model FILE the configuration writes at "
                                   "every --eps and --lr (all heads, seeds, counts, the ledger): noise regenerated "
                                   "from any recorded seed, noise cancelled between heads; ε_lb per attack against "
                                   "what its heads claim. Exits 5 if any attack beats its claim."),
    noise_seed: Optional[int] = NoiseSeedOption,
    plant: str = typer.Option("none", hidden=True, help="Test the audit itself: no-noise, noise-tenth or no-clip; "
                              "--white-box: shared-noise."),
    config: Optional[str] = ConfigOption,
    force: bool = ForceOption,
    as_json: bool = JsonOption,
    **method_options: Any,
) -> None:
    """Audit a configuration's privacy with one training run and m canaries: a lower bound ε_lb on its ε at the
    stated confidence (Steinke, Nasr & Jagielski 2023); or check a model's ledger independently (--ledger).

    Example: pillar audit emb.h5 -p pca.h5 --method pillar --k 10 --eps 1 --lr 0.5 --steps 500 -o audit.h5

    Example: pillar audit emb.h5 -p pca.h5 --k 10 --eps 1,4 --lr 0.5 --steps 1 --batch-size all --white-box

    Example: pillar audit --ledger model.h5

    Example: pillar audit emb.h5 --neighbours --train="--eps 0.1,1" --export safetensors
    """
    if ledger is not None:
        return _check_ledger(ledger, as_json)
    if neighbours:
        return check_neighbours(embeddings, train, fit_pca, export, runs, remove_row, remove_person, workdir, as_json)
    if embeddings is None or projection is None:
        raise UsageError("give the embeddings and --projection of the configuration to audit, or --ledger MODEL")
    if out is not None:
        check_output(out, [embeddings, str(projection)], force=force)
    data, refs = _data(embeddings, projection)
    (k_value,) = int_list(k, "--k", allow_full=True)
    epsilons, lrs = float_list(eps, "--eps"), float_list(lr, "--lr")
    (batch,) = [size or len(data.private_x)
                for size in int_list(batch_size, "--batch-size", allow_full=True, word="all")]
    configs = [RunConfig(rate, steps, batch, seed) for rate in lrs]
    privacy = PrivacySettings(delta, clip, accountant, noise_source(noise_seed))
    audited = get_method(method)
    options = audited.make_options(method_options)
    configuration = {"method": method, **({"options": dataclasses.asdict(options)} if options else {}), "k": k,
                     "epsilon": eps, "delta": delta, "accountant": accountant, "lr": lr, "steps": steps,
                     "batch_size": batch, "clip": clip, "seed": seed, "plant": plant, "canary_rows": canary_rows,
                     "privacy_unit": privacy_unit}
    settings = AuditSettings(canaries, guesses, confidence, seed, rows_per_canary=canary_rows, unit=privacy_unit)
    audit_run = _white_box if white_box else _canary_audit
    audit_run(ctx, out, refs, audited, options, data, k_value, epsilons, configs, privacy, settings, configuration,
              as_json)


def _canary_audit(ctx: typer.Context, out: Path | None, refs: list, method: Method, options: Any, data: SweepData,
                  k: int | None, epsilons: list[float], configs: list[RunConfig], privacy: PrivacySettings,
                  settings: AuditSettings, configuration: dict, as_json: bool) -> None:
    """The one-run audit of one configuration (a planted bug, if any, tests the audit itself)."""
    plant = configuration["plant"]
    if plant not in PLANTED or len(epsilons) * len(configs) > 1:
        raise UsageError(f"unknown --plant '{plant}' (known: {', '.join(PLANTED)})" if plant not in PLANTED else
                         "one configuration to audit: a single --eps and --lr (or --white-box)")
    noise_scale, clip_scale = PLANTED[plant]
    settings = dataclasses.replace(settings, noise_scale=noise_scale, clip_scale=clip_scale)
    result = run_audit(method, data, k, epsilons[0], configs[0], privacy, settings, options=options)
    planted = None if plant == "none" else plant
    artifact = audit_artifact(result, settings, configuration, planted)
    if out is not None:
        save(ctx, out, artifact, refs)
    if as_json:
        return print_json(artifact.attrs)
    stdout.print(audit_summary(result, settings, method.name, privacy.delta, planted))
    print_table(f"its tests on the trade-off curve's axes ({settings.confidence:.0%} intervals): the guarantee allows "
                "at most tpr_bound at each FPR", [_on_axes(point) for point in artifact.attrs["points"]],
                ["share", "fpr", "tpr", "tpr_bound", "above_curve"], {"share": ".0%", "tpr_bound": ".3f"})


def _on_axes(point: dict) -> dict:
    """An audit test as a table row: its rates with their intervals."""
    return {**point, **{name: f"{point[name]:.3f} [{point[name + '_low']:.3f}, {point[name + '_high']:.3f}]"
                        for name in ("fpr", "tpr")}, "above_curve": "ABOVE" if point["above_curve"] else "under"}


def _white_box(ctx: typer.Context, out: Path | None, refs: list, method: Method, options: Any, data: SweepData,
               k: int | None, epsilons: list[float], configs: list[RunConfig], privacy: PrivacySettings,
               settings: AuditSettings, configuration: dict, as_json: bool) -> None:
    """The white-box audit, its table of attacks, and exit 5 when one beats the ε its heads claim."""
    if configuration["plant"] not in ("none", "shared-noise"):
        raise UsageError(f"unknown --plant '{configuration['plant']}' with --white-box (known: shared-noise)")
    if configuration["plant"] == "shared-noise":
        privacy = dataclasses.replace(privacy, noise=SharedNoise())
    result = run_white_box_audit(method, data, k, epsilons, configs, privacy, settings, options)
    artifact = white_box_artifact(result, settings, configuration)
    if out is not None:
        save(ctx, out, artifact, refs)
    rows = [vars(attack) | {"breaks": "BROKEN" if attack.breaks else "holds"} for attack in result.attacks]
    if as_json:
        print_json(artifact.attrs)
    else:
        print_table(f"white-box audit of the file's {len(epsilons) * len(configs)} heads (all together: ε = "
                    f"{result.epsilon_claimed:.4g}): {result.guesses} guesses over {settings.canaries} canaries, "
                    f"{settings.confidence:.0%} confidence over all attacks", rows,
                    ["name", "correct", "epsilon_lower_bound", "epsilon_claimed", "breaks"],
                    {"epsilon_lower_bound": ".3f", "epsilon_claimed": ".4g"})
    broken = [attack for attack in result.attacks if attack.breaks]
    if broken:
        raise PrivacyError(f"{len(broken)} attack(s) beat the ε their heads claim (first: {broken[0].name}, ε ≥ "
                           f"{broken[0].epsilon_lower_bound:.3f} against {broken[0].epsilon_claimed:.4g})"
                           + (f"; {NOT_PRIVATE_NOTE}" if result.reproducible else ""))


def _data(embeddings: str, projection: Path) -> tuple[SweepData, list[artifacts.InputRef]]:
    path, _ = artifacts.parse_ref(embeddings)
    private = artifacts.read_split(f"{path}:private")
    projection_artifact = artifacts.read(projection, "projection")
    artifacts.require_derived_from(projection_artifact, private.ref)
    pca = read_projection(projection_artifact)
    data = SweepData(pca, private.features, private.labels, None, None, private.num_classes, units=private.units)
    return data, [private.ref, projection_artifact.ref()]


def _check_ledger(path: Path, as_json: bool) -> None:
    checks = check_ledger(artifacts.read(path, ("model", "classifier")))
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

"""pillar audit: four checks of a guarantee, one sub-command each. `ledger` recomputes every ε a model or
release claims; `canaries` trains a configuration once with m canaries for a lower bound on its ε; `white-box`
attacks the model file a configuration writes; `neighbours` reruns the pipeline on its source less one record
and reports what the shipped files hold deterministically."""

from __future__ import annotations

from pathlib import Path

import typer

from pillar_cli import artifacts
from pillar_cli.artifacts.model import UNCOUNTED
from pillar_cli.audit.canaries import AuditSettings, audit_artifact, audit_summary, run_audit
from pillar_cli.audit.ledger import check_ledger
from pillar_cli.audit.white_box import SharedNoise, run_white_box_audit, white_box_artifact
from pillar_cli.cli.audited import TRAIN_HELP, AuditedConfiguration, audited_configuration, show_flags
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
    stdout,
)
from pillar_cli.cli.help import PanelledCommand
from pillar_cli.cli.neighbours import check_neighbours
from pillar_cli.errors import PrivacyError, UsageError
from pillar_cli.methods.data import SweepData, sweep_data
from pillar_cli.projection.components import read_projection
from pillar_cli.randomness import NOT_PRIVATE_NOTE

# test-only bugs: (noise scale, clipping-norm scale); no-clip keeps the noise's absolute scale σ·clip
PLANTED = {"none": (1.0, 1.0), "no-noise": (0.0, 1.0), "noise-tenth": (0.1, 1.0), "no-clip": (1.0, 1e6)}

audit = typer.Typer(
    name="audit",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
    help="Check a guarantee: recompute a model's ledger, audit a training "
    "configuration with canaries or a white-box attack, or compare what a pipeline ships with and "
    "without one private record.",
)

Embeddings = typer.Argument(
    ..., help="Embeddings artifact whose private split the audited configuration trains on."
)
Projection = typer.Option(..., "--projection", "-p", help="Projection artifact from fit-pca.")
Train = typer.Option("", "--train", help=TRAIN_HELP, is_eager=True, callback=show_flags)
Canaries = typer.Option(1000, "--canaries", help="Number of canaries m, each included with probability 1/2.")
Guesses = typer.Option(
    None, "--guesses", help="Guesses 'in' (and as many 'out'), fixed in advance; default m/10."
)
Confidence = typer.Option(0.95, "--confidence", help="Confidence of the lower bound.")
Out = typer.Option(None, "-o", "--out", help="Audit artifact to write.")


@audit.command("ledger", cls=PanelledCommand)
@cli_errors
def ledger(
    path: Path = typer.Argument(..., help="A model artifact, or a classifier (a release)."),
    config: str | None = ConfigOption,
    as_json: bool = JsonOption,
) -> None:
    """Recompute every run's ε from its DP event tree with dp-accounting and compare the steps run with those
    accounted; for a release, its stated ε from its event tree alone. Exits 5 if a run fails.

    Example: pillar audit ledger model.h5
    """
    checks = check_ledger(artifacts.read(path, ("model", "classifier")))
    rows = [
        {
            **{
                key: getattr(c, key)
                for key in (
                    "run",
                    "method",
                    "k",
                    "epsilon_target",
                    "seed",
                    "epsilon_claimed",
                    "epsilon_recomputed",
                    "steps_accounted",
                    "how",
                )
            },
            "steps_run": None if c.steps_run == UNCOUNTED else c.steps_run,  # None: its method counts none
            "status": "; ".join(c.problems) or "ok",
        }
        for c in checks
    ]
    if as_json:
        print_json({"model": str(path), "runs": rows})
    else:
        print_table(
            f"{path}: {len(rows)} runs, ε recomputed with dp-accounting",
            rows,
            [
                "run",
                "method",
                "k",
                "epsilon_target",
                "seed",
                "epsilon_claimed",
                "epsilon_recomputed",
                "steps_accounted",
                "steps_run",
                "status",
            ],
            {"epsilon_claimed": ".4g", "epsilon_recomputed": ".4g"},
        )
    flagged = [c for c in checks if c.problems]
    if flagged:
        raise PrivacyError(
            f"{len(flagged)} of {len(checks)} runs of {path} fail the ledger check (first: run "
            f"{flagged[0].run}: {flagged[0].problems[0]})"
        )


@audit.command("canaries", cls=PanelledCommand)
@cli_errors
def canaries(
    ctx: typer.Context,
    embeddings: str = Embeddings,
    projection: Path = Projection,
    train: str = Train,
    canaries: int = Canaries,
    guesses: int | None = Guesses,
    confidence: float = Confidence,
    canary_rows: int = typer.Option(
        1,
        help="Rows per canary: above 1 each canary is a person of that many identical rows, in or out whole.",
    ),
    noise_seed: int | None = NoiseSeedOption,
    plant: str = typer.Option(
        "none", hidden=True, help="Test the audit itself: no-noise, noise-tenth or no-clip."
    ),
    config: str | None = ConfigOption,
    out: Path | None = Out,
    force: bool = ForceOption,
    as_json: bool = JsonOption,
) -> None:
    """Audit a configuration's privacy with one training run and m canaries: a lower bound ε_lb on its ε at
    the stated confidence (Steinke, Nasr & Jagielski 2023).

    Example: pillar audit canaries emb.h5 -p pca.h5 --train="--method pillar --k 10 --eps 1 --lr 0.5" -o
    audit.h5
    """
    if plant not in PLANTED:
        raise UsageError(f"unknown --plant '{plant}' (known: {', '.join(PLANTED)})")
    audited, data, refs = _inputs(embeddings, projection, train, out, force)
    if len(audited.epsilons) * len(audited.lrs) > 1:
        raise UsageError(
            "one configuration to audit: a single --eps and --lr in --train (or audit white-box)"
        )
    noise_scale, clip_scale = PLANTED[plant]
    settings = AuditSettings(
        canaries,
        guesses,
        confidence,
        audited.seed,
        rows_per_canary=canary_rows,
        unit=audited.privacy_unit,
        noise_scale=noise_scale,
        clip_scale=clip_scale,
    )
    privacy, rows = audited.privacy(noise_source(noise_seed)), len(data.private_x)
    result = run_audit(
        audited.method,
        data,
        audited.k,
        audited.epsilons[0],
        audited.configs(rows)[0],
        privacy,
        settings,
        options=audited.options,
    )
    planted = None if plant == "none" else plant
    artifact = audit_artifact(
        result, settings, {**audited.recorded(rows), "plant": plant, "canary_rows": canary_rows}, planted
    )
    if out is not None:
        save(ctx, out, artifact, refs)
    if as_json:
        return print_json(artifact.attrs)
    stdout.print(audit_summary(result, settings, audited.method.name, privacy.delta, planted))
    print_table(
        f"its tests on the trade-off curve's axes ({settings.confidence:.0%} intervals): the guarantee "
        "allows at most tpr_bound at each FPR",
        [_on_axes(point) for point in artifact.attrs["points"]],
        ["share", "fpr", "tpr", "tpr_bound", "above_curve"],
        {"share": ".0%", "tpr_bound": ".3f"},
    )


def _on_axes(point: dict) -> dict:
    """An audit test as a table row: its rates with their intervals."""
    return {
        **point,
        **{
            name: f"{point[name]:.3f} [{point[name + '_low']:.3f}, {point[name + '_high']:.3f}]"
            for name in ("fpr", "tpr")
        },
        "above_curve": "ABOVE" if point["above_curve"] else "under",
    }


@audit.command("white-box", cls=PanelledCommand)
@cli_errors
def white_box(
    ctx: typer.Context,
    embeddings: str = Embeddings,
    projection: Path = Projection,
    train: str = Train,
    canaries: int = Canaries,
    guesses: int | None = Guesses,
    confidence: float = Confidence,
    noise_seed: int | None = NoiseSeedOption,
    plant: str = typer.Option("none", hidden=True, help="Test the audit itself: shared-noise."),
    config: str | None = ConfigOption,
    out: Path | None = Out,
    force: bool = ForceOption,
    as_json: bool = JsonOption,
) -> None:
    """Attack the model FILE the configuration writes at every ε and lr of --train (all heads, seeds, counts,
    the ledger): noise regenerated from any recorded seed, noise cancelled between heads; ε_lb per attack
    against what its heads claim. Exits 5 if any attack beats its claim.

    Example: pillar audit white-box emb.h5 -p pca.h5 --train="--k 10 --eps 1,4 --lr 0.5 --steps 1 --batch-size
    all"
    """
    if plant not in ("none", "shared-noise"):
        raise UsageError(f"unknown --plant '{plant}' with white-box (known: shared-noise)")
    audited, data, refs = _inputs(embeddings, projection, train, out, force)
    privacy, rows = (
        audited.privacy(SharedNoise() if plant == "shared-noise" else noise_source(noise_seed)),
        len(data.private_x),
    )
    settings = AuditSettings(canaries, guesses, confidence, audited.seed, unit=audited.privacy_unit)
    result = run_white_box_audit(
        audited.method,
        data,
        audited.k,
        audited.epsilons,
        audited.configs(rows),
        privacy,
        settings,
        audited.options,
    )
    artifact = white_box_artifact(
        result, settings, {**audited.recorded(rows), "plant": plant, "canary_rows": 1}
    )
    if out is not None:
        save(ctx, out, artifact, refs)
    _report_attacks(result, settings, len(audited.epsilons) * len(audited.lrs), artifact, as_json)


def _report_attacks(
    result, settings: AuditSettings, heads: int, artifact: artifacts.Artifact, as_json: bool
) -> None:
    """The white-box audit's table of attacks, and exit 5 when one beats the ε its heads claim."""
    rows = [vars(attack) | {"breaks": "BROKEN" if attack.breaks else "holds"} for attack in result.attacks]
    if as_json:
        print_json(artifact.attrs)
    else:
        print_table(
            f"white-box audit of the file's {heads} heads (all together: ε = {result.epsilon_claimed:.4g}): "
            f"{result.guesses} guesses over {settings.canaries} canaries, {settings.confidence:.0%} "
            "confidence over all attacks",
            rows,
            ["name", "correct", "epsilon_lower_bound", "epsilon_claimed", "breaks"],
            {"epsilon_lower_bound": ".3f", "epsilon_claimed": ".4g"},
        )
    broken = [attack for attack in result.attacks if attack.breaks]
    if broken:
        raise PrivacyError(
            f"{len(broken)} attack(s) beat the ε their heads claim (first: {broken[0].name}, ε ≥ "
            f"{broken[0].epsilon_lower_bound:.3f} against {broken[0].epsilon_claimed:.4g})"
            + (f"; {NOT_PRIVATE_NOTE}" if result.reproducible else "")
        )


def _inputs(
    embeddings: str, projection: Path, train: str, out: Path | None, force: bool
) -> tuple[AuditedConfiguration, SweepData, list[artifacts.InputRef]]:
    """The configuration, the private split it trains on and the projection it reads (checked to be fitted on
    those embeddings' public split)."""
    audited = audited_configuration(train)
    if out is not None:
        check_output(out, [embeddings, str(projection)], force=force)
    path, _ = artifacts.parse_ref(embeddings)
    private = artifacts.read_split(f"{path}:private")
    projection_artifact = artifacts.read(projection, "projection")
    artifacts.require_derived_from(projection_artifact, private.ref)
    pca = read_projection(projection_artifact)
    data = sweep_data(pca, private, private.num_classes)
    return audited, data, [private.ref, projection_artifact.ref()]


@audit.command("neighbours", cls=PanelledCommand)
@cli_errors
def neighbours(
    embeddings: str = typer.Argument(
        ..., help="Embeddings artifact whose pipeline is checked: its source is embedded again as it records."
    ),
    train: str = typer.Option(
        "",
        "--train",
        help='train-private\'s options, quoted, e.g. "--eps 0.1,1" (default: its own defaults).',
    ),
    fit_pca: str = typer.Option("", "--fit-pca", help="fit-pca's options, quoted (default: its own)."),
    export: str = typer.Option(
        "onnx,torchscript,safetensors,hf",
        "--export",
        help="The export formats checked, comma-separated ('' for none).",
    ),
    runs: int = typer.Option(
        3,
        help="Runs on each side. A value only noise moves can repeat by chance "
        "when it takes few values (a k, a step count); more runs make that rarer.",
    ),
    remove_row: int | None = typer.Option(
        None,
        help="The private row whose record is deleted from the "
        "source on the neighbouring side (default: the private record of the rarest label).",
    ),
    remove_person: bool = typer.Option(
        False,
        "--remove-person",
        help="Delete every record of that row's person (the person as the privacy unit).",
    ),
    workdir: Path | None = typer.Option(
        None, help="Where the runs are written and kept (default: a temporary folder, removed afterwards)."
    ),
    config: str | None = ConfigOption,
    as_json: bool = JsonOption,
) -> None:
    """Embed the embeddings' source again as they record it, as is and less one private record, then run
    fit-pca → train-private → release of every private cell → export --runs times a side, and report every
    value of the shipped files that is the same in every run of a side and differs between the sides (a
    deterministic function of the private rows). Exits 5 if any is found.

    Example: pillar audit neighbours emb.h5 --train="--eps 0.1,1" --export safetensors
    """
    check_neighbours(embeddings, train, fit_pca, export, runs, remove_row, remove_person, workdir, as_json)

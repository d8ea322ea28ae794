"""pillar finetune / pillar pretrain: whole networks trained on pixel images — DP-SGD on the private split
(from a pre-trained network or from scratch), and non-private pre-training on a public labelled split."""

from __future__ import annotations

import math
from pathlib import Path

import typer

from pillar_cli import artifacts
from pillar_cli.cli.boundary import cli_errors
from pillar_cli.cli.common import (
    ConfigOption,
    ForceOption,
    JsonOption,
    NoiseSeedOption,
    NPublicOption,
    check_output,
    float_list,
    int_list,
    noise_source,
    print_json,
    print_table,
    save,
)
from pillar_cli.cli.progress import progress_bar
from pillar_cli.devices import resolve_device
from pillar_cli.errors import DataError
from pillar_cli.finetune import (
    FinetuneConfig,
    Pretrained,
    check_disjoint,
    network_spec,
    networks_artifact,
    pretrained,
    train_networks,
)
from pillar_cli.methods.inputs import validation_split
from pillar_cli.privacy import require_public_start

ArchOption = typer.Option(
    None,
    "--arch",
    help="cnn (the GSD paper's small CNN), cnn:WIDTH (its channels × WIDTH) "
    "or a timm model name (BatchNorm → GroupNorm); default cnn, or the --weights network's.",
)
DeviceOption = typer.Option("auto", help="auto (CUDA when present), cpu, cuda, cuda:N.")


@cli_errors
def finetune(
    ctx: typer.Context,
    embeddings: str = typer.Argument(
        ..., help="Pixels-embeddings artifact (reads 'private', and 'val' if present)."
    ),
    out: Path = typer.Option(
        ..., "-o", "--out", help="Model artifact to write (one network per ε and seed)."
    ),
    weights: Path | None = typer.Option(
        None,
        help="Start from this network pre-trained on public data (a pillar "
        "pretrain artifact): method 'finetune'. Without it: 'scratch'.",
    ),
    arch: str | None = ArchOption,
    eps: str = typer.Option("1", help="Target ε values, comma-separated; 'inf' = non-private."),
    delta: float = typer.Option(
        1e-5, help="Target δ; must be below 1/ñ, ñ the released count of training rows."
    ),
    n_public: bool = NPublicOption,
    lr: float = typer.Option(0.5, help="Learning rate (SGD)."),
    steps: int = typer.Option(100, help="DP-SGD steps (logical batches)."),
    batch_size: int = typer.Option(256, help="Expected (Poisson) logical batch size."),
    clip: float = typer.Option(1.0, help="Per-sample gradient clipping norm (over all weights)."),
    momentum: float = typer.Option(0.0, min=0.0, max=0.999, help="Heavy-ball momentum."),
    seed: str = typer.Option(
        "0",
        help="Seeds, comma-separated: repetitions and the initialisation of scratch networks "
        "(public); never the batches or the noise.",
    ),
    noise_seed: int | None = NoiseSeedOption,
    accountant: str = typer.Option("prv", help="prv (default), rdp, pld, or gdp (an approximation)."),
    grad_sample_mode: str = typer.Option(
        "hooks",
        help="opacus per-sample clipping: hooks (per-sample gradients) or "
        "ghost (ghost clipping: norms only, a second backward pass).",
    ),
    max_physical_batch: int = typer.Option(128, help="Rows per forward/backward pass (BatchMemoryManager)."),
    private_fraction: float = typer.Option(
        1.0,
        min=0.0,
        max=1.0,
        help="Train on a seeded fraction of the private "
        "rows (Figure 2 of the paper); the ledger's n is the rows used.",
    ),
    device: str = DeviceOption,
    config: str | None = ConfigOption,
    force: bool = ForceOption,
    as_json: bool = JsonOption,
) -> None:
    """DP-SGD on every weight of a network, through opacus, for every ε and seed; ε by pillar's accountants.

    Example: pillar finetune emb.h5 --weights pretrained.h5 --eps 1,8 --seed 0,1,2 -o finetuned.h5

    Example: pillar finetune emb.h5 --arch cnn:4 --eps 1,8 --steps 300 -o scratch.h5
    """
    path, _ = artifacts.parse_ref(embeddings)
    check_output(out, [path, *([str(weights)] if weights else [])], force=force)
    private = artifacts.read_split(f"{path}:private").subsample(private_fraction)
    val = validation_split(path, configurations=1)
    start = None if weights is None else pretrained(artifacts.read(weights, "model"))
    if start is not None:
        check_disjoint(start, private)
    spec = network_spec(arch or (start.spec.architecture if start else "cnn"), private)
    settings = FinetuneConfig(
        math.nan,
        delta,
        steps,
        lr,
        batch_size,
        clip,
        momentum,
        accountant=accountant,
        grad_sample_mode=grad_sample_mode,
        max_physical_batch=max_physical_batch,
        noise=noise_source(noise_seed),
        n_public=n_public,
    )
    epsilons, seeds = float_list(eps, "--eps"), int_list(seed, "--seed", minimum=0)
    with progress_bar("DP fine-tuning", steps * len(epsilons) * len(seeds), "steps") as advance:
        records, states, count = train_networks(
            spec, start, private, val, epsilons, seeds, settings, str(resolve_device(device)), on_step=advance
        )
    artifact = networks_artifact(
        records, states, spec, private, settings, _rows(private, val, start), start, count, private_fraction
    )
    refs = [private.ref, *([val.ref] if val else []), *([start.model.ref()] if start else [])]
    save(ctx, out, artifact, refs)
    _report(out, records, as_json)


@cli_errors
def pretrain(
    ctx: typer.Context,
    labelled: str = typer.Argument(
        ..., help="A LABELLED public split FILE:SPLIT of pixels, e.g. digits.h5:test."
    ),
    out: Path = typer.Option(..., "-o", "--out", help="Model artifact to write (one network)."),
    arch: str | None = ArchOption,
    lr: float = typer.Option(0.5, help="Learning rate (SGD)."),
    steps: int = typer.Option(300, help="SGD steps."),
    batch_size: int = typer.Option(128, help="Expected (Poisson) batch size."),
    momentum: float = typer.Option(0.9, min=0.0, max=0.999, help="Heavy-ball momentum."),
    seed: int = typer.Option(0, min=0, help="Seed of the initialisation and the batches."),
    device: str = DeviceOption,
    force: bool = ForceOption,
    as_json: bool = JsonOption,
    config: str | None = ConfigOption,
) -> None:
    """Train a network WITHOUT privacy on a public labelled split, to fine-tune or embed with (--backbone
    network).

    Example: pillar pretrain digits.h5:test --arch cnn:4 --steps 500 -o pretrained.h5
    """
    path, _ = artifacts.parse_ref(labelled)
    check_output(out, [path], force=force)
    split = artifacts.read_split(labelled)
    require_public_start(
        labelled,
        split.name in ("private", "val")
        and "is a protected split (pre-training reads its labels without DP)",
    )
    if split.labels is None:
        raise DataError(
            f"{labelled} is unlabelled: pre-training reads the labels of a PUBLIC labelled split, without DP"
        )
    spec = network_spec(arch or "cnn", split)
    settings = FinetuneConfig(
        math.inf,
        steps=steps,
        lr=lr,
        batch_size=min(batch_size, len(split.labels)),
        clip=math.inf,
        momentum=momentum,
    )
    with progress_bar("pre-training", steps, "steps") as advance:
        records, states, count = train_networks(
            spec,
            None,
            split,
            None,
            [math.inf],
            [seed],
            settings,
            str(resolve_device(device)),
            method="pretrain",
            on_step=advance,
        )
    artifact = networks_artifact(
        records, states, spec, split, settings, {"public_labelled": split.index}, None, count
    )
    save(ctx, out, artifact, [split.ref])
    _report(out, records, as_json)


def _rows(private: artifacts.Split, val: artifacts.Split | None, start: Pretrained | None) -> dict:
    """The source rows the networks read labels of: private, val, and the pre-training rows of the same
    source."""
    rows = {"private": private.index, **({"val": val.index} if val is not None else {})}
    if start is not None and (pretraining := start.rows_of_source(private)) is not None:
        rows["public_labelled"] = pretraining
    return rows


def _report(out: Path, records: list, as_json: bool) -> None:
    rows = [
        {
            "method": r.key.method,
            "epsilon": r.key.epsilon,
            "seed": r.key.seed,
            "epsilon_spent": r.epsilon_spent,
            "noise_multiplier": r.noise_multiplier,
            "steps": r.key.steps,
            "val_accuracy": r.val_accuracy,
        }
        for r in records
    ]
    if as_json:
        return print_json({"output": str(out), "runs": rows})
    print_table(
        f"{out}: {len(rows)} networks",
        rows,
        ["method", "epsilon", "seed", "epsilon_spent", "noise_multiplier", "steps", "val_accuracy"],
        {"epsilon_spent": ".4g", "noise_multiplier": ".4g", "val_accuracy": ".3f"},
    )

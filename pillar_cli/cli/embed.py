"""pillar embed: a dataset source → frozen backbone → features per split."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from pillar_cli.backbones import BACKBONES, build_embedder
from pillar_cli.cli.common import (ConfigOption, JsonOption, check_output, cli_errors, print_json, print_table,
                                   invocation, progress_bar, save)
from pillar_cli.data import SOURCES, SourceOptions, SplitPlan, load_source, make_splits
from pillar_cli.embedding import FeatureStore, embed_splits
from pillar_cli.errors import Interrupted, UsageError


@cli_errors
def embed(
    ctx: typer.Context,
    out: Optional[Path] = typer.Option(None, "-o", "--out", help="Embeddings artifact to write (.h5)."),
    source: str = typer.Option("mnist5k", help="Dataset source (see --list-sources)."),
    path: Optional[Path] = typer.Option(None, help="Data on disk, for sources that read files."),
    param: list[str] = typer.Option([], help="Source parameter KEY=VALUE (repeatable), e.g. d=100."),
    limit: Optional[int] = typer.Option(None, min=1, help="Use at most this many rows of each part (seeded)."),
    fraction: Optional[float] = typer.Option(None, help="Use this fraction of each part (seeded; PCAM: 0.125)."),
    backbone: str = typer.Option("pixels", help="Registered backbone or any timm model name."),
    weights: Optional[Path] = typer.Option(None, help="Local state dict, checkpoint or .safetensors for the backbone."),
    trust_checkpoint: bool = typer.Option(False, "--trust-checkpoint", help="Allow full unpickling of --weights "
                                          "(Lightning checkpoints may need it; runs code from the file: trusted only)."),
    pretrained: bool = typer.Option(True, help="Use the backbone's pretrained weights (--no-pretrained: random)."),
    resize: Optional[int] = typer.Option(None, help="Resize the short side to this (default: backbone's config)."),
    crop: Optional[int] = typer.Option(None, help="Centre-crop size (default: backbone's input size)."),
    public_fraction: float = typer.Option(0.1, help="Fraction of the train part used as PUBLIC unlabelled data."),
    val_fraction: float = typer.Option(0.1, help="Fraction of the train part held out for validation."),
    test_fraction: float = typer.Option(0.2, help="Test fraction, for sources without their own test split."),
    seed: int = typer.Option(0, help="Seed of the split (and of synthetic sources)."),
    batch_size: int = typer.Option(256, min=1, help="Images per forward pass."),
    workers: int = typer.Option(0, min=0, help="DataLoader worker processes reading/decoding ahead of the model."),
    resume: bool = typer.Option(False, "--resume", help="Continue an interrupted run from OUT.partial."),
    device: str = typer.Option("auto", help="auto, cpu, cuda, cuda:1, ..."),
    precision: str = typer.Option("auto", help="auto (bf16 autocast on CUDA, fp32 on CPU), fp32 or bf16."),
    list_backbones: bool = typer.Option(False, "--list-backbones", help="Show the backbone registry and exit."),
    list_sources: bool = typer.Option(False, "--list-sources", help="Show the dataset sources and exit."),
    config: Optional[str] = ConfigOption,
    as_json: bool = JsonOption,
) -> None:
    """Embed a dataset with a frozen backbone into private / public / val / test features.

    The public split is stored WITHOUT labels: it is the unlabelled public data that fit-pca may use.

    Example: pillar embed --source mnist5k --backbone pixels -o emb.h5
    """
    if list_backbones or list_sources:
        registry = BACKBONES if list_backbones else SOURCES
        rows = [{"name": name, "description": spec.description} for name, spec in registry.items()]
        return print_json(rows) if as_json else print_table("backbones" if list_backbones else "sources", rows,
                                                            ["name", "description"])
    if out is None:
        raise UsageError("missing -o/--out: where to write the embeddings artifact")
    check_output(out)
    options = SourceOptions(path, _parse_params(param), seed)
    dataset = load_source(source, options).subsample(limit, fraction, seed)
    plan = SplitPlan(public_fraction, val_fraction, test_fraction, seed)
    splits = make_splits(len(dataset.inputs), 0 if dataset.test_inputs is None else len(dataset.test_inputs), plan)
    embedder = build_embedder(backbone, dataset.inputs.shape[1:], weights=weights, pretrained=pretrained,
                              resize=resize, crop=crop, device=device, trust_checkpoint=trust_checkpoint,
                              precision=precision, seed=seed)
    _, options_used = invocation(ctx)
    store = FeatureStore(out.with_name(out.name + ".partial"), options_used, {k: len(v) for k, v in splits.items()},
                         embedder.feature_dim, resume)
    try:
        with progress_bar(f"embedding with {backbone}", sum(len(ids) for ids in splits.values())) as advance:
            artifact = embed_splits(dataset, splits, embedder, plan, batch_size, store, advance, workers)
    except KeyboardInterrupt:
        store.close()
        raise Interrupted(f"interrupted; the rows done so far are kept in {store.path}",
                          hint="rerun the same command with --resume to continue") from None
    except BaseException:
        store.close()
        raise
    save(ctx, out, artifact)
    store.finish()
    rows = [{"split": name, "rows": len(ids), "labelled": name != "public", "dim": embedder.feature_dim}
            for name, ids in splits.items()]
    if as_json:
        return print_json({"output": str(out), "backbone": backbone, "source": source, "splits": rows})
    print_table(f"{out}: {source} embedded with {backbone}", rows, ["split", "rows", "labelled", "dim"])


def _parse_params(items: list[str]) -> dict[str, str]:
    params = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise UsageError(f"--param takes KEY=VALUE; got '{item}'")
        params[key.strip()] = value.strip()
    return params

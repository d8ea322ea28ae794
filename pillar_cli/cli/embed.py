"""pillar embed: a dataset source → frozen backbone → features per split."""

from __future__ import annotations

from pathlib import Path

import typer

from pillar_cli import artifacts
from pillar_cli.cli.boundary import cli_errors
from pillar_cli.cli.common import (
    ConfigOption,
    ForceOption,
    JsonOption,
    check_output,
    invocation,
    parse_shard,
    print_json,
    print_table,
    save,
    warn,
)
from pillar_cli.cli.progress import progress_bar
from pillar_cli.cli.sources import default_workers, parse_params
from pillar_cli.data import SOURCES
from pillar_cli.data.dicom import is_dicom, windowless
from pillar_cli.data.dicom_window import CT_PRESETS, FILE, Window
from pillar_cli.embedding.backbones import BACKBONES
from pillar_cli.embedding.distributed import merge_ranks, rank_device, rank_file, torchrun_shard
from pillar_cli.embedding.job import EmbeddingJob
from pillar_cli.embedding.request import EmbedRequest
from pillar_cli.embedding.shards import SHARD_KIND, ShardHeader, merge_shards
from pillar_cli.errors import UsageError
from pillar_cli.version import PROGRAM


@cli_errors
def embed(
    ctx: typer.Context,
    out: Path | None = typer.Option(None, "-o", "--out", help="Embeddings artifact to write (.h5)."),
    source: str = typer.Option("mnist5k", help="Dataset source (see --list-sources)."),
    path: Path | None = typer.Option(None, help="Data on disk, for sources that read files."),
    param: list[str] = typer.Option([], help="Source parameter KEY=VALUE (repeatable), e.g. d=100."),
    classes: str | None = typer.Option(
        None,
        help="The class set, declared: names comma-separated (labels name "
        "them by their text) or a file of one a line. Needed where the source "
        "declares none (npz/h5 without class_names, csv, manifest, webdataset).",
    ),
    classes_from_labels: bool = typer.Option(
        False,
        "--classes-from-labels",
        help="Read the class set off the labels "
        "of every row: a label only private rows hold then shows in every head "
        "(its statement lists it as not covered).",
    ),
    limit: int | None = typer.Option(
        None,
        min=1,
        help="Use at most this many rows of each part (those of the "
        "smallest keyed draws: deleting a record may let another in).",
    ),
    fraction: float | None = typer.Option(
        None, help="Use this fraction of each part (each row by its own keyed draw; PCAM: 0.125)."
    ),
    backbone: str = typer.Option("pixels", help="Registered backbone or any timm model name."),
    weights: Path | None = typer.Option(
        None, help="Local state dict, checkpoint or .safetensors for the backbone."
    ),
    trust_checkpoint: bool = typer.Option(
        False,
        "--trust-checkpoint",
        help="Allow full unpickling of --weights "
        "(Lightning checkpoints may need it; runs code from the file: trusted only).",
    ),
    pretrained: bool = typer.Option(
        True, help="Use the backbone's pretrained weights (--no-pretrained: random)."
    ),
    resize: int | None = typer.Option(
        None, help="Resize the short side to this (default: backbone's config)."
    ),
    crop: int | None = typer.Option(None, help="Centre-crop size (default: backbone's input size)."),
    public_fraction: float | None = typer.Option(
        None,
        help="Fraction of the train part used as PUBLIC unlabelled "
        "data, without protection (default 0.1; a source naming persons: only when given).",
    ),
    val_fraction: float = typer.Option(0.1, help="Fraction of the train part held out for validation."),
    test_fraction: float = typer.Option(0.2, help="Test fraction, for sources without their own test split."),
    no_public_split: bool = typer.Option(
        False,
        "--no-public-split",
        help="Allow an artifact without public rows (an evaluation-only set, e.g. --test-fraction 1).",
    ),
    split_from: Path | None = typer.Option(
        None,
        help="Each row's split named by you: a CSV of name,split rows (name: a file's path under --path, a "
        "sample's key), one split a line in row order, or a .npy of them; splits train, public, val, test. "
        "Statements say the splits were your choice; a file whose splits follow the labels is refused.",
    ),
    seed: int = typer.Option(
        0, help="Public seed of the split, keying each row's draw (and of synthetic sources)."
    ),
    batch_size: int = typer.Option(256, min=1, help="Images per forward pass."),
    workers: int | None = typer.Option(
        None,
        min=0,
        help="DataLoader worker processes decoding images ahead of "
        "the model (default: one per core for image files and lazily read "
        "sources, 0 for arrays in memory). The artifact does not depend on it.",
    ),
    resume: bool = typer.Option(False, "--resume", help="Continue an interrupted run from OUT.partial."),
    device: str = typer.Option("auto", help="auto, cpu, cuda, cuda:1, ..."),
    precision: str = typer.Option("auto", help="auto (bf16 autocast on CUDA, fp32 on CPU), fp32 or bf16."),
    runtime: str = typer.Option(
        "auto",
        help="What runs a timm backbone: auto (ONNX Runtime for fp32 on the CPU when "
        "onnxruntime is installed: the same features, 1.6-3x faster; else torch), torch, or onnxruntime.",
    ),
    shard: str = typer.Option(
        "0/1",
        help="Embed only shard i of n (i/n); merge the shard files with --merge. "
        "Under torchrun every rank takes its shard and rank 0 merges.",
    ),
    merge: bool = typer.Option(False, "--merge", help="Merge the shard files given as arguments into --out."),
    engine: str = typer.Option(
        "local",
        help="local (this process; torchrun ranks) or ray: a Ray Data pipeline on a "
        "cluster (images decoded by CPU tasks, the backbone in a pool of actors, a GPU each "
        "where it has GPUs), the features written into --out here.",
    ),
    address: str | None = typer.Option(
        None,
        help="With --engine ray: the cluster (ray://HOST:10001 or HOST:6379; default: a local Ray instance).",
    ),
    actors: int | None = typer.Option(
        None,
        min=1,
        help="With --engine ray: backbone actors (default: one a GPU of "
        "the cluster, else one a CPU but one, left to decoding).",
    ),
    shard_files: list[Path] | None = typer.Argument(
        None, help="With --merge: the shard files to merge.", show_default=False
    ),
    skip_bad: bool = typer.Option(
        False,
        "--skip-bad",
        help="Drop image files that cannot be decoded (listed in the "
        "artifact as skipped_files) instead of stopping at the first.",
    ),
    list_backbones: bool = typer.Option(
        False, "--list-backbones", help="Show the backbone registry and exit."
    ),
    list_sources: bool = typer.Option(False, "--list-sources", help="Show the dataset sources and exit."),
    config: str | None = ConfigOption,
    force: bool = ForceOption,
    as_json: bool = JsonOption,
) -> None:
    """Embed a dataset with a frozen backbone into private / public / val / test features.

    The public split is stored WITHOUT labels: it is the unlabelled public data that fit-pca may use.

    Example: pillar embed --source mnist5k --backbone pixels -o emb.h5

    Example (a Ray cluster): pillar embed --source image-folder --path /data/imgs --backbone resnet50 --engine
    ray --address ray://head:10001 -o emb.h5
    """
    if list_backbones or list_sources:
        return _list(
            BACKBONES if list_backbones else SOURCES, "backbones" if list_backbones else "sources", as_json
        )
    if out is None:
        raise UsageError("missing -o/--out: where to write the embeddings artifact")
    if merge or shard_files:
        return _merge(out, shard_files or [], merge, force, as_json)
    if engine != "local":
        return _embed_on_ray(ctx, out, engine, address, actors)
    distributed, shard_spec, target = _placement(out, shard, force)
    _refuse_conflicts(ctx, shard_spec)
    request = EmbedRequest.from_options(ctx.params, parse_params(param))
    dataset = request.dataset()
    job = EmbeddingJob.of(dataset, request.plan, shard_spec)
    embedder = request.embedder(job.dataset.inputs.shape[1:], rank_device(device, distributed))
    with progress_bar(
        f"embedding with {backbone}", sum(len(ids) for ids in job.rows.values()), "images"
    ) as advance:
        job.run(
            embedder,
            target,
            invocation(ctx)[1],
            lambda artifact: save(ctx, target, artifact),
            batch_size=batch_size,
            workers=default_workers(dataset) if workers is None else workers,
            resume=resume,
            on_batch=advance,
        )
    if distributed is not None:  # rank 0 merges the ranks' files and reports the merged artifact
        if not merge_ranks(out, *distributed, lambda path, merged: save(ctx, path, merged)):
            return
        target, job = out, EmbeddingJob.of(dataset, job.plan)
    _report(target, job, source, backbone, embedder.feature_dim, as_json)


def _refuse_conflicts(ctx: typer.Context, shard: tuple[int, int]) -> None:
    """Options that undo each other: --skip-bad with shards (the shards' splits would differ), a fraction
    given (on the command line) beside --split-from, which names every row's split."""
    if ctx.params["skip_bad"] and shard[1] > 1:
        raise UsageError(
            "--skip-bad drops rows from the splits, which shards of one embedding must not do",
            hint="embed without --shard (or torchrun), or without --skip-bad",
        )
    if ctx.params.get("split_from") is None:
        return
    given = [
        name
        for name in ("public_fraction", "val_fraction", "test_fraction")
        if getattr(ctx.get_parameter_source(name), "name", "DEFAULT") not in ("DEFAULT", "DEFAULT_MAP")
    ]
    if given:
        raise UsageError(
            f"--split-from names each row's split: {', '.join('--' + n.replace('_', '-') for n in given)} "
            "would draw splits it does not use"
        )


def _embed_on_ray(
    ctx: typer.Context, out: Path, engine: str, address: str | None, actors: int | None
) -> None:
    """--engine ray: the rows embedded by a Ray Data pipeline, written here (embedding/ray_engine.py)."""
    options = ctx.params
    if engine != "ray":
        raise UsageError(f"--engine takes local or ray; got '{engine}'")
    if torchrun_shard() or options["shard"] != "0/1" or options["resume"] or options["skip_bad"]:
        raise UsageError(
            "--engine ray embeds every row in one pipeline: without --shard, --resume, --skip-bad or torchrun"
        )
    check_output(out, force=options["force"])
    from pillar_cli.embedding.ray_engine import embed_on_ray  # Ray: only to run on it

    request = EmbedRequest.from_options(options, parse_params(options["param"]))
    job = EmbeddingJob.of(request.dataset(), request.plan)
    with progress_bar(
        f"embedding with {request.backbone} on Ray", sum(map(len, job.rows.values())), "images"
    ) as seen:
        written = embed_on_ray(
            request,
            job,
            invocation(ctx)[1],
            out,
            lambda artifact: save(ctx, out, artifact),
            address=address,
            actors=actors,
            device=options["device"],
            batch_size=options["batch_size"],
            on_rows=seen,
        )
    _report(out, job, request.source, request.backbone, written.attrs["feature_dim"], options["as_json"])


def _placement(out: Path, shard: str, force: bool) -> tuple[tuple[int, int] | None, tuple[int, int], Path]:
    """(torchrun rank and world or None, the shard this process embeds, the file it writes): under torchrun,
    its rank's shard into a rank file that rank 0 merges into OUT."""
    distributed = torchrun_shard()
    if distributed and shard != "0/1":
        raise UsageError("under torchrun each rank embeds its own shard: do not pass --shard")
    target = out if distributed is None else rank_file(out, *distributed)
    for written in {out, target}:
        check_output(written, force=force)
    return distributed, distributed or parse_shard(shard), target


def _list(registry: dict, what: str, as_json: bool) -> None:
    rows = [{"name": name, "description": spec.description} for name, spec in registry.items()]
    return print_json(rows) if as_json else print_table(what, rows, ["name", "description"])


def _note_windowless(files: list[str], window: Window | None) -> None:
    """DICOM files read by their own window where they record one: those that record none are read by their
    stored bit range, which another scanner's encoding of the same anatomy does not share."""
    if window is None or window.rule != FILE:
        return
    scans = [file for file in files if is_dicom(file)]
    if missing := windowless(scans):
        warn(
            f"{missing:,} of {len(scans):,} DICOM files record no VOI window: their grey levels span the "
            "stored bit range, so one anatomy stored at another depth or rescale reads otherwise; give every "
            f"file one window with --param window=C,W (or a CT preset: {', '.join(CT_PRESETS)})"
        )


def _report(target: Path, job: EmbeddingJob, source: str, backbone: str, dim: int, as_json: bool) -> None:
    rows = [
        {"split": name, "rows": len(ids), "labelled": name != "public", "dim": dim}
        for name, ids in job.rows.items()
    ]
    public = len(job.splits.get("public", ()))  # public: each row's draw is its own (or its person's)
    files = getattr(job.dataset.inputs, "files", None) or []
    if job.dataset.groups is None and files and all(is_dicom(file) for file in files):
        warn(
            "no DICOM file records a PatientID: each scan is its own privacy unit, so a patient with m scans "
            "is protected at about m·ε; name each scan's patient with --param groups=FILE.csv"
        )
    _note_windowless(files, getattr(job.dataset.inputs, "dicom_window", None))
    if public:
        warn(
            f"{public:,} records of your own source make the public split: they are used without protection "
            "(every statement made from this file says so)"
        )
    if as_json:
        return print_json(
            {
                "output": str(target),
                "backbone": backbone,
                "source": source,
                "splits": rows,
                "shard": list(job.shard),
                "unprotected_public_records": public,
            }
        )
    what = f"{target}" if job.shard[1] == 1 else f"{target} (shard {job.shard[0]}/{job.shard[1]})"
    print_table(f"{what}: {source} embedded with {backbone}", rows, ["split", "rows", "labelled", "dim"])


def _merge(out: Path, shard_files: list[Path], merge: bool, force: bool, as_json: bool) -> None:
    if not (merge and shard_files):
        raise UsageError(
            "--merge takes the shard files as arguments: pillar embed --merge part*.h5 -o emb.h5"
        )
    check_output(out, shard_files, force=force)
    shards = [artifacts.read(path, SHARD_KIND) for path in shard_files]
    command = [PROGRAM, "embed", "--merge", *map(str, shard_files), "--out", str(out)]
    artifacts.write(
        out,
        merge_shards(shards),
        inputs=[shard.ref() for shard in shards],
        config={"merge": [str(p) for p in shard_files]},
        command=command,
        force=force,
    )
    sizes = ShardHeader.of(shards[0]).split_sizes
    if as_json:
        return print_json({"output": str(out), "shards": [str(p) for p in shard_files], "split_sizes": sizes})
    print_table(
        f"{out}: {len(shards)} shards merged",
        [{"split": k, "rows": v} for k, v in sizes.items()],
        ["split", "rows"],
    )

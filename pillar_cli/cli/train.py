"""pillar train-private: DP-SGD linear heads on the top-k public components of the private split."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Optional

import typer

from pillar_cli import artifacts
from pillar_cli.artifacts.model import ONE_CONFIGURATION
from pillar_cli.cli.boundary import cli_errors
from pillar_cli.cli.common import (ConfigOption, ForceOption, JsonOption, NoiseSeedOption, NPublicOption,
                                   check_output, float_list, float_or_auto_list, int_list, noise_source,
                                   parse_shard, print_json, print_table, progress_bar, save, split_list, warn)
from pillar_cli.cli.method_flags import METHOD_LIST, method_flags
from pillar_cli.errors import MissingSplitError, UsageError
from pillar_cli.methods.accounted import AccountedSelection
from pillar_cli.methods.catalog import DEFAULT_METHOD, METHODS, get_method, options_by_method
from pillar_cli.methods.grid import AUTO, DEFAULT_BATCH, SweepGrid
from pillar_cli.methods.plan import SweepOptions, configurations_per_cell, plan_sweep, val_role
from pillar_cli.methods.rules import rule_attrs
from pillar_cli.methods.sweep import PrivacySettings, SweepData, run_plan, sweep_artifact
from pillar_cli.methods.warm_start import warm_start_weights
from pillar_cli.privacy import get_accountant, require_disjoint
from pillar_cli.privacy.count import RowCount
from pillar_cli.projection.components import read_projection
from pillar_cli.projection.public_choice import labelled_public_split, public_data_of


@method_flags(METHODS)
@cli_errors
def train_private(
    ctx: typer.Context,
    embeddings: str = typer.Argument(..., help="Embeddings artifact (reads its 'private' and 'val' splits)."),
    projection: Path = typer.Option(..., "--projection", "-p", help="Projection artifact from fit-pca."),
    out: Path = typer.Option(..., "-o", "--out", help="Model artifact to write."),
    method: str = typer.Option(DEFAULT_METHOD, help=f"Methods, comma-separated: {METHOD_LIST}."),
    ridge: str = typer.Option("auto", help="Closed-form heads' λ, comma-separated; auto = the method's default "
                              "(public-lda k·(σΔC/ñ)², the noise on a class mean, ñ its released noisy count; dp-ls "
                              "the noise's spectral scale)."),
    k: str = typer.Option("auto", help="Components, comma-separated; 'full' = no projection; auto = the default rule, "
                          "round(√(n·ε)) up to the projection's k_max. E.g. 5,10,full"),
    eps: str = typer.Option("1", help="Target ε values, comma-separated; 'inf' = non-private. E.g. 0.1,1,inf"),
    delta: float = typer.Option(1e-5, help="Target δ; must be below 1/ñ, ñ the released count of training rows."),
    n_public: bool = NPublicOption,
    lr: str = typer.Option("auto", help="Learning rates, comma-separated; auto = the default rule, n·ε/(32·steps) "
                           "(about ε·B/512, B the batch size; 0.1 without privacy)."),
    steps: str = typer.Option("auto", help="Numbers of DP-SGD steps, comma-separated; auto = the default rule, "
                              "max(100, ⌈16·n/B⌉) (noisy-sgd: Algorithm 1's n²)."),
    batch_size: str = typer.Option(str(DEFAULT_BATCH), help="Expected (Poisson) batch sizes, comma-separated; all = "
                                   "every private row in every step (full batch, sampling rate 1)."),
    seed: str = typer.Option("0", help="Seeds, comma-separated: repetitions (results report mean ± std over them) "
                             "and their public randomness (initialisation, a random projection); never the noise."),
    noise_seed: Optional[int] = NoiseSeedOption,
    momentum: float = typer.Option(0.0, min=0.0, max=0.999, help="Heavy-ball momentum (paper: 0)."),
    weight_decay: float = typer.Option(0.0, min=0.0, help="L2 weight decay (paper: 0)."),
    ema: float = typer.Option(0.0, help="DP-SGD methods: release the exponential moving average of the iterates "
                              "with this decay, e.g. 0.99 (post-processing: no privacy cost; 0 = the last iterate)."),
    clip: float = typer.Option(1.0, help="Per-sample gradient clipping norm."),
    accountant: str = typer.Option("prv", help="prv (default), rdp, pld, or gdp (an approximation)."),
    shard: str = typer.Option("0/1", help="Train only shard i of n (i/n) of the sweep; evaluate merges shards."),
    private_fraction: float = typer.Option(1.0, min=0.0, max=1.0, help="Train on a seeded fraction of the private "
                                           "rows (Figure 7 of the paper); the ledger's n is the rows used."),
    warm_start: Optional[Path] = typer.Option(None, help="Model artifact trained on PUBLIC labelled data: initial head."),
    select: str = typer.Option("val", help="How each (method, k, ε) cell chooses its run: val (best mean val "
                               "accuracy; NOT accounted in ε, the paper's protocol) or accounted (private selection "
                               "of Papernot & Steinke: a random number of trials, noisy val scores, the best "
                               "released; ε covers it)."),
    trials: str = typer.Option("auto", help="accounted: mean number of trials per cell and seed; auto = the number "
                               "of configurations."),
    trials_shape: str = typer.Option("1", help="accounted: distribution of the number of trials: a shape η > 0 of "
                                     "the truncated negative binomial (1: geometric), or poisson (tighter; with "
                                     "probability e^-μ no trial runs and the cell releases nothing)."),
    score_share: float = typer.Option(0.3, help="accounted: share of one trial's RDP spent on its noisy val score."),
    val: str = typer.Option("auto", help="What the labelled val split does: auto (with the default rule's one "
                            "configuration per cell nothing is chosen on it, so its rows train the heads beside the "
                            "private rows, inside ε; otherwise it chooses each cell's run), train, or hold-out (not "
                            "read)."),
    public_labelled: Optional[str] = typer.Option(None, "--public-labelled", help="adadps: a LABELLED public split "
                                                  "FILE:SPLIT (embedded separately) whose gradients set the "
                                                  "preconditioner; recorded, not protected."),
    other_public: bool = typer.Option(False, "--other-public", help="Accept a projection fitted on another public "
                                      "dataset embedded with the same backbone (Table 2(a) of the paper); recorded."),
    engine: str = typer.Option("fast", help="fast (exact, batched) or opacus (GradSampleModule reference; slow)."),
    device: str = typer.Option("auto", help="Fast engine's device: auto (CUDA when present), cpu, cuda, cuda:N. "
                               "With --noise-seed, CPU and CUDA runs share batches, not noise draws."),
    config: Optional[str] = ConfigOption,
    force: bool = ForceOption,
    as_json: bool = JsonOption,
    **method_options: Any,
) -> None:
    """Train DP linear classifiers for every (method, k, ε) and hyper-parameter; choose one run per cell.

    With nothing but --eps given, k, lr and steps follow the default rule and the val rows train the heads: the ε
    printed covers every choice.

    Example: pillar train-private emb.h5 -p pca.h5 --eps 0.1,1 -o model.h5

    Example: pillar train-private emb.h5 -p pca.h5 --k 5,10,40,full --eps 0.1,1,inf -o model.h5

    Example: pillar train-private emb.h5 -p pca.h5 --k 20 --eps 1 --lr 0.1,0.5,2 --steps 100,500 --select accounted
    -o model.h5
    """
    path, _ = artifacts.parse_ref(embeddings)
    check_output(out, [path, str(projection)], force=force)
    grid = SweepGrid.with_auto(methods=split_list(method, "--method"), epsilons=float_list(eps, "--eps"),
                               ks=AUTO if k == AUTO else int_list(k, "--k", allow_full=True),
                               lrs=AUTO if lr == AUTO else float_list(lr, "--lr"),
                               steps=AUTO if steps == AUTO else int_list(steps, "--steps"),
                               seeds=int_list(seed, "--seed", minimum=0),
                               batch_sizes=int_list(batch_size, "--batch-size", allow_full=True, word="all"),
                               momentum=momentum, weight_decay=weight_decay, ema=ema,
                               ridges=tuple(None if r == AUTO else r for r in float_or_auto_list(ridge, "--ridge")))
    data, refs, recorded = _inputs(path, projection, grid, private_fraction, warm_start, public_labelled,
                                   other_public, val, select == "accounted")
    privacy = _privacy(delta, clip, accountant, noise_seed, n_public)
    options = SweepOptions(parse_shard(shard), engine, device, options_by_method(method_options),
                           _selection(select, trials, trials_shape, score_share))
    plan = plan_sweep(data, grid, privacy, options)
    with progress_bar("DP-SGD", plan.total_steps(options.shard), "steps") as advance:
        result = run_plan(data, plan, privacy, options, on_steps=advance)
    trained_on = recorded.pop("trained_on")
    artifact = sweep_artifact(result, data.pca, privacy, data.num_classes, len(data.private_x), options,
                              **recorded)
    artifact.attrs.update(private_fraction=private_fraction, trained_on=trained_on, **rule_attrs(grid))
    save(ctx, out, artifact, refs)
    _report(out, len(result.runs), artifact, as_json)


def _privacy(delta: float, clip: float, accountant: str, noise_seed: int | None, n_public: bool) -> PrivacySettings:
    """The privacy settings; an accountant that is no upper bound is warned about."""
    if not get_accountant(accountant).upper_bound:
        warn(f"{get_accountant(accountant).description}: the reported ε is not a guarantee")
    return PrivacySettings(delta, clip, accountant, noise_source(noise_seed), n_public)


def _report(out: Path, runs: int, artifact: artifacts.Artifact, as_json: bool) -> None:
    if as_json:
        return print_json({"output": str(out), "selection": artifact.attrs["selection"],
                           "note": artifact.attrs["selection_note"]})
    how = ("private cells: accounted selection, inside ε" if artifact.attrs["selection_mode"] == "accounted"
           else "one configuration per cell: nothing selected" if all(
               cell["selected"] == ONE_CONFIGURATION for cell in artifact.attrs["selection"])
           else "selected on val (not accounted in ε)")
    trained_on = " + ".join(artifact.attrs["trained_on"])
    print_table(f"{out}: {runs} runs on {trained_on} ({artifact.attrs['n_private']:,} rows), {how}",
                artifact.attrs["selection"],
                ["method", "k", "epsilon", "lr", "steps", "batch_size", "val_accuracy_mean", "selected"],
                {"val_accuracy_mean": ".3f", "lr": ".4g"})


def _selection(select: str, trials: str, shape: str, score_share: float) -> AccountedSelection | None:
    if select not in ("val", "accounted"):
        raise UsageError(f"unknown --select '{select}' (known: val, accounted)")
    if select == "val":
        return None
    (mean,) = float_or_auto_list(trials, "--trials")
    (eta,) = [math.inf] if shape == "poisson" else float_list(shape, "--trials-shape")
    return AccountedSelection(None if mean == "auto" else mean, eta, score_share)


def _inputs(path: str, projection: Path, grid: SweepGrid, private_fraction: float, warm_start: Path | None,
            public_labelled: str | None, other_public: bool, val_asked: str, accounted: bool) -> tuple[
                SweepData, list[artifacts.InputRef], dict]:
    """The sweep's data from the artifacts (the projection from these embeddings' public split, a GSD's choice, or
    another public dataset if allowed; the val rows among the training rows when nothing is chosen on them), the
    input references the model records, and its rows, source, public data and training splits."""
    private = artifacts.read_split(f"{path}:private")
    public = artifacts.read_split(f"{path}:public")
    require_disjoint(private.index, public.index, path)  # the embeddings' own fault first, then the projection's
    projection_artifact = artifacts.read(projection, "projection")
    public_data = public_data_of(projection_artifact, private, other_public)
    pca = read_projection(projection_artifact)
    choices = configurations_per_cell(grid, len(pca.components_))
    role = val_role(val_asked, bool(grid.rules), choices, accounted)
    val = None if role == "none" else validation_split(path, choices, required=val_asked == "train")
    training = private.joined(val) if role == "train" and val else private
    validation = val if role == "select" else None
    training = training.subsample(private_fraction)
    for overridden in grid.for_rows(RowCount.exact(len(training.features))).overridden_rules():
        warn(overridden)
    initial = None if warm_start is None else warm_start_weights(artifacts.read(warm_start, "model"), pca, private.ref)
    uses_public = any(get_method(m).needs_public_rows for m in grid.methods)
    labelled = None if public_labelled is None else labelled_public_split(public_labelled, private)
    data = SweepData(pca, training.features, training.labels, validation and validation.features,
                     validation and validation.labels, private.num_classes,
                     public.features if uses_public else None, initial, training.index, public.index, path,
                     labelled and (labelled.features, labelled.labels))
    rows = {"private": training.index, **({"val": validation.index} if validation else {}),
            **({"public_labelled": labelled.index} if labelled and _same_source(labelled, private) else {})}
    recorded = {"rows": rows, "source_fingerprint": private.attrs.get("source_fingerprint"),
                "public_choice": projection_artifact.attrs.get("public_choice"), "public_data": public_data,
                "features": {**artifacts.feature_recipe(private.attrs), "class_names": private.attrs["class_names"]},
                "trained_on": training.name.split("+")}
    refs = [private.ref, *([val.ref] if val else []), projection_artifact.ref(), *([labelled.ref] if labelled else [])]
    return data, refs, recorded


def _same_source(one: artifacts.Split, other: artifacts.Split) -> bool:
    return one.attrs.get("source_fingerprint") == other.attrs.get("source_fingerprint")


def validation_split(path: str, configurations: int, required: bool = False) -> artifacts.Split | None:
    """The val split; it may be absent only when there is nothing to select (one configuration per cell) and
    nothing asked it to train."""
    try:
        return artifacts.read_split(f"{path}:val")
    except MissingSplitError:
        if required:
            raise UsageError(f"{path} has no val split to train on", hint="embed with --val-fraction > 0, or drop "
                             "--val train") from None
        if configurations > 1:
            raise UsageError(f"{path} has no val split, which selecting among {configurations} configurations per "
                             "(method, k, ε) needs", hint="embed with --val-fraction > 0, or give one configuration")
        return None

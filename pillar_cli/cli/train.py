"""pillar train-private: DP-SGD linear heads on the top-k public components of the private split."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from pillar_cli import artifacts
from pillar_cli.cli.boundary import cli_errors
from pillar_cli.cli.common import (
    ConfigOption,
    ForceOption,
    JsonOption,
    NoiseSeedOption,
    NPublicOption,
    TrackOption,
    check_output,
    save,
    track,
    warn,
)
from pillar_cli.cli.method_flags import method_flags
from pillar_cli.cli.progress import progress_bar
from pillar_cli.cli.sweep_options import (
    ACCOUNTANT,
    AT_FPR,
    BATCH_SIZE,
    CLIP,
    DELTA,
    DEVICE,
    DRY_RUN,
    EMA,
    ENGINE,
    EPS,
    LR,
    MAX_TPR,
    METHOD,
    MOMENTUM,
    OTHER_PUBLIC,
    PRIVACY_UNIT,
    PRIVATE_FRACTION,
    PUBLIC_LABELLED,
    RIDGE,
    SCORE_SHARE,
    SEED,
    SELECT,
    SHARD,
    STEPS,
    TRIALS,
    TRIALS_SHAPE,
    VAL,
    WARM_START,
    WEIGHT_DECAY,
    K,
    sweep_request,
    sweep_sources,
)
from pillar_cli.cli.sweep_tables import print_model, print_plan
from pillar_cli.methods.catalog import METHODS
from pillar_cli.methods.inputs import SweepInputs, SweepSources, read_sweep_inputs
from pillar_cli.methods.plan import plan_sweep
from pillar_cli.methods.request import SweepRequest
from pillar_cli.methods.sweep import run_plan
from pillar_cli.privacy import get_accountant
from pillar_cli.randomness import NOT_PRIVATE_NOTE


@method_flags(METHODS)
@cli_errors
def train_private(
    ctx: typer.Context,
    embeddings: str = typer.Argument(..., help="Embeddings artifact (reads its 'private' and 'val' splits)."),
    projection: Path = typer.Option(..., "--projection", "-p", help="Projection artifact from fit-pca."),
    out: Path = typer.Option(..., "-o", "--out", help="Model artifact to write."),
    method: str = METHOD,
    ridge: str = RIDGE,
    k: str = K,
    eps: str | None = EPS,
    max_tpr: float | None = MAX_TPR,
    at_fpr: float = AT_FPR,
    delta: str = DELTA,
    n_public: bool = NPublicOption,
    privacy_unit: str = PRIVACY_UNIT,
    lr: str = LR,
    steps: str = STEPS,
    batch_size: str = BATCH_SIZE,
    seed: str = SEED,
    noise_seed: int | None = NoiseSeedOption,
    momentum: float = MOMENTUM,
    weight_decay: float = WEIGHT_DECAY,
    ema: float = EMA,
    clip: float = CLIP,
    accountant: str = ACCOUNTANT,
    shard: str = SHARD,
    private_fraction: float = PRIVATE_FRACTION,
    warm_start: Path | None = WARM_START,
    select: str = SELECT,
    trials: str = TRIALS,
    trials_shape: str = TRIALS_SHAPE,
    score_share: float = SCORE_SHARE,
    val: str = VAL,
    public_labelled: str | None = PUBLIC_LABELLED,
    other_public: bool = OTHER_PUBLIC,
    engine: str = ENGINE,
    device: str = DEVICE,
    dry_run: bool = DRY_RUN,
    track_to: str = TrackOption,
    config: str | None = ConfigOption,
    force: bool = ForceOption,
    as_json: bool = JsonOption,
    **method_options: Any,
) -> None:
    """Train DP linear classifiers for every (method, k, ε) and hyper-parameter; choose one run per cell.

    With nothing but --eps given, k, lr and steps follow the default rule and the val rows train the heads:
    the ε printed covers every choice.

    Example: pillar train-private emb.h5 -p pca.h5 --eps 0.1,1 -o model.h5

    Example: pillar train-private emb.h5 -p pca.h5 --k 5,10,40,full --eps 0.1,1,inf -o model.h5

    Example: pillar train-private emb.h5 -p pca.h5 --max-tpr 0.05 --at-fpr 0.01 -o model.h5

    Example: pillar train-private emb.h5 -p pca.h5 --k 20 --eps 1 --lr 0.1,0.5,2 --steps 100,500 --select
    accounted -o model.h5
    """
    path, _ = artifacts.parse_ref(embeddings)
    check_output(out, [path, str(projection)], force=force)
    request = sweep_request(ctx.params)
    inputs = _read(request, path, projection, sweep_sources(ctx.params))
    plan = plan_sweep(inputs.data, request, preview=dry_run)
    if dry_run:
        return print_plan(plan, as_json)
    with progress_bar("DP-SGD", plan.total_steps(), "steps") as advance:
        result = run_plan(inputs.data, plan, on_steps=advance)
    artifact = inputs.model(result)
    save(ctx, out, artifact, inputs.refs)
    print_model(out, len(result.runs), artifact, as_json)
    track(track_to, "train-private", out, artifact)


def _read(request: SweepRequest, path: str, projection: Path, sources: SweepSources) -> SweepInputs:
    """The sweep's inputs, after warning of what weakens the printed guarantee (reproducible noise, an
    accountant that is no upper bound) and of each method's own step rule that given --steps replace."""
    if request.noise_seed is not None:
        warn(f"--noise-seed {request.noise_seed}: {NOT_PRIVATE_NOTE}")
    if not get_accountant(request.accountant).upper_bound:
        warn(f"{get_accountant(request.accountant).description}: the reported ε is not a guarantee")
    inputs = read_sweep_inputs(request, path, projection, sources)
    for overridden in inputs.overridden:
        warn(overridden)
    return inputs

"""train-private's sweep options — each flag's default and help — and their parsing into the library's request
(methods/request.py) and sources (methods/inputs.py): the command line's spelling of what `sweep()` takes."""

from __future__ import annotations

import math
from typing import Any

import typer

from pillar_cli.cli.common import float_list, float_or_auto_list, int_list, parse_shard, split_list
from pillar_cli.cli.method_flags import METHOD_LIST
from pillar_cli.methods.accounted import AccountedSelection
from pillar_cli.methods.catalog import DEFAULT_METHOD, options_by_method
from pillar_cli.methods.grid import AUTO, DEFAULT_BATCH
from pillar_cli.methods.inputs import SweepSources
from pillar_cli.methods.request import SweepRequest

METHOD = typer.Option(DEFAULT_METHOD, help=f"Methods, comma-separated: {METHOD_LIST}.")
RIDGE = typer.Option(
    "auto",
    help="Closed-form heads' λ, comma-separated; auto = the method's default "
    "(public-lda k·(σΔC/ñ)², the noise on a class mean, ñ its released noisy count; dp-ls "
    "the noise's spectral scale).",
)
K = typer.Option(
    "auto",
    help="Components, comma-separated; 'full' = no projection; auto = the default rule, "
    "round(√(n·ε)) up to the projection's k_max. E.g. 5,10,full",
)
EPS = typer.Option(
    None,
    help="Target ε values, comma-separated; 'inf' = non-private (default: 1, unless --max-tpr sets ε). "
    "E.g. 0.1,1,inf",
    show_default=False,
)
MAX_TPR = typer.Option(
    None,
    help="Instead of --eps: calibrate ε so that no membership attack on one unit reaches "
    "a true-positive rate above this at --at-fpr (the trade-off curve of each head's DP tree, "
    "privacy/risk_target.py). E.g. 0.05",
)
AT_FPR = typer.Option(0.01, help="The false-positive rate --max-tpr holds at.")
DELTA = typer.Option(
    "auto",
    help="Target δ, below 1/ñ (ñ the released count of training rows); auto = 1e-5, or "
    "0.1/ñ where that is smaller.",
)
LR = typer.Option(
    "auto",
    help="Learning rates, comma-separated; auto = the default rule, n·ε/(32·steps) "
    "(about ε·B/512, B the batch size; 2 without privacy).",
)
STEPS = typer.Option(
    "auto",
    help="Numbers of DP-SGD steps, comma-separated; auto = the default rule, "
    "max(100, ⌈16·n/B⌉) (noisy-sgd: Algorithm 1's n²).",
)
BATCH_SIZE = typer.Option(
    str(DEFAULT_BATCH),
    help="Expected (Poisson) batch sizes, comma-separated; all = "
    "every private row in every step (full batch, sampling rate 1).",
)
SEED = typer.Option(
    "0",
    help="Seeds, comma-separated: repetitions (results report mean ± std over them) "
    "and their public randomness (initialisation, a random projection); never the noise.",
)
MOMENTUM = typer.Option(0.0, min=0.0, max=0.999, help="Heavy-ball momentum (paper: 0).")
WEIGHT_DECAY = typer.Option(0.0, min=0.0, help="L2 weight decay (paper: 0).")
EMA = typer.Option(
    0.0,
    help="DP-SGD methods: release the exponential moving average of the iterates "
    "with this decay, e.g. 0.99 (post-processing: no privacy cost; 0 = the last iterate).",
)
CLIP = typer.Option(1.0, help="Per-sample gradient clipping norm.")
ACCOUNTANT = typer.Option("prv", help="prv (default), rdp, pld, or gdp (an approximation).")
SHARD = typer.Option("0/1", help="Train only shard i of n (i/n) of the sweep; evaluate merges shards.")
PRIVATE_FRACTION = typer.Option(
    1.0,
    min=0.0,
    max=1.0,
    help="Train on a seeded fraction of the private "
    "rows (Figure 7 of the paper); the ledger's n is the rows used.",
)
WARM_START = typer.Option(None, help="Model artifact trained on PUBLIC labelled data: initial head.")
SELECT = typer.Option(
    "val",
    help="How each (method, k, ε) cell chooses its run: val (best mean val "
    "accuracy; NOT accounted in ε, the paper's protocol) or accounted (private selection "
    "of Papernot & Steinke: a random number of trials, noisy val scores, the best released; ε covers it). "
    "It costs accuracy at small ε: on MNIST-5k at ε = 0.1 it reached 0.28-0.30 against 0.59-0.60 chosen on "
    "val (docs/benchmarks.md); the default rule (lr, steps auto) chooses inside ε for free.",
)
TRIALS = typer.Option(
    "auto", help="accounted: mean number of trials per cell and seed; auto = the number of configurations."
)
TRIALS_SHAPE = typer.Option(
    "1",
    help="accounted: distribution of the number of trials: a shape η > 0 of "
    "the truncated negative binomial (1: geometric), or poisson (tighter; with "
    "probability e^-μ no trial runs and the cell releases nothing).",
)
SCORE_SHARE = typer.Option(0.3, help="accounted: share of one trial's RDP spent on its noisy val score.")
VAL = typer.Option(
    "auto",
    help="What the labelled val split does: auto (with the default rule's one "
    "configuration per cell nothing is chosen on it, so its rows train the heads beside the "
    "private rows, inside ε; otherwise it chooses each cell's run), train, or hold-out (not read).",
)
PUBLIC_LABELLED = typer.Option(
    None,
    "--public-labelled",
    help="adadps: a LABELLED public split "
    "FILE:SPLIT (embedded separately) whose gradients set the preconditioner; recorded, not protected.",
)
OTHER_PUBLIC = typer.Option(
    False,
    "--other-public",
    help="Accept a projection fitted on another public "
    "dataset embedded with the same backbone (Table 2(a) of the paper); recorded.",
)
ENGINE = typer.Option("fast", help="fast (exact, batched) or opacus (GradSampleModule reference; slow).")
DEVICE = typer.Option(
    "auto",
    help="Fast engine's device: auto (CUDA when present), cpu, cuda, cuda:N. "
    "With --noise-seed, CPU and CUDA runs share batches, not noise draws.",
)
PRIVACY_UNIT = typer.Option(
    "auto",
    help="What the guarantee protects: row (one training row), person (all of one "
    "person's rows: DP-SGD samples persons and clips each person's gradient sum to --clip, "
    "the one-release and full-batch heads weight each row by 1/(its person's rows), the "
    "count of persons released), or auto (person where the embeddings name each row's person, else row).",
)
DRY_RUN = typer.Option(
    False,
    "--dry-run",
    help="Print every run's k, lr, steps, batch size, sampling rate and σ as "
    "the plan sets them, from the exact number of rows (nothing is released, trained or written).",
)


def sweep_request(params: dict[str, Any]) -> SweepRequest:
    """The request train-private's parsed options (click's `ctx.params`, method options included) say."""
    listed = {
        "k": lambda text: int_list(text, "--k", allow_full=True),
        "lr": lambda text: float_list(text, "--lr"),
        "steps": lambda text: int_list(text, "--steps"),
    }
    ruled = {name: AUTO if params[name] == AUTO else parse(params[name]) for name, parse in listed.items()}
    return SweepRequest(
        method=split_list(params["method"], "--method"),
        epsilon=None if params["eps"] is None else tuple(float_list(params["eps"], "--eps")),
        **ruled,
        seed=int_list(params["seed"], "--seed", minimum=0),
        batch_size=int_list(params["batch_size"], "--batch-size", allow_full=True, word="all"),
        ridge=tuple(None if r == AUTO else r for r in float_or_auto_list(params["ridge"], "--ridge")),
        select=_selection(params["select"], params["trials"], params["trials_shape"], params["score_share"]),
        shard=parse_shard(params["shard"]),
        method_options=options_by_method(params),
        delta=float_or_auto_list(params["delta"], "--delta")[0],
        **{
            name: params[name]
            for name in (
                "momentum",
                "weight_decay",
                "ema",
                "clip",
                "accountant",
                "noise_seed",
                "n_public",
                "val",
                "engine",
                "device",
                "privacy_unit",
                "max_tpr",
                "at_fpr",
            )
        },
    )


def sweep_sources(params: dict[str, Any]) -> SweepSources:
    """The files and rows train-private's parsed options add to its embeddings and projection."""
    return SweepSources(
        **{
            name: params[name]
            for name in ("private_fraction", "warm_start", "public_labelled", "other_public")
        }
    )


def _selection(select: str, trials: str, shape: str, score_share: float) -> str | AccountedSelection:
    """--select accounted with its trials' distribution and score share; any other word as it is (the request
    checks it)."""
    if select != "accounted":
        return select
    (mean,) = float_or_auto_list(trials, "--trials")
    (eta,) = [math.inf] if shape == "poisson" else float_list(shape, "--trials-shape")
    return AccountedSelection(None if mean == "auto" else mean, eta, score_share)

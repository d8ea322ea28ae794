"""pillar release: one private classifier out of a model's working file, with its privacy statement."""

from __future__ import annotations

from pathlib import Path

import typer

from pillar_cli import artifacts
from pillar_cli.artifacts.outputs import claim
from pillar_cli.cli.boundary import cli_errors
from pillar_cli.cli.common import (
    ConfigOption,
    ForceOption,
    JsonOption,
    SignOption,
    TrackOption,
    print_json,
    save,
    signed_output,
    stdout,
    track,
)
from pillar_cli.release import parse_cell, prevalence, release_classifier
from pillar_cli.release.signing import sign_file, signature_path


@cli_errors
def release(
    ctx: typer.Context,
    model: Path = typer.Argument(..., help="Model artifact from train-private (a working file: every head)."),
    out: Path = typer.Option(
        ..., "-o", "--out", help="Classifier artifact to write (one head and its statement)."
    ),
    cell: str | None = typer.Option(
        None,
        "--cell",
        help="The (method, k, ε) cell: method=NAME,k=K,eps=E, any of "
        "them; needed when the model holds several cells.",
    ),
    seed: int | None = typer.Option(
        None,
        "--seed",
        help="The repetition (train-private --seed) to release; "
        "default: the lowest (a choice that looks at nothing private).",
    ),
    prior: float | None = typer.Option(
        None,
        "--prior",
        help="A prevalence, e.g. 0.05 for a condition 5 % of patients have: the statement also says how well "
        "an attacker can guess such a yes/no attribute of one unit (default: not stated).",
    ),
    sign: Path | None = SignOption,
    track_to: str = TrackOption,
    force: bool = ForceOption,
    as_json: bool = JsonOption,
    config: str | None = ConfigOption,
) -> None:
    """Write ONE classifier: the run the model's selection chose for a cell, the public scaler and basis it
    reads through, class names, how its features were embedded, and its privacy statement (ε, δ, accountant,
    the DP event tree, what ε covers and does not). No row ids, val or test statistics, seeds or other heads,
    and nothing derived from the exact number of training rows: the sampling rate, σ and the rule read the
    count released with noise inside ε (ñ, in the statement), unless train-private was told --n-public, which
    the statement then says.

    Example: pillar release model.h5 --cell method=pillar,k=20,eps=1 -o classifier.h5

    Example: pillar release model.h5 -o classifier.h5 --sign signer.key.pem

    Example: pillar release model.h5 -o classifier.h5 --prior 0.05

    Example: pillar predict classifier.h5 emb.h5:test -o predictions.csv
    """
    signed_output(out, sign, [str(model)], force)
    prevalence(prior)
    classifier, chosen = release_classifier(artifacts.read(model, "model"), parse_cell(cell), seed, prior)
    save(ctx, out, classifier.to_artifact(), [])
    if sign is not None:
        claim(signature_path(out))  # taken back with the release if signing does not finish
        sign_file(out, sign)
    track(track_to, "release", out, classifier)
    statement = classifier.privacy
    if as_json:
        return print_json({"output": str(out), **chosen, "privacy": statement.to_attrs()})
    stdout.print(
        f"{out}: cell {chosen['cell']}, seed {chosen['seed']} ({_of_seeds(chosen['seeds'])}), "
        f"hyper-parameters chosen {chosen['selected']}"
    )
    stdout.print(
        f"ε = {statement.epsilon:.4g}, δ = {statement.delta:g} ({statement.accountant}) for "
        f"{statement.neighbouring}"
    )
    stdout.print("covers: " + "; ".join(statement.covers))
    stdout.print("does not cover: " + "; ".join(statement.not_covered))
    if statement.rests_on:
        stdout.print("rests on: " + "; ".join(statement.rests_on))
    if statement.risk_sentence:
        stdout.print("what it means: " + statement.risk_sentence)


def _of_seeds(seeds: list[int]) -> str:
    """The repetitions the seed was one of, in words."""
    return "its only repetition" if len(seeds) == 1 else f"of seeds {', '.join(map(str, seeds))}"

"""A model card for a release: the README.md of a Hugging Face model folder (`export --format hf`), whose YAML
front matter states the guarantee where a reader of model cards looks for it — ε, δ, the unit of privacy and
the neighbouring relation, the accountant, what ε covers and does not — and whose text says how the features
were made, what the head is, how to check the file, and the test metrics of an evaluation when one is
given."""

from __future__ import annotations

import json
import math
from pathlib import Path

import yaml

from pillar_cli.artifacts.classifier import Classifier, head_digest
from pillar_cli.artifacts.evaluation import Evaluation
from pillar_cli.artifacts.feature_recipe import FeatureRecipe
from pillar_cli.artifacts.statement import Statement
from pillar_cli.release.exported import HF_FILES, HF_SIGNATURE, HF_WEIGHTS, METADATA_KEYS, METRICS_KEY
from pillar_cli.version import PROGRAM


def card_front_matter(carried: dict, metrics: dict | None = None) -> dict:
    """The YAML front matter of the card: what a reader of model cards looks for, made from the statement."""
    statement = Statement.from_attrs(carried["privacy"])
    epsilon = statement.epsilon
    front = {
        "library_name": PROGRAM,
        "tags": ["differential-privacy", "linear-probe", PROGRAM],
        "differential_privacy": {
            "epsilon": epsilon if math.isfinite(epsilon) else None,
            "delta": statement.delta,
            "unit": statement.unit.described,
            "contribution_bound": statement.unit.bound,
            "neighbouring": statement.neighbouring,
            "accountant": statement.accountant,
            "epsilon_is_upper_bound": statement.epsilon_is_upper_bound,
            "covers": list(statement.covers),
            "not_covered": list(statement.not_covered),
            **({"rests_on": list(statement.rests_on)} if statement.rests_on else {}),
            **({"risk": statement.risk} if statement.risk else {}),
        },
    }
    features = FeatureRecipe.from_attrs(carried["features"])
    task = "image-classification" if features.reads_images else "tabular-classification"
    front |= {
        "license": "other",
        "pipeline_tag": task,
        **({"base_model": f"timm/{features.timm_id}"} if features.timm_id else {}),
    }
    if metrics is not None:  # the Hub's model-index: one result, its metrics by type
        front |= {
            "datasets": [str(metrics["dataset"])],
            "metrics": sorted(metrics["values"]),
            "model-index": [
                {
                    "name": f"{PROGRAM}-{carried['head']['method']}-k{carried['head']['k']}",
                    "results": [
                        {
                            "task": {"type": task},
                            "dataset": {
                                "name": str(metrics["dataset"]),
                                "type": str(metrics["dataset"]),
                                "split": metrics["split"],
                            },
                            "metrics": [
                                {
                                    "type": name,
                                    "value": value,
                                    "name": f"{name} ({metrics['split']}, mean of {metrics['seeds']})",
                                }
                                for name, value in metrics["values"].items()
                            ],
                        }
                    ],
                }
            ],
        }
    return front


def hf_config(carried: dict) -> str:
    """An hf folder's config.json: what the export carries (its statement, classes, head and recipe)."""
    return json.dumps(
        {"library_name": PROGRAM, **{key: carried[key] for key in METADATA_KEYS}},
        indent=2,
        ensure_ascii=False,
    )


def hf_folder_problem(folder: Path, carried: dict) -> str | None:
    """What in an hf folder says other than its weights' metadata: a card (front matter or text) or a
    config.json other than the ones the statement gives — each made again from it and compared whole, since
    hashes a forger can recompute prove nothing —, or a file the export did not write; None when nothing
    does."""
    card = (folder / "README.md").read_text(errors="replace") if (folder / "README.md").is_file() else ""
    if front_matter_of(card) != card_front_matter(carried, carried.get(METRICS_KEY)):
        return "its model card's front matter says other than the statement in its weights' metadata"
    if card != model_card(carried, carried.get(METRICS_KEY)):
        return "its model card's text says other than the statement in its weights' metadata"
    try:
        config = json.loads((folder / "config.json").read_text())
    except (OSError, ValueError):
        config = None
    if config != json.loads(hf_config(carried)):
        return "its config.json says other than the statement in its weights' metadata"
    extra = sorted(p.name for p in folder.iterdir() if p.name not in (HF_WEIGHTS, *HF_FILES, HF_SIGNATURE))
    return f"it holds {extra[0]}, which the export did not write" if extra else None


def front_matter_of(card: str) -> dict | None:
    """The YAML front matter a card's text opens with (None: it opens with none that reads)."""
    lines = card.splitlines()
    if not lines or lines[0] != "---" or "---" not in lines[1:]:
        return None
    try:
        front = yaml.safe_load("\n".join(lines[1 : lines.index("---", 1)]))
    except yaml.YAMLError:
        return None
    return front if isinstance(front, dict) else None


def model_card(carried: dict, metrics: dict | None = None) -> str:
    """The card of what an export carries (statement, class names, head, recipe); `metrics`: an evaluation's
    row for the released head's cell and the split it was measured on (see `evaluation_metrics`)."""
    statement, head = Statement.from_attrs(carried["privacy"]), carried["head"]
    features = FeatureRecipe.from_attrs(carried["features"])
    epsilon = statement.epsilon
    front = card_front_matter(carried, metrics)
    lines = [
        "---",
        yaml.safe_dump(front, sort_keys=False, allow_unicode=True).strip(),
        "---",
        "",
        "# A differentially private classifier",
        "",
        f"A linear head (`{head['method']}`, k = {head['k']}) on frozen features, released by pillar with "
        f"(ε = {epsilon:.4g}, δ = {statement.delta:g})-differential privacy ({statement.accountant} "
        f"accountant) for {statement.neighbouring}.",
        "",
        "## What ε covers",
        "",
        *[f"- {_text(item)}" for item in statement.covers],
        "",
        *(
            [
                "## What ε means for one " + statement.unit.noun,
                "",
                _text(statement.risk_sentence[0].upper() + statement.risk_sentence[1:]) + ".",
                "",
            ]
            if statement.risk
            else []
        ),
        "## What ε does not cover",
        "",
        *[f"- {_text(item)}" for item in statement.not_covered],
        "",
        *(
            ["## What ε rests on", "", *[f"- {_text(item)}" for item in statement.rests_on], ""]
            if statement.rests_on
            else []
        ),
        "## Features",
        "",
        f"Backbone `{_text(features.backbone)}` (weights `{_text(features.weights)}`), preprocessing "
        f"{_text(features.preprocessing or 'as recorded')}, {features.feature_dim} features per row; "
        f"classes: {_text(', '.join(carried['class_names']))}.",
        "",
        "## Evaluation",
        "",
        _evaluation_text(metrics),
        "",
        "## Checking this file",
        "",
        f"`pillar verify FOLDER --key SIGNER.pub.pem` checks the folder's signature ({HF_SIGNATURE} in the "
        "folder, over every other file in it, this card included), the metadata hash and statement in "
        f"{HF_WEIGHTS}, makes this card again from that statement and compares it, and recomputes ε from the "
        "DP event tree with dp-accounting.",
        "",
    ]
    return "\n".join(lines)


def _text(value: object) -> str:
    """A value of the user's data (a class name, a backbone, a dataset) as card text: the Hub renders the
    card's Markdown with its HTML, so a name's < and > are written as entities, and a backtick, which would
    end a code span, as a quote."""
    return str(value).replace("<", "&lt;").replace(">", "&gt;").replace("`", "'")


def _evaluation_text(metrics: dict | None) -> str:
    if metrics is None:
        return (
            "Not stated: a release holds no test statistics. Evaluate the model it came from with "
            "`pillar evaluate` and export again with `--evaluation`."
        )
    values = ", ".join(f"{_text(name)} {value:.4f}" for name, value in metrics["values"].items())
    return (
        f"On the {_text(metrics['split'])} split of {_text(metrics['dataset'])} "
        f"({_text(metrics['source'])}): {values} — the mean over the {metrics['seeds']} repetition(s) of the "
        "released head's cell; the released head is one of them."
    )


def evaluation_metrics(evaluation: Evaluation, released: Classifier) -> dict | None:
    """The evaluation's row for the released head's (method, k, ε) cell — only if the head is one of the row's
    (its digest among the row's `heads`): an evaluation of another model, or one that records no heads, gives
    None."""
    head = released.head
    row = evaluation.cell(
        head["method"], "full" if head["k"] is None else head["k"], released.privacy.epsilon_target
    )
    if row is None or head_digest(released.head_arrays) not in (row.get("heads") or ()):
        return None
    values = {
        name: float(row[f"{name}_mean"])
        for name in ("accuracy", "balanced_accuracy", "macro_f1")
        if row.get(f"{name}_mean") is not None
    }
    return {
        "values": values,
        "split": evaluation.split,
        "dataset": evaluation.dataset,
        "seeds": int(row["seeds"]),
        "source": evaluation.path,
    }

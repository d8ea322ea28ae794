"""One self-contained HTML page for a release, in the order a clinician asks: what was trained and on how
many units (the count as released, never n), what an attacker could learn of one unit (the trade-off curve,
with a canary audit's points where one is given), how accurate it is (test accuracy on how many test cases,
with its 95 % interval for a test set of that size, balanced accuracy, the smallest class's accuracy,
per-class accuracy, the confusion matrix, accuracy against k where its model held a grid), then the guarantee
in full, where it came from (backbone, data, public data, hashes) and whether it is signed. Values are said in
words, never as reprs; it reads at 400 px wide (tables scroll inside themselves, long hashes wrap, figures
scale) and on paper.

The page makes no request: no script, no external style, font or image; figures are inline SVG; a
Content-Security-Policy of `default-src 'none'` (inline styles and data: images allowed) tells the browser to
load nothing. It prints to PDF as it shows. `page_document` gives the same numbers as a dictionary (`--json`).
"""

from __future__ import annotations

import html
import io
import math
import re
from dataclasses import dataclass

from pillar_cli.artifacts.classifier import Classifier, head_digest
from pillar_cli.artifacts.core import Artifact
from pillar_cli.artifacts.evaluation import Evaluation
from pillar_cli.errors import UsageError
from pillar_cli.privacy import event_from_dict
from pillar_cli.privacy.risk import FPRS, Risk, audit_points, risk_of
from pillar_cli.version import PROGRAM

CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:"
STYLE = """body{font-family:sans-serif;max-width:52rem;margin:2rem auto;padding:0 1rem;color:#222;
line-height:1.45;overflow-wrap:break-word}
h1{font-size:1.5rem}h2{font-size:1.15rem;border-bottom:1px solid #ccc;margin-top:2rem}
table{border-collapse:collapse;margin:.5rem 0;display:block;max-width:100%;overflow-x:auto}
td,th{border:1px solid #ccc;padding:.2rem .5rem;text-align:right}
th{background:#f3f3f3}#provenance td{text-align:left}#provenance td:first-child{white-space:nowrap}
#provenance td:last-child{overflow-wrap:anywhere}.words{font-size:1.05rem}.note{color:#555;font-size:.9rem}
svg{max-width:100%;height:auto;display:block}
@media print{body{margin:0;max-width:none}h2{page-break-after:avoid}svg,table{page-break-inside:avoid}}"""
FIGURE_FONT = {"font.size": 11, "legend.fontsize": 9}  # points: readable when a 4.5-inch figure fits 400 px


@dataclass(frozen=True)
class AuditPoints:
    """A canary audit on the trade-off curve's axes: empirical (FPR, TPR) of thresholds on the canaries'
    scores, with Clopper–Pearson intervals, and the configuration it audited."""

    points: list[dict]
    event: dict
    epsilon_lower_bound: float
    epsilon_claimed: float


def audit_on_axes(audit: Artifact) -> AuditPoints:
    """A canary audit artifact's tests as points on the trade-off curve's axes (privacy/risk.py)."""
    event = audit.attrs["event"]
    points = audit_points(
        audit.array("canaries/scores"),
        audit.array("canaries/included").astype(bool),
        risk_of(event_from_dict(event)),
        audit.attrs["confidence"],
    )
    return AuditPoints(points, event, audit.attrs["epsilon_lower_bound"], audit.attrs["epsilon_claimed"])


def release_page(
    release: Classifier, trust_line: str, evaluation: Evaluation | None, audit: Artifact | None
) -> tuple[dict, str]:
    """(the page's numbers, the page) of a release, with the test accuracy of an evaluation of its head
    (refused when none of the evaluation's heads is the released one) and an audit's tests on the curve's
    axes."""
    row = None
    if evaluation is not None:
        head = release.head
        row = evaluation.cell(
            head["method"], "full" if head["k"] is None else head["k"], release.privacy.epsilon_target
        )
        if row is None or head_digest(release.head_arrays) not in (row.get("heads") or ()):
            raise UsageError(
                f"{evaluation.path} is no evaluation of the released head: none of its heads is this one",
                hint="evaluate the model this classifier was released from",
            )
    points = None if audit is None else audit_on_axes(audit)
    document = page_document(release, trust_line, evaluation, row, points)
    return document, page_html(release, document, points)


def page_document(
    release: Classifier,
    trust_line: str,
    evaluation: Evaluation | None = None,
    row: dict | None = None,
    audit: AuditPoints | None = None,
) -> dict:
    """Every number the page shows: the statement, the risk, the accuracy (from the evaluation's row of the
    released head, if given), the audit's points, the provenance, the signature."""
    statement = release.privacy
    risk, premises = risk_of(statement.event), statement.basis.premises
    document = {
        "statement": {
            "epsilon": statement.epsilon,
            "delta": statement.delta,
            "accountant": statement.accountant,
            "unit": statement.unit.described,
            "neighbouring": statement.neighbouring,
            "covers": list(statement.covers),
            "not_covered": list(statement.not_covered),
            "rests_on": list(statement.rests_on),
        },
        "risk": risk.to_attrs() | {"words": statement.risk_sentence or ""},
        "head": release.head,
        "classes": list(release.class_names),
        "provenance": {
            "backbone": release.features.backbone,
            "weights": release.features.weights,
            "preprocessing": release.features.preprocessing,
            "feature_dim": release.features.feature_dim,
            "release_hash": release.content_hash,
            "premises": premises and premises.to_attrs(),
        },
        "signature": trust_line,
    }
    if row is not None and evaluation is not None:
        per_class = [value for value in row.get("per_class_accuracy") or [] if value is not None]
        confusion = row.get("confusion_summed_over_seeds")
        test_rows = sum(map(sum, confusion)) // row["seeds"] if confusion else None
        document["accuracy"] = {
            "test_rows": test_rows,
            "accuracy_interval": None if not test_rows else wilson_interval(row["accuracy_mean"], test_rows),
            "split": evaluation.split,
            "dataset": evaluation.dataset,
            "seeds": row["seeds"],
            "accuracy": row["accuracy_mean"],
            "balanced_accuracy": row.get("balanced_accuracy_mean"),
            "smallest_class_accuracy": min(per_class) if per_class else None,
            "per_class_accuracy": dict(zip(release.class_names, row.get("per_class_accuracy") or [])),
            "confusion": row.get("confusion_summed_over_seeds"),
            "by_k": sorted(
                [
                    {"k": other["k"], "accuracy": other["accuracy_mean"]}
                    for other in evaluation.rows
                    if other["method"] == row["method"] and other["epsilon"] == row["epsilon"]
                ],
                key=lambda entry: math.inf if entry["k"] == "full" else entry["k"],
            ),
        }
    if audit is not None:
        document["audit"] = {
            "points": audit.points,
            "epsilon_lower_bound": audit.epsilon_lower_bound,
            "epsilon_claimed": audit.epsilon_claimed,
        }
    return document


def page_html(release: Classifier, document: dict, audit: AuditPoints | None = None) -> str:
    """The page itself."""
    statement, risk = document["statement"], document["risk"]
    curve = risk_of(release.privacy.event)
    audited = None if audit is None else risk_of(event_from_dict(audit.event))
    parts = [
        f"<h1>A classifier trained with differential privacy: ({_number(statement['epsilon'])}, "
        f"{statement['delta']:g})-DP</h1>",
        f"<p class='note' id='signature'>The release: {_text(document['signature'])}. This page itself is "
        "not signed: it says what the release said when the page was made, and an edited copy would look the "
        "same; <code>pillar verify</code> checks the release.</p>",
        "<h2>What was trained</h2>",
        f"<p class='words' id='trained'>{_trained_words(release)}</p>",
        "<h2>What an attacker could learn about one " + _text(release.privacy.unit.noun) + "</h2>",
        f"<p class='words' id='risk-words'>{_text(risk['words'][:1].upper() + risk['words'][1:])}.</p>",
        _table(
            ["false-positive rate", "highest true-positive rate"],
            [
                [
                    f"{100 * fpr:g} %",
                    f"<span id='tpr-{fpr:g}'>{100 * risk['tpr_at_fpr'][f'{fpr:g}']:.4g}</span> %",
                ]
                for fpr in FPRS
            ],
            raw=True,
        ),
        f"<p>Advantage (the most any attack beats chance by): <span id='advantage'>"
        f"{100 * risk['advantage']:.4g}</span> points.</p>",
        _curve_svg(curve, audit, audited),
        "<p class='note'>The curve bounds what any test of whether one unit was used can reach, by an "
        "attacker "
        "who knows everything else. It does not bound what public data lets anyone infer of a person's "
        "attributes.</p>",
    ]
    if "accuracy" in document:
        parts += _accuracy(document["accuracy"])
    parts += [
        "<h2>The guarantee in full</h2>",
        "<p class='words'>Differential privacy with ε = <span "
        f"id='epsilon'>{_number(statement['epsilon'])}</span>"
        f" and δ = <span id='delta'>{statement['delta']:g}</span> ({_text(statement['accountant'])} "
        f"accountant) for {_text(statement['neighbouring'])}.</p>",
        _list("What ε covers", statement["covers"]),
        _list("What ε does not cover", statement["not_covered"]),
        _list("What it rests on", statement["rests_on"]),
        "<h2>Where it came from</h2>",
        _table(
            ["what", "as recorded"],
            [[name.replace("_", " "), _plain(value)] for name, value in document["provenance"].items()],
            identifier="provenance",
        ),
        f"<p>Head: {_text(_plain(document['head']))}. Classes: {_text(', '.join(document['classes']))}.</p>",
    ]
    return (
        "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>"
        f"<meta http-equiv='Content-Security-Policy' content=\"{CSP}\">"
        "<meta name='viewport' content='width=device-width, initial-scale=1'><link rel='icon' href='data:,'>"
        f"<title>pillar release: ({_number(statement['epsilon'])}, {statement['delta']:g})-DP</title>"
        f"<style>{STYLE}</style></head><body>{''.join(parts)}</body></html>"
    )


def _trained_words(release: Classifier) -> str:
    """What was trained, on how many units: the count as the release states it (a noisy ñ, or a number
    declared public), never the exact n."""
    head, recipe, classes = release.head, release.features, release.class_names
    reads = "all the features" if head.get("k") is None else f"the top {head['k']} principal components"
    said = (
        f"A classifier telling {len(classes)} classes apart ({_text(', '.join(classes))}), trained by "
        f"{_text(str(head.get('method')))} on {reads} of the features a frozen "
        f"{_text(str(recipe.backbone or 'feature extractor'))} makes of each input."
    )
    count, noun = release.privacy.count, release.privacy.unit.noun
    if count is None or not count.released:
        return said + f" The number of {_text(noun)}s it learned from is not released."
    if count.noisy:
        return said + (
            f" It learned from about <span id='trained-on'>{round(count.value):,}</span> {_text(noun)}s: a "
            "count released with noise under the guarantee below (the exact number is stored nowhere)."
        )
    return said + (
        f" It learned from <span id='trained-on'>{round(count.value):,}</span> {_text(noun)}s, a number "
        "declared public."
    )


def _plain(value: object) -> str:
    """A stored value in words: a mapping as 'name: value' pairs, a list joined, nothing as 'not recorded'."""
    if value is None:
        return "not recorded"
    if isinstance(value, dict):
        return "; ".join(f"{str(key).replace('_', ' ')}: {_plain(item)}" for key, item in value.items())
    if isinstance(value, (list, tuple)):
        return ", ".join(_plain(item) for item in value)
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)


def _accuracy(accuracy: dict) -> list[str]:
    per_class = [
        [_text(name), "–" if value is None else f"{value:.4f}"]
        for name, value in accuracy["per_class_accuracy"].items()
    ]
    parts = [
        "<h2>How accurate it is</h2>",
        f"<p>On the {_text(accuracy['split'])} split of {_text(str(accuracy['dataset']))}"
        f"{_rows_said(accuracy['test_rows'])} (mean over {accuracy['seeds']} repetition(s) of the released "
        f"head's cell): accuracy <span id='accuracy'>{accuracy['accuracy']:.4f}</span>"
        f"{_interval_said(accuracy['accuracy_interval'])}, balanced accuracy <span id='balanced-accuracy'>"
        f"{_maybe(accuracy['balanced_accuracy'])}</span>, the smallest class's accuracy <span "
        f"id='smallest-class-accuracy'>{_maybe(accuracy['smallest_class_accuracy'])}</span>.</p>",
        _table(["class", "accuracy"], per_class, identifier="per-class"),
    ]
    if accuracy["confusion"]:
        names = list(accuracy["per_class_accuracy"])
        parts.append("<p>Confusion matrix (rows: true class; summed over repetitions):</p>")
        parts.append(
            _table(["", *names], [[name, *map(str, row)] for name, row in zip(names, accuracy["confusion"])])
        )
    if len(accuracy["by_k"]) > 1:
        parts.append(_by_k_svg(accuracy["by_k"]))
    return parts


def _curve_svg(curve: Risk, audit: AuditPoints | None, audited: Risk | None) -> str:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    with plt.rc_context(FIGURE_FONT):  # for this figure only
        figure, axes = plt.subplots(figsize=(4.5, 3.6))
        axes.plot(curve.fprs, curve.tprs, label="this release: the highest TPR any attack reaches")
        if audit is not None:
            if audited is not None and audited.tprs != curve.tprs:
                axes.plot(audited.fprs, audited.tprs, linestyle="--", label="the audited configuration")
            for point in audit.points:
                axes.errorbar(
                    point["fpr"],
                    point["tpr"],
                    xerr=[[point["fpr"] - point["fpr_low"]], [point["fpr_high"] - point["fpr"]]],
                    yerr=[[point["tpr"] - point["tpr_low"]], [point["tpr_high"] - point["tpr"]]],
                    fmt="o",
                    color="black",
                    markersize=3,
                    capsize=2,
                )
            axes.plot(
                [], [], "o", color="black", markersize=3, label="canary audit: its tests (95 % intervals)"
            )
        axes.plot([0, 1], [0, 1], color="grey", linewidth=0.8, label="chance")
        axes.set(
            xlabel="false-positive rate an attacker accepts",
            ylabel="true-positive rate",
            xlim=(0, 1),
            ylim=(0, 1),
        )
        axes.legend(loc="upper center", bbox_to_anchor=(0.5, -0.2), frameon=False)  # below: no curve hidden
    return _svg(figure)


def _by_k_svg(by_k: list[dict]) -> str:
    import matplotlib.pyplot as plt

    with plt.rc_context(FIGURE_FONT):  # for this figure only
        figure, axes = plt.subplots(figsize=(4.5, 2.8))
        labels = [str(entry["k"]) for entry in by_k]
        axes.plot(range(len(by_k)), [entry["accuracy"] for entry in by_k], marker="o")
        axes.set(xticks=range(len(by_k)), xticklabels=labels, xlabel="k (components)", ylabel="test accuracy")
    return _svg(figure)


def _svg(figure) -> str:
    import matplotlib.pyplot as plt

    buffer = io.StringIO()
    with plt.rc_context({"svg.fonttype": "none", "svg.hashsalt": PROGRAM}):  # text as text; stable ids
        figure.savefig(buffer, format="svg", bbox_inches="tight", metadata={"Date": None})
    plt.close(figure)
    text = buffer.getvalue()
    text = re.sub(r"<metadata>.*?</metadata>", "", text[text.index("<svg") :], flags=re.DOTALL)
    return re.sub(r'\s+xmlns(:\w+)?="[^"]*"', "", text)  # inline SVG in HTML needs no namespace declarations


def _list(title: str, items: list[str]) -> str:
    if not items:
        return ""
    return f"<h3>{_text(title)}</h3><ul>" + "".join(f"<li>{_text(item)}</li>" for item in items) + "</ul>"


def _table(header: list[str], rows: list[list[str]], raw: bool = False, identifier: str | None = None) -> str:
    cells = (lambda value: value) if raw else _text
    head = "".join(f"<th>{_text(name)}</th>" for name in header)
    body = "".join("<tr>" + "".join(f"<td>{cells(value)}</td>" for value in row) + "</tr>" for row in rows)
    return f"<table{f' id={identifier!r}' if identifier else ''}><tr>{head}</tr>{body}</table>"


def _text(value: str) -> str:
    return html.escape(value, quote=True)


def _number(value: float) -> str:
    return "∞" if math.isinf(value) else f"{value:.4g}"


def wilson_interval(accuracy: float, rows: int, z: float = 1.959963984540054) -> tuple[float, float]:
    """The 95 % Wilson score interval of an accuracy measured on `rows` test rows: how far the number could
    move on another test set of that size (it says nothing of the head's own noise)."""
    centre = (accuracy + z * z / (2 * rows)) / (1 + z * z / rows)
    half = z * math.sqrt(accuracy * (1 - accuracy) / rows + z * z / (4 * rows * rows)) / (1 + z * z / rows)
    return max(0.0, centre - half), min(1.0, centre + half)


def _rows_said(rows: int | None) -> str:
    return "" if rows is None else f", <span id='test-rows'>{rows:,}</span> test cases"


def _interval_said(interval: tuple[float, float] | None) -> str:
    if interval is None:
        return ""
    return (
        f" (95 % interval <span id='accuracy-low'>{interval[0]:.4f}</span>–<span id='accuracy-high'>"
        f"{interval[1]:.4f}</span> for a test set of this size)"
    )


def _maybe(value: float | None) -> str:
    return "–" if value is None else f"{value:.4f}"

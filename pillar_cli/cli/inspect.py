"""pillar inspect: any artifact's kind, provenance, attributes and datasets."""

from __future__ import annotations

import math
from pathlib import Path

import typer
from rich.tree import Tree

from pillar_cli import artifacts
from pillar_cli.artifacts.guarantee import COUNT, NOISE, NOT_PRIVATE, RELEASE, WHOLE_FILE
from pillar_cli.artifacts.statement import Statement
from pillar_cli.cli.boundary import cli_errors
from pillar_cli.cli.common import ConfigOption, JsonOption, print_json, stdout
from pillar_cli.cli.trust import KeyOption
from pillar_cli.privacy import event_from_dict, gaussian_segments
from pillar_cli.privacy.events import ComposedEvent
from pillar_cli.privacy.selection import recorded_selection_epsilon
from pillar_cli.release.exported import exported_format, read_export_metadata
from pillar_cli.release.signing import Trust, trust_of

_LONG = 300
_GUARANTEE_STYLE = {
    NOT_PRIVATE: "[bold red]{}[/bold red]",
    NOISE: "{}",
    WHOLE_FILE: "[yellow]{}[/yellow]",
    COUNT: "{}",
    RELEASE: "[green]{}[/green]",
}


@cli_errors
def inspect(
    path: Path = typer.Argument(..., help="Any pillar artifact, or a classifier exported by pillar export."),
    verify: bool = typer.Option(
        False,
        "--verify",
        help="Also rehash every ancestor's arrays (reads them whole): "
        "flags files edited after they were written.",
    ),
    key: Path | None = KeyOption,
    as_json: bool = JsonOption,
    config: str | None = ConfigOption,
) -> None:
    """Show an artifact's kind, provenance chain (the commands and input hashes that produced it, checked
    against the files on disk now), attributes and datasets. The artifact itself is always verified against
    its hash.

    An exported classifier (ONNX, TorchScript, safetensors, an hf folder) shows the privacy statement, class
    names, head and feature recipe it carries. A release or an export says whether it is signed, and with
    --key whether the signature holds.

    Example: pillar inspect model.h5 --verify

    Example: pillar inspect classifier.onnx --key signer.pub.pem
    """
    fmt = exported_format(path)
    if fmt is not None:
        return _exported(path, fmt, trust_of(path, key), as_json)
    artifact = artifacts.read(path, artifacts.KINDS)
    document = artifacts.describe(artifact, verify)
    if artifact.kind == "classifier":
        document["signature"] = _signature(trust_of(path, key))
    if "selection_ledger" in artifact.attrs:
        document["selection_check"] = [
            {
                **_cell(record),
                "epsilon": record["epsilon"],
                "recomputed_epsilon": recorded_selection_epsilon(record),
            }
            for record in artifact.attrs["selection_ledger"]["selections"]
        ]
    if as_json:
        return print_json(document)
    stdout.print(_tree(document))


def _signature(trust: Trust) -> dict:
    return {"signed": trust.signed, "verified": trust.verified, "line": trust.line}


def _exported(path: Path, fmt: str, trust: Trust, as_json: bool) -> None:
    carried = read_export_metadata(path)
    if as_json:
        return print_json({"path": str(path), "format": fmt, **carried, "signature": _signature(trust)})
    tree = Tree(f"[bold]{path}[/bold]: a classifier exported as {fmt}")
    tree.add(_trust_text(trust))
    tree.add(f"[green]{carried['privacy']['summary']}[/green]")
    if sentence := Statement.from_attrs(carried["privacy"]).risk_sentence:
        tree.add(f"what it means: {sentence}")
    tree.add(f"classes: {', '.join(carried['class_names'])}")
    tree.add(f"head: {carried['head']}")
    tree.add(f"features: {carried['features']}")
    stdout.print(tree)


def _tree(document: dict) -> Tree:
    tree = Tree(
        f"[bold]{document['path']}[/bold]: {document['kind']} (schema {document['schema_version']}, pillar "
        f"{document['pillar_version']}, {document['created_at']})"
    )
    tree.add(f"content hash {document['content_hash'][:16]}…")
    if "signature" in document:
        tree.add(_trust_text(Trust(**document["signature"])))
    if document["kind"] == "classifier" and (
        sentence := Statement.from_attrs(document["attrs"]["privacy"]).risk_sentence
    ):
        tree.add(f"what it means: {sentence}")
    tree.add("command: " + " ".join(document["command"]))
    tree.add(
        ("[yellow]{}[/yellow]" if document["sharing"].startswith("working") else "{}").format(
            document["sharing"]
        )
    )
    for note in document["guarantee"]:
        tree.add(_GUARANTEE_STYLE[note["level"]].format(note["text"]))
    parents = {0: tree.add("provenance chain (inputs, their inputs, …)")}
    flag = {
        "ok": " [green]verified[/green]" if document["verified"] else "",
        "changed": " [red]CHANGED since consumed[/red]",
        "modified": " [red]MODIFIED after it was written[/red]",
        "missing": " [yellow]missing[/yellow]",
        "withheld": "",
    }
    for link in document["chain"]:
        parents[link["depth"]] = parents[link["depth"] - 1].add(
            f"{link['path']}{':' + link['split'] if link['split'] else ''} ({link['kind']}, "
            + (f"{link['content_hash'][:16]}…" if link["content_hash"] else "no hash: it holds private rows")
            + f"){flag[link['status']]}"
            + (f"\n  made by: {' '.join(link['command'])}" if link["command"] else "")
        )
    attrs = tree.add("attributes")
    for key, value in document["attrs"].items():
        text = str(value)
        attrs.add(f"{key}: {text[:_LONG] + '…' if len(text) > _LONG else text}")
    if "selection_check" in document:
        _ledger(tree, document)
    datasets = document["datasets"]
    data = tree.add(f"datasets ({len(datasets)})")
    for name, info in list(datasets.items())[:40]:
        data.add(f"/{name} {info['dtype']} {tuple(info['shape'])}")
    if len(datasets) > 40:
        data.add(f"… {len(datasets) - 40} more")
    return tree


def _trust_text(trust: Trust) -> str:
    text = trust.line.replace("[", "\\[")
    return f"[green]{text}[/green]" if trust.verified else f"[yellow]{text}[/yellow]"


def _cell(record: dict) -> dict:
    return {key: record[key] for key in ("method", "k", "epsilon_target", "seed")}


def _ledger(tree: Tree, document: dict) -> None:
    """Every accounted selection's DP events, and its ε recomputed from them alone."""
    ledger = tree.add("privacy ledger: accounted selections (ε recomputed from the recorded events)")
    for record, check in zip(
        document["attrs"]["selection_ledger"]["selections"], document["selection_check"]
    ):
        count, trial = record["trial_count"], record["trial"]
        ok = math.isclose(check["recomputed_epsilon"], record["epsilon"], rel_tol=1e-6)
        node = ledger.add(
            f"{record['method']} k={record['k']} ε={record['epsilon_target']:g} seed {record['seed']}: "
            f"ε = {record['epsilon']:.4g} at δ = {record['delta']:g}, recomputed "
            f"{check['recomputed_epsilon']:.4g} " + ("[green]✓[/green]" if ok else "[red]MISMATCH[/red]")
        )
        node.add(
            f"trials: {count['distribution']} of mean {count['mean']:g} (how many ran is secret, not "
            "recorded)"
        )
        for candidate in trial["candidates"]:
            node.add(
                f"candidate lr {candidate['lr']:g} steps {candidate['steps']} batch {candidate['batch_size']}"
                f"{'' if candidate['ridge'] is None else ' ridge ' + format(candidate['ridge'], 'g')}"
            )
        # repeat-and-select of (one of, score), after the row count's
        event = event_from_dict(record["event"])
        # release if it read one
        *counted, selection = event.events if isinstance(event, ComposedEvent) else (event,)
        for released in counted:
            node.add(f"the released count of training rows: Gaussian σ {released.noise_multiplier:.4g}")
        one_of, score = selection.event.events
        for mechanism in one_of.events:
            ((sigma, rate, steps),) = gaussian_segments(mechanism)
            node.add(f"candidate mechanism: σ {sigma:.4g}, q {rate:.4g}, {steps} compositions")
        node.add(
            f"score: {trial['score']['statistic']}, σ {score.noise_multiplier:.4g} on "
            f"{trial['score']['n_val']} rows"
        )

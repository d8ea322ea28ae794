"""pillar inspect: any artifact's kind, provenance, attributes and datasets."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.tree import Tree

from pillar_cli import artifacts
from pillar_cli.cli.common import JsonOption, cli_errors, print_json, stdout

_LONG = 300


@cli_errors
def inspect(
    path: Path = typer.Argument(..., help="Any pillar artifact."),
    verify: bool = typer.Option(False, "--verify", help="Also rehash every ancestor's arrays (reads them whole): "
                                "flags files edited after they were written."),
    as_json: bool = JsonOption,
) -> None:
    """Show an artifact's kind, provenance chain (the commands and input hashes that produced it, checked against
    the files on disk now), attributes and datasets. The artifact itself is always verified against its hash.

    Example: pillar inspect model.h5 --verify
    """
    document = artifacts.describe(artifacts.read(path, artifacts.KINDS), verify)
    if as_json:
        return print_json(document)
    stdout.print(_tree(document))


def _tree(document: dict) -> Tree:
    tree = Tree(f"[bold]{document['path']}[/bold]: {document['kind']} (schema {document['schema_version']}, pillar "
                f"{document['pillar_version']}, {document['created_at']})")
    tree.add(f"content hash {document['content_hash'][:16]}…")
    tree.add("command: " + " ".join(document["command"]))
    parents = {0: tree.add("provenance chain (inputs, their inputs, …)")}
    flag = {"ok": " [green]verified[/green]" if document["verified"] else "",
            "changed": " [red]CHANGED since consumed[/red]", "modified": " [red]MODIFIED after it was written[/red]",
            "missing": " [yellow]missing[/yellow]"}
    for link in document["chain"]:
        parents[link["depth"]] = parents[link["depth"] - 1].add(
            f"{link['path']}{':' + link['split'] if link['split'] else ''} ({link['kind']}, "
            f"{link['content_hash'][:16]}…){flag[link['status']]}"
            + (f"\n  made by: {' '.join(link['command'])}" if link["command"] else ""))
    attrs = tree.add("attributes")
    for key, value in document["attrs"].items():
        text = str(value)
        attrs.add(f"{key}: {text[:_LONG] + '…' if len(text) > _LONG else text}")
    datasets = document["datasets"]
    data = tree.add(f"datasets ({len(datasets)})")
    for name, info in list(datasets.items())[:40]:
        data.add(f"/{name} {info['dtype']} {tuple(info['shape'])}")
    if len(datasets) > 40:
        data.add(f"… {len(datasets) - 40} more")
    return tree

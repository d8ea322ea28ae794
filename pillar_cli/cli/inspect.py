"""pillar inspect: any artifact's kind, provenance, attributes and datasets."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.tree import Tree

from pillar_cli import artifacts
from pillar_cli.cli.common import JsonOption, cli_errors, print_json, stdout

_LONG = 300


@cli_errors
def inspect(path: Path = typer.Argument(..., help="Any pillar artifact."), as_json: bool = JsonOption) -> None:
    """Show an artifact's kind, provenance chain (the commands and input hashes that produced it, checked against
    the files on disk now), attributes and datasets.

    Example: pillar inspect model.h5
    """
    artifact = artifacts.read(path, artifacts.KINDS)
    provenance = artifact.provenance
    chain = artifacts.provenance_chain(artifact)
    datasets = {name: {"shape": list(array.shape), "dtype": str(array.dtype)} for name, array in artifact.arrays.items()}
    document = {"path": str(path), "kind": artifact.kind, "schema_version": artifacts.SCHEMA_VERSION,
                "pillar_version": provenance.pillar_version, "created_at": provenance.created_at,
                "content_hash": provenance.content_hash, "command": provenance.command, "config": provenance.config,
                "inputs": [ref.to_dict() for ref in provenance.inputs], "attrs": artifact.attrs, "datasets": datasets,
                "chain": [{"depth": link.depth, **link.ref.to_dict(), "status": link.status, "command": link.command}
                          for link in chain]}
    if as_json:
        return print_json(document)
    tree = Tree(f"[bold]{path}[/bold]: {artifact.kind} (schema {artifacts.SCHEMA_VERSION}, pillar "
                f"{provenance.pillar_version}, {provenance.created_at})")
    tree.add(f"content hash {provenance.content_hash[:16]}…")
    tree.add("command: " + " ".join(provenance.command))
    inputs = tree.add("provenance chain (inputs, their inputs, …)")
    parents = {0: inputs}
    for link in chain:
        ref = link.ref
        flag = {"ok": "", "changed": " [red]CHANGED since consumed[/red]", "missing": " [yellow]missing[/yellow]"}
        node = parents[link.depth - 1].add(
            f"{ref.path}{':' + ref.split if ref.split else ''} ({ref.kind}, {ref.content_hash[:16]}…)"
            f"{flag[link.status]}" + (f"\n  made by: {' '.join(link.command)}" if link.command else ""))
        parents[link.depth] = node
    attrs = tree.add("attributes")
    for key, value in artifact.attrs.items():
        text = str(value)
        attrs.add(f"{key}: {text[:_LONG] + '…' if len(text) > _LONG else text}")
    data = tree.add(f"datasets ({len(datasets)})")
    for name, info in list(datasets.items())[:40]:
        data.add(f"/{name} {info['dtype']} {tuple(info['shape'])}")
    if len(datasets) > 40:
        data.add(f"… {len(datasets) - 40} more")
    stdout.print(tree)

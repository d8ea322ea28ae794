"""Whether a pipeline step needs to run: its output is up to date when the same command wrote it with the same
resolved options (its provenance) and every input it recorded still has the content hash it had then."""

from __future__ import annotations

import json
from pathlib import Path

import click

from pillar_cli.artifacts import read_provenance
from pillar_cli.cli.common import invocation
from pillar_cli.errors import PillarError

RUN, SKIP, RERUN = "run", "skip", "rerun"


def step_state(command: click.Command, argv: list[str]) -> tuple[str, str]:
    """(RUN, "") when the step has no output yet or one it did not write (the step itself then refuses to replace
    it without --force); (SKIP, why) when its output is up to date; (RERUN, why) when the same command wrote its
    output from inputs or options that have changed since."""
    try:
        ctx = command.make_context(argv[0], list(argv[1:]))
    except click.ClickException:
        return RUN, ""  # the step reports its own usage error
    out = ctx.params.get("out")
    if out is None or not Path(out).exists():
        return RUN, ""
    try:
        _, provenance = read_provenance(out)
    except PillarError:
        return RUN, ""
    if provenance.command[1:2] != [argv[0]]:
        return RUN, ""
    _, options = invocation(ctx)
    if json.loads(json.dumps(options, default=str)) != provenance.config:
        return RERUN, f"{out} was written with other options"
    for ref in provenance.inputs:
        if _content_hash(ref.path) != ref.content_hash:
            return RERUN, f"its input {ref.path} changed since {out} was written"
    return SKIP, f"{out} is up to date (same options, inputs unchanged)"


def _content_hash(path: str) -> str | None:
    try:
        return read_provenance(path)[1].content_hash
    except PillarError:
        return None

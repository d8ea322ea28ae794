"""What every command shares: error boundary, consoles, list options, --config, rendering, progress."""

from __future__ import annotations

import difflib
import json
import math
import sys
from pathlib import Path
from typing import Any

import typer
import yaml
from rich.console import Console
from rich.table import Table
from rich.text import Text

from pillar_cli import artifacts
from pillar_cli.artifacts.files import STDOUT, refuse_existing
from pillar_cli.cli.boundary import INT64_MAX, JSON_OUTPUT
from pillar_cli.errors import UsageError
from pillar_cli.randomness import NOT_PRIVATE_NOTE, SECRET, NoiseSource

stdout = Console()
stderr = Console(stderr=True)


def warn(message: str) -> None:
    """One unwrapped line on stderr (log parsers and tests see it whole)."""
    print(f"warning: {message}", file=sys.stderr)


NoiseSeedOption = typer.Option(
    None,
    "--noise-seed",
    min=0,
    help="EXPERIMENTS ONLY: draw the noise, sampling "
    "and private choices from this seed, so runs repeat exactly. Anyone who reads the "
    "seed can remove the noise: the output is labelled NOT differentially private. "
    "Default: fresh OS entropy, never stored.",
)
NPublicOption = typer.Option(
    False,
    "--n-public",
    help="The number of training rows is public knowledge (a published "
    "cohort size): read exactly instead of a noisy count released inside ε; every "
    "statement then says the guarantee assumes n known.",
)


def noise_source(noise_seed: int | None) -> NoiseSource:
    """The secret default, or the experiment switch, which is announced on stderr."""
    if noise_seed is None:
        return SECRET
    warn(f"--noise-seed {noise_seed}: {NOT_PRIVATE_NOTE}")
    return NoiseSource(noise_seed)


def load_config(ctx: typer.Context, _param: typer.CallbackParam, value: str | None) -> str | None:
    """--config FILE.yaml: its keys become defaults, so explicit flags still win."""
    if value is None:
        return value
    try:
        options = yaml.safe_load(Path(value).read_text()) or {}
    except (OSError, yaml.YAMLError) as err:
        raise typer.BadParameter(f"cannot read {value}: {err}") from err
    if not isinstance(options, dict):
        raise typer.BadParameter(f"{value} must hold a mapping of option names to values")
    known = {param.name for param in ctx.command.params if param.name != "config"}
    for key in options:
        if str(key).replace("-", "_") not in known:
            close = difflib.get_close_matches(str(key).replace("-", "_"), sorted(known), n=1)
            also = f" (did you mean '{close[0].replace('_', '-')}'?)" if close else ""
            raise typer.BadParameter(f"{value} sets '{key}', which is not an option of this command{also}")
    ctx.default_map = {
        **(ctx.default_map or {}),
        **{k.replace("-", "_"): _as_cli_value(v) for k, v in options.items()},
    }
    return value


def _as_cli_value(value: Any) -> Any:
    return ",".join(str(v) for v in value) if isinstance(value, list) else value


ConfigOption = typer.Option(
    None,
    "--config",
    help="YAML file of option defaults; explicit flags win.",
    is_eager=True,
    callback=load_config,
    expose_value=True,
)
JsonOption = typer.Option(False, "--json", help="Print one JSON document to stdout instead of a table.")
ForceOption = typer.Option(
    False, "--force", help="Replace output files that exist (atomically); without it they are refused."
)
SignOption = typer.Option(
    None,
    "--sign",
    help="Sign the output with this elliptic-curve PRIVATE key (PEM; OpenSSF "
    "model-signing): the signature is written beside it as OUT.sig; pillar verify --key checks it.",
)


def signed_output(out: Path, key: Path | None, inputs: list[str], force: bool, folder: bool = False) -> None:
    """Before any work: the output and, when signing, its signature path are free (or --force) and the key
    signs."""
    from pillar_cli.release.signing import check_signing_key, signature_path

    check_outputs([out, None if key is None or folder else signature_path(out)], inputs, force=force)
    if key is not None:
        check_signing_key(key)


def split_list(text: str, option: str) -> list[str]:
    items = [item.strip() for item in str(text).split(",") if item.strip()]
    if not items:
        raise UsageError(f"{option} needs at least one value")
    return items


def float_list(text: str, option: str) -> list[float]:
    try:
        return [
            math.inf if item.lower() in ("inf", "infinity") else float(item)
            for item in split_list(text, option)
        ]
    except ValueError:
        raise UsageError(f"{option} takes comma-separated numbers (or 'inf'); got '{text}'") from None


def float_or_auto_list(text: str, option: str) -> list[str | float]:
    """Comma-separated numbers, or 'auto' for the library's default."""
    try:
        return [item if item == "auto" else float(item) for item in split_list(text, option)]
    except ValueError:
        raise UsageError(f"{option} takes comma-separated numbers or 'auto'; got '{text}'") from None


def int_list(
    text: str, option: str, allow_full: bool = False, minimum: int = 1, word: str = "full"
) -> list[int | None]:
    """Comma-separated integers; with `allow_full`, `word` stands for None (e.g. k = full, batch size =
    all)."""
    values: list[int | None] = []
    for item in split_list(text, option):
        if allow_full and item.lower() == word:
            values.append(None)
            continue
        try:
            values.append(int(item))
        except ValueError:
            extra = f" or '{word}'" if allow_full else ""
            raise UsageError(f"{option} takes comma-separated integers{extra}; got '{item}'") from None
        if values[-1] < minimum:
            raise UsageError(f"{option} values must be at least {minimum}; got {item}")
        if values[-1] > INT64_MAX:
            raise UsageError(f"{option} values must be below 2**63; got {item}")
    return values


def check_outputs(outputs: list[Path | None], inputs: list[str] = (), force: bool = False) -> None:
    """`check_output` for each output given, and no two of them the same file."""
    given = [output for output in outputs if output is not None]
    for i, output in enumerate(given):
        check_output(output, inputs, force)
        if any(output.resolve() == other.resolve() for other in given[:i]):
            raise UsageError(f"output {output} is named twice: each output needs its own file")


def check_output(path: Path, inputs: list[str] = (), force: bool = False) -> None:
    """Refuse an output path that is one of the inputs, lies in a missing directory, or exists (without
    --force) — before any work. '-' is not taken for a file's name: standard output takes only what a
    command prints there (predict -o -, report --markdown -), which it checks itself."""
    if path == STDOUT:
        raise UsageError(
            "output '-': this output is a file, not standard output",
            hint="name a file (standard output takes predict -o - and report --markdown -)",
        )
    for source in inputs:
        if Path(source).resolve() == path.resolve():
            raise UsageError(f"output {path} would overwrite input {source}")
    if not path.resolve().parent.is_dir():
        raise UsageError(f"output directory {path.parent} does not exist")
    refuse_existing(path, force)


def jsonable(value: Any) -> Any:
    """JSON numbers stay numbers: ε = ∞ (non-private) and undefined values (NaN) become null, so that strict
    parsers (jq) accept the document and every field keeps one type."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    return value


def print_json(document: Any) -> None:
    print(json.dumps(jsonable(document), indent=2))
    JSON_OUTPUT.written = True


def print_table(
    title: str, rows: list[dict], columns: list[str], formats: dict[str, str] | None = None
) -> None:
    """The title goes on its own line: as a table title rich would wrap it to the width of a narrow table. No
    cell is ever cut: piped output (logs, CI, `| less`) gets the whole table whatever its width; a terminal
    too narrow for it gets the rows as lists of `column: value` lines."""
    formats = formats or {}
    table = Table()
    for column in columns:
        table.add_column(column, justify="right", no_wrap=True)
    cells = [[_cell(row.get(c), formats.get(c)) for c in columns] for row in rows]
    for row in cells:
        table.add_row(*row)
    heading = Text(title, style="table.title")
    natural = stdout.measure(table, options=stdout.options.update(max_width=10_000)).maximum
    if not stdout.is_terminal:
        return Console(width=max(stdout.width, natural, len(title))).print(heading, table)
    if natural <= stdout.width:
        return stdout.print(heading, table)
    stdout.print(heading)
    for number, row in enumerate(cells, start=1):
        stdout.print(
            Text.assemble(
                (f"{number}. ", "bold"),
                "; ".join(f"{column}: {value}" for column, value in zip(columns, row)),
            )
        )


def _cell(value: Any, fmt: str | None) -> str:
    if value is None:
        return "-"
    if isinstance(value, float) and math.isinf(value):
        return "inf"
    return format(value, fmt) if fmt and isinstance(value, (int, float)) else str(value)


def _plain(value: Any) -> Any:
    if isinstance(value, Path):
        return str(value)
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def invocation(ctx: typer.Context) -> tuple[list[str], dict[str, Any]]:
    """The running command as a re-runnable argv (every option resolved, --config expanded) and its
    options."""
    argv, options = ctx.command_path.split(), {}
    for option in ctx.command.params:
        value = ctx.params.get(option.name)
        if (
            option.name in ("config", "as_json", "resume", "workers", "force", "sign", "key") or value is None
        ):  # no
            # effect on the result (a signing key's path is never written into a file)
            continue
        options[option.name] = _plain(value)
        if option.param_type_name == "argument":
            argv.extend(str(item) for item in (value if isinstance(value, (list, tuple)) else [value]))
        elif option.is_flag and option.secondary_opts:
            argv.append(option.opts[0] if value else option.secondary_opts[0])
        elif option.is_flag:
            argv.extend([option.opts[0]] if value else [])
        else:
            for item in value if option.multiple else [value]:
                argv.extend([max(option.opts, key=len), str(item)])
    return argv, options


def parse_shard(text: str) -> tuple[int, int]:
    """--shard 'i/n' → (i, n) with 0 ≤ i < n."""
    index, sep, count = text.partition("/")
    if not (sep and index.isdigit() and count.isdigit() and int(index) < int(count)):
        raise UsageError(f"--shard takes i/n with 0 <= i < n; got '{text}'")
    return int(index), int(count)


def save(
    ctx: typer.Context, out: Path, artifact: artifacts.Artifact, inputs: list[artifacts.InputRef] = ()
) -> artifacts.Artifact:
    """Write an artifact with this invocation's command line and resolved options as provenance."""
    command, options = invocation(ctx)
    return artifacts.write(
        out,
        artifact,
        inputs=list(inputs),
        config=options,
        command=command,
        force=bool(ctx.params.get("force")),
    )


def _tracker_available(value: str) -> str:
    """--track checked as it is parsed: an unknown tracker, or MLflow not installed, before any work."""
    if value == "none":
        return value
    from pillar_cli.tracking import check_tracker

    try:
        check_tracker(value, importable=True)
    except UsageError as err:
        raise typer.BadParameter(str(err)) from None
    return value


TrackOption = typer.Option(
    "none",
    "--track",
    help="Log the runs to an experiment tracker: mlflow (MLFLOW_TRACKING_URI, else ./mlruns): the "
    "configuration, ε, δ, σ, q, risk and test metrics, never n or a row.",
    callback=_tracker_available,
)


def track(tracker: str, command: str, out: Path, written: object) -> None:
    """Log the runs of what a command wrote (a model, an evaluation, a release), made only when a tracker is
    asked for, and say where they went."""
    if tracker == "none":
        return
    from pillar_cli.tracking import log_runs, runs_of

    runs = runs_of(written)
    uri = log_runs(tracker, command, out, runs)
    stderr.print(f"logged {len(runs)} run(s) to {tracker} at {uri}")

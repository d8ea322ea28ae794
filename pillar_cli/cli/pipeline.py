"""examples.yaml: named pipelines, each a list of pillar invocations run in order.

A pipeline may declare `vars` (e.g. workdir); `{name}` in its steps is replaced by their values, which the
caller may override (`pillar run ... --var data=/my/cifar`). Only `{name}` of an identifier is a variable:
other braces stay as written (no format specifications). A step is one pillar command line: not `run` (a
pipeline inside a pipeline), not `--help`.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from pathlib import Path

import yaml

from pillar_cli.errors import UsageError

VARIABLE = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")


@dataclass(frozen=True)
class Pipeline:
    name: str
    description: str
    steps: list[list[str]]
    workdir: Path | None


def list_pipelines_in(path: Path) -> list[Pipeline]:
    """Every pipeline of the file, with its variables at their defaults."""
    return [load_pipeline(path, str(name)) for name in _pipelines(path)]


def _pipelines(path: Path) -> dict:
    try:
        document = yaml.safe_load(path.read_text())
    except OSError as err:
        raise UsageError(f"cannot read {path}: {err.strerror}") from err
    except yaml.YAMLError as err:
        raise UsageError(f"{path} is not valid YAML: {str(err).splitlines()[0]}") from err
    pipelines = document.get("pipelines", {}) if isinstance(document, dict) else None
    if not isinstance(pipelines, dict):
        raise UsageError(f"{path} holds no mapping 'pipelines' of names to pipelines")
    return pipelines


def load_pipeline(path: Path, name: str, overrides: dict[str, str] | None = None) -> Pipeline:
    pipelines = _pipelines(path)
    if name not in pipelines:
        raise UsageError(
            f"no pipeline '{name}' in {path} (available: {', '.join(map(str, pipelines)) or 'none'})"
        )
    spec = pipelines[name]
    if (
        not isinstance(spec, dict)
        or not isinstance(spec.get("vars") or {}, dict)
        or not isinstance(spec.get("description", ""), str)
    ):
        raise UsageError(
            f"pipeline '{name}' in {path} is not a mapping of description (text), vars and steps"
        )
    variables = {key: str(value) for key, value in (spec.get("vars") or {}).items()}
    unknown = sorted(set(overrides or {}) - set(variables))
    if unknown:
        raise UsageError(
            f"pipeline '{name}' has no variable '{unknown[0]}' (its variables: "
            f"{', '.join(variables) or 'none'})"
        )
    variables |= overrides or {}
    raw_steps = spec.get("steps", [])
    if not isinstance(raw_steps, list) or not all(isinstance(step, str) for step in raw_steps):
        raise UsageError(
            f"pipeline '{name}' in {path}: steps must be a list of pillar command lines (got "
            f"{type(raw_steps).__name__})"
        )
    steps = [_step(name, number, step, variables) for number, step in enumerate(raw_steps, start=1)]
    if not steps:
        raise UsageError(f"pipeline '{name}' has no steps")
    workdir = Path(variables["workdir"]) if "workdir" in variables else None
    return Pipeline(name, spec.get("description", ""), steps, workdir)


def _step(pipeline: str, number: int, text: str, variables: dict[str, str]) -> list[str]:
    """One step's argv: its variables replaced, split as a shell would; refused in one line when it names an
    undefined variable, does not split, is empty, runs a pipeline or asks for help."""

    def value(match: re.Match) -> str:
        if match.group(1) not in variables:
            raise UsageError(
                f"pipeline '{pipeline}' uses undefined variable '{match.group(1)}' (step {number})"
            )
        return variables[match.group(1)]

    replaced = VARIABLE.sub(value, text)
    try:
        argv = shlex.split(replaced)
    except ValueError as err:
        raise UsageError(f"pipeline '{pipeline}', step {number}: {err} in {text!r}") from None
    if not argv:
        raise UsageError(f"pipeline '{pipeline}', step {number} is empty")
    if argv[0] == "run":
        raise UsageError(f"pipeline '{pipeline}', step {number} runs a pipeline: a step is one stage")
    if "--help" in argv or "-h" in argv:
        raise UsageError(f"pipeline '{pipeline}', step {number} asks for --help: a step runs a stage")
    return argv

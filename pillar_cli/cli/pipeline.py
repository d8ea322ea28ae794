"""examples.yaml: named pipelines, each a list of pillar invocations run in order.

A pipeline may declare `vars` (e.g. workdir); `{name}` in its steps is replaced by their values, which the caller
may override (`pillar run ... --var data=/my/cifar`).
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from pathlib import Path

import yaml

from pillar_cli.errors import UsageError


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
        raise UsageError(f"no pipeline '{name}' in {path} (available: {', '.join(map(str, pipelines)) or 'none'})")
    spec = pipelines[name]
    if not isinstance(spec, dict) or not isinstance(spec.get("vars") or {}, dict):
        raise UsageError(f"pipeline '{name}' in {path} is not a mapping of description, vars and steps")
    variables = {key: str(value) for key, value in (spec.get("vars") or {}).items()}
    unknown = sorted(set(overrides or {}) - set(variables))
    if unknown:
        raise UsageError(f"pipeline '{name}' has no variable '{unknown[0]}' (its variables: "
                         f"{', '.join(variables) or 'none'})")
    variables |= overrides or {}
    raw_steps = spec.get("steps", [])
    if not isinstance(raw_steps, list) or not all(isinstance(step, str) for step in raw_steps):
        raise UsageError(f"pipeline '{name}' in {path}: steps must be a list of pillar command lines (got "
                         f"{type(raw_steps).__name__})")
    try:
        steps = [shlex.split(step.format(**variables)) for step in raw_steps]
    except KeyError as err:
        raise UsageError(f"pipeline '{name}' uses undefined variable {err}") from err
    if not steps:
        raise UsageError(f"pipeline '{name}' has no steps")
    workdir = Path(variables["workdir"]) if "workdir" in variables else None
    return Pipeline(name, spec.get("description", ""), steps, workdir)

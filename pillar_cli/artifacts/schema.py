"""What each kind of artifact must hold for the stages that read it: arrays of the right kinds, ranks and
matching lengths, attributes of the right types. A file that passes its content hash can still come from
another tool or a buggy writer; it is refused here with one line rather than failing somewhere downstream.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from pillar_cli.artifacts.model_record import ModelLedger, ModelRecord
from pillar_cli.artifacts.statement_schema import claims_that_fail, guarantee_of, statement_problem
from pillar_cli.artifacts.stored import attribute_types
from pillar_cli.errors import ArtifactError
from pillar_cli.privacy.count import readable_count
from pillar_cli.privacy.release import DPRelease, Released
from pillar_cli.privacy.risk_target import RiskTarget
from pillar_cli.version import __version__

NUMBER, INTEGER, TEXT, BOOLEAN = "fiu", "iu", "U", "b"
REQUIRED = object()
# a model's run table, `runs/<column>`, one entry per run: column → (dtype kinds, value where an older model
# lacks it)
RUN_COLUMNS: dict[str, tuple[str, Any]] = {
    "method": (TEXT, REQUIRED),
    "k": (INTEGER, REQUIRED),
    "projected": (BOOLEAN, REQUIRED),
    "epsilon_target": (NUMBER, REQUIRED),
    "epsilon_spent": (NUMBER, REQUIRED),
    "event": (TEXT, REQUIRED),
    "noise_multiplier": (NUMBER, REQUIRED),
    "sample_rate": (NUMBER, REQUIRED),
    "steps": (INTEGER, REQUIRED),
    "batch_size": (INTEGER, REQUIRED),
    "lr": (NUMBER, REQUIRED),
    "seed": (INTEGER, REQUIRED),
    "val_accuracy": (NUMBER, REQUIRED),
    "ridge": (NUMBER, 0.0),
    "row_normalised": (BOOLEAN, False),
    "steps_run": (INTEGER, -1),
}
# per kind: array name → (allowed dtype kinds, rank); `{split}` stands for every split present
ARRAYS: dict[str, dict[str, tuple[str, int]]] = {
    "embeddings": {
        "splits/{split}/features": (NUMBER, 2),
        "splits/{split}/index": (INTEGER, 1),
        "splits/{split}/labels": (INTEGER, 1),
        "splits/{split}/persons": (INTEGER, 1),
    },
    "embedding-shard": {
        "splits/{split}/features": (NUMBER, 2),
        "splits/{split}/index": (INTEGER, 1),
        "splits/{split}/labels": (INTEGER, 1),
        "splits/{split}/positions": (INTEGER, 1),
        "splits/{split}/persons": (INTEGER, 1),
    },
    "projection": {
        "mean": (NUMBER, 1),
        "scale": (NUMBER, 1),
        "components": (NUMBER, 2),
        "eigenvalues": (NUMBER, 1),
    },
    "model": {"mean": (NUMBER, 1), "scale": (NUMBER, 1)},  # and the run table, RUN_COLUMNS
    "assumptions": {"k": (INTEGER, 1), "xi": (NUMBER, 2), "eigengap": (NUMBER, 1)},
    "gsd": {"distance": (NUMBER, 1)},
    "evaluation": {"accuracy_mean": (NUMBER, 1)},
    "classifier": {
        "mean": (NUMBER, 1),
        "scale": (NUMBER, 1),
    },  # and a linear head or a network: _classifier_shapes
    "audit": {
        "canaries/included": (BOOLEAN, 1),
        "canaries/labels": (INTEGER, 1),
        "canaries/scores": (NUMBER, 1),
    },
}
# per kind: attribute → its JSON type(s); a model's and a classifier's are made from their records
# (attribute_tables)
_ATTRS: dict[str, dict[str, type | tuple[type, ...]]] = {
    "embeddings": {"class_names": list},
    "embedding-shard": {"class_names": list, "shard": list, "shard_key": str, "split_sizes": dict},
    "projection": {"k_max": int, "standardized": bool, "rank": int, "n_public": int},
    "assumptions": {"summary": dict},
    "gsd": {"ranking": list, "settings": dict},
    "evaluation": {
        "rows": list,
        "ledger": dict,
        "notes": list,
        "private_fraction": (int, float),
        "dataset": (str, type(None)),
        "split": str,
        "title": str,
    },
    "audit": {
        "canaries": int,
        "guesses": int,
        "correct": int,
        "confidence": float,
        "epsilon_lower_bound": float,
        "epsilon_claimed": float,
        "configuration": dict,
    },
}
# attributes a kind may omit, but whose type is fixed when present
_OPTIONAL: dict[str, dict[str, type | tuple[type, ...]]] = {
    "embeddings": {
        "split_roles": dict,
        "source_fingerprint": str,
        "splits": list,
        "persons": dict,
        "premises": dict,
        "public_fraction": (int, float),
        "val_fraction": (int, float),
    },
    "projection": {
        "row_l2_normalised": bool,
        "source_fingerprint": str,
        "public_choice": dict,
        "private_release": dict,
        "persons": dict,
        "public_share": float,
        "fitted_on": dict,
    },
    "evaluation": {"overlap_rows": int, "public": dict, "feature_dim": int, "count": dict},
}
LEDGER = attribute_types(ModelLedger)[0]
ACCOUNTING: dict[str, type | tuple[type, ...]] = {
    "accountant": str,
    "delta": (int, float),
    "clip": (int, float),
}  # an evaluation's ledger
EVALUATION_ROW: dict[str, type | tuple[type, ...]] = {
    "method": str,
    "k": (int, str),
    "epsilon": (int, float),
    "accuracy_mean": (int, float),
    "accuracy_std": (int, float, type(None)),
    "val_accuracy": (int, float),
}


@functools.cache
def attribute_tables() -> tuple[dict, dict]:
    """Per kind, the attributes a file must hold and those it may omit, with their types; a model's and a
    classifier's are their records' fields (artifacts/stored.py)."""
    from pillar_cli.artifacts.classifier import (
        Classifier,
    )  # it reads files through core, which validates here

    required, optional = dict(_ATTRS), dict(_OPTIONAL)
    for kind, record in (("model", ModelRecord), ("classifier", Classifier)):
        required[kind], optional[kind] = attribute_types(record)
    return required, optional


def validate(kind: str, arrays: dict[str, np.ndarray], attrs: dict[str, Any], path: str) -> None:
    """Refuse arrays or attributes that the stages reading this kind could not use."""

    def refuse(problem: str) -> None:
        raise ArtifactError(
            f"{path}: {kind} artifact {problem}",
            hint="the file may come from another tool or be damaged; recreate it",
        )

    required, optional = (table.get(kind, {}) for table in attribute_tables())
    if kind == "model" and "guarantee" not in attrs:
        raise ArtifactError(
            f"{path}: model artifact written before a model stored its guarantee as one record "
            f"(pillar {__version__} reads only those)",
            hint="train it again with this version",
        )
    for name, expected in {**required, **optional}.items():
        value = attrs.get(name)
        if name not in attrs and name in optional:
            continue
        if (
            name not in attrs
            or not isinstance(value, expected)
            or isinstance(value, bool) != (expected is bool)
        ):
            refuse(f"has no valid attribute '{name}'")
    splits = sorted({name.split("/")[1] for name in arrays if name.startswith("splits/")})
    for pattern, (kinds, rank) in ARRAYS.get(kind, {}).items():
        for name in [pattern.format(split=s) for s in splits] if "{split}" in pattern else [pattern]:
            if name not in arrays:
                if not name.endswith(
                    ("/labels", "/persons")
                ):  # the public split has no labels; persons are named
                    refuse(f"has no dataset '/{name}'")  # where the source names them
            elif arrays[name].dtype.kind not in kinds or arrays[name].ndim != rank:
                refuse(f"has a malformed dataset '/{name}' ({arrays[name].dtype}, {arrays[name].ndim}-d)")
    for check in _CONSISTENCY.get(kind, ()):
        problem = check(arrays, attrs, splits)
        if problem:
            refuse(problem)


def _split_names(arrays: dict, attrs: dict, splits: list[str]) -> str | None:
    """The split names an embeddings file records are texts (the readers join and compare them)."""
    if "splits" in attrs and not all(isinstance(name, str) for name in attrs["splits"]):
        return "has split names that are not texts"
    return None


def _rows_agree(arrays: dict, attrs: dict, splits: list[str]) -> str | None:
    for split in splits:
        rows = len(arrays[f"splits/{split}/features"])
        for field in ("index", "labels", "positions", "persons"):
            name = f"splits/{split}/{field}"
            if name in arrays and len(arrays[name]) != rows:
                return f"has {len(arrays[name])} {field} for {rows} feature rows in split '{split}'"
    return None


def _projection_shapes(arrays: dict, attrs: dict, splits: list[str]) -> str | None:
    dim = len(arrays["mean"])
    if len(arrays["scale"]) != dim or arrays["components"].shape != (attrs["k_max"], dim):
        return (
            f"has components {arrays['components'].shape} and scale {arrays['scale'].shape} for {dim} "
            "dimensions"
        )
    if "private_release" in attrs and not DPRelease.readable(attrs["private_release"], Released.PROJECTION):
        return "has a DP-PCA release pillar does not read (its event, unit, ε or δ)"
    if (release := (attrs.get("public_choice") or {}).get("release")) is not None and not DPRelease.readable(
        release, Released.PUBLIC_CHOICE
    ):
        return "has a public choice whose DP release pillar does not read (its event, unit, ε or δ)"
    return _unusable_numbers(arrays, ("mean", "components", "eigenvalues")) or _rows_recorded(
        arrays, attrs, ("public",)
    )


def _unusable_numbers(arrays: dict, names: tuple[str, ...]) -> str | None:
    """Non-finite values where every stage multiplies by them, or a scale it divides by that is not
    positive."""
    bad = [name for name in names if name in arrays and not np.isfinite(arrays[name]).all()]
    if bad:
        return f"has NaN or Inf in '/{bad[0]}'"
    if "scale" in arrays and not (np.isfinite(arrays["scale"]).all() and np.all(arrays["scale"] > 0)):
        return "has a scale that is not a positive number in every dimension"
    return None


def _rows_recorded(arrays: dict, attrs: dict, groups: tuple[str, ...]) -> str | None:
    """A file naming its source (so that row-overlap checks apply) must hold the rows it was made from."""
    missing = [group for group in groups if f"rows/{group}" not in arrays]
    if "source_fingerprint" in attrs and missing:
        return f"records its source but not its rows ('/rows/{missing[0]}')"
    return None


def _model_shapes(arrays: dict, attrs: dict, splits: list[str]) -> str | None:
    for column, (kinds, default) in RUN_COLUMNS.items():
        name = f"runs/{column}"
        if name not in arrays:
            if default is REQUIRED:
                return f"has no dataset '/{name}'"
        elif arrays[name].dtype.kind not in kinds or arrays[name].ndim != 1:
            return f"has a malformed dataset '/{name}' ({arrays[name].dtype}, {arrays[name].ndim}-d)"
    runs, dim, classes = len(arrays["runs/k"]), len(arrays["mean"]), attrs["num_classes"]
    if any(len(arrays[f"runs/{column}"]) != runs for column in RUN_COLUMNS if f"runs/{column}" in arrays):
        return "has run tables of different lengths"
    selection = attrs.get("selection", [])
    if not isinstance(selection, list) or not all(_selected_cell(cell, runs) for cell in selection):
        return (
            "has a selection whose cells are not (method, k, epsilon, run ids of its runs, what chose them)"
        )
    if len(arrays["scale"]) != dim:
        return f"has a scale of {len(arrays['scale'])} dimensions for a mean of {dim}"
    if not all(isinstance(attrs["ledger"].get(key), kind) for key, kind in LEDGER.items()):
        return "has a ledger without its clip norm"
    if (guarantee := guarantee_of(attrs["guarantee"])) is None:
        return "has a guarantee that is not one pillar reads (a unit, relation, count or release)"
    if attrs.get("risk_target") is not None and not RiskTarget.readable(attrs["risk_target"]):
        return "has a risk target that is not a TPR above an FPR, both in (0, 1)"
    if np.isnan(arrays["runs/epsilon_spent"]).any() or (arrays["runs/epsilon_spent"] < 0).any():
        return "has an epsilon_spent that is not a number ≥ 0"
    claims = zip(arrays["runs/event"].tolist(), arrays["runs/epsilon_spent"].tolist())
    problem = claims_that_fail(
        [(str(event), claimed) for event, claimed in claims], guarantee.accountant, guarantee.delta_total
    )
    if problem:
        return problem
    problem = _unusable_numbers(
        arrays, ("mean", *tuple(n for n in arrays if n.endswith(("/weights", "/bias"))))
    )
    if (
        problem is None and "network" not in attrs
    ):  # a network's rows are pixels of its own pre-training split
        scored = np.isfinite(arrays["runs/val_accuracy"]).any()  # a sweep that chose nothing read no val rows
        problem = _rows_recorded(arrays, attrs, ("private", "val") if scored else ("private",))
    if problem:
        return problem
    for i in range(runs):
        if "network" in attrs:  # a network per run (artifacts/network.py), no linear head
            if not any(name.startswith(f"runs/{i}/network/") for name in arrays):
                return f"has no network for run {i}"
            continue
        weights, bias = arrays.get(f"runs/{i}/weights"), arrays.get(f"runs/{i}/bias")
        method, k = str(arrays["runs/method"][i]), int(arrays["runs/k"][i])
        basis = arrays.get(f"bases/{method}/{k}")
        inner = dim if basis is None else k
        if (
            weights is None
            or bias is None
            or weights.shape != (inner, classes)
            or bias.shape != (classes,)
            or (basis is not None and basis.shape != (dim, k))
        ):
            return f"has a malformed head for run {i}"
    return None


def _evaluation_rows(arrays: dict, attrs: dict, splits: list[str]) -> str | None:
    if not all(
        isinstance(row, dict) and all(isinstance(row.get(key), kind) for key, kind in EVALUATION_ROW.items())
        for row in attrs["rows"]
    ):
        return "has malformed result rows"
    if not all(isinstance(note, str) for note in attrs["notes"]) or not all(
        isinstance(attrs["ledger"].get(key), kind) for key, kind in ACCOUNTING.items()
    ):
        return "has malformed notes or ledger"
    if attrs.get("count") is not None and not readable_count(attrs["count"]):
        return "has a row count that is not one pillar reads"
    return None


def _classifier_shapes(arrays: dict, attrs: dict, splits: list[str]) -> str | None:
    dim, classes = len(arrays["mean"]), len(attrs["class_names"])
    names = attrs["class_names"]
    if not all(isinstance(name, str) for name in names) or len(set(names)) != len(names) or len(names) < 2:
        return "has class names that are not two or more distinct texts"
    if attrs["features"].get("feature_dim") != dim or isinstance(attrs["features"].get("feature_dim"), bool):
        return f"records a feature recipe whose feature_dim is not its scaler's {dim}"
    network = [name for name in arrays if name.startswith("network/")]
    if isinstance(attrs["head"].get("network"), dict) != bool(network):
        return "has a network without its architecture, or an architecture without its network"
    if network:
        if any(
            arrays[name].dtype.kind not in NUMBER or not np.isfinite(arrays[name]).all() for name in network
        ):
            return "has a network weight that is not a finite number"
        return statement_problem(attrs["privacy"])
    for name, rank in (("weights", 2), ("bias", 1)):
        if name not in arrays or arrays[name].dtype.kind not in NUMBER or arrays[name].ndim != rank:
            return f"has no head: a malformed or missing dataset '/{name}'"
    if "basis" in arrays and (arrays["basis"].ndim != 2 or arrays["basis"].dtype.kind not in NUMBER):
        return "has a malformed dataset '/basis'"
    inner = dim if "basis" not in arrays else arrays["basis"].shape[1]
    if len(arrays["scale"]) != dim or ("basis" in arrays and arrays["basis"].shape != (dim, inner)):
        return f"has a scaler or basis that does not fit {dim} features"
    if arrays["weights"].shape != (inner, classes) or arrays["bias"].shape != (classes,):
        return f"has a head of shape {arrays['weights'].shape} for {inner} inputs and {classes} classes"
    if not all(
        np.isfinite(arrays[name]).all() for name in ("mean", "scale", "weights", "bias")
    ) or not np.all(arrays["scale"] > 0):
        return "has non-finite weights or a scale that is not positive"
    return statement_problem(attrs["privacy"])


def carried_problem(carried: dict) -> str | None:
    """What is wrong with what a release carries outside its arrays (an export's metadata): class names, head,
    feature recipe and statement of the types a classifier artifact holds; None when nothing is."""
    for key, kind in attribute_tables()[0]["classifier"].items():
        if not isinstance(carried.get(key), kind):
            return f"carries a {key} that is not a {kind.__name__}"
    names = carried["class_names"]
    if not all(isinstance(name, str) for name in names) or len(set(names)) != len(names) or len(names) < 2:
        return "has class names that are not two or more distinct texts"
    if not isinstance(carried["features"].get("feature_dim"), int):
        return "records a feature recipe without its feature_dim"
    return statement_problem(carried["privacy"])


def _selected_cell(cell: object, runs: int) -> bool:
    """A selection cell as artifacts/chosen.py reads it: its fields, and run ids among the model's runs."""
    from pillar_cli.privacy.basis import ChosenBy

    if not isinstance(cell, dict) or not all(
        key in cell for key in ("method", "k", "epsilon", "run_ids", "selected")
    ):
        return False
    ids = cell["run_ids"]
    return (
        isinstance(ids, list)
        and all(isinstance(i, int) and not isinstance(i, bool) and 0 <= i < runs for i in ids)
        and cell["selected"] in {chosen.value for chosen in ChosenBy}
    )


def _gsd_ranking(arrays: dict, attrs: dict, splits: list[str]) -> str | None:
    if (
        not attrs["ranking"]
        or len(arrays["distance"]) != len(attrs["ranking"])
        or not np.isfinite(arrays["distance"]).all()
    ):
        return "has an empty ranking or distances that do not match it"
    if "ledger" in attrs and not DPRelease.readable(attrs["ledger"], Released.PUBLIC_CHOICE):
        return "has a DP release pillar does not read (its event, unit, ε or δ: a DP-GSD names its unit)"
    return None


_CONSISTENCY = {
    "embeddings": (_split_names,),
    "embedding-shard": (_rows_agree,),
    "projection": (_projection_shapes,),
    "model": (_model_shapes,),
    "evaluation": (_evaluation_rows,),
    "classifier": (_classifier_shapes,),
    "gsd": (_gsd_ranking,),
}  # embeddings: read_split checks each split's
# lengths

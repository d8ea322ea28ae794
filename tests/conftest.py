"""Shared fixtures: a CLI runner and MNIST-5k pixel artifacts built once per session through the CLI."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import h5py
import pytest
from hypothesis import settings
from typer.testing import CliRunner

from pillar_cli.artifacts import Artifact
from pillar_cli.artifacts import core as artifacts_core
from pillar_cli.artifacts.classifier import classifier_of
from pillar_cli.artifacts.layout import json_default
from pillar_cli.artifacts.model_record import ModelRecord
from pillar_cli.artifacts.stored import to_attrs
from pillar_cli.cli import app

# Off a terminal a long stage prints a progress line every PILLAR_PROGRESS_SECONDS: on a slow or loaded
# machine a step that is quick elsewhere would print one, and an exact-stderr assertion would see it. The
# suite turns them off; the test of progress lines asks for them (0: a line at every update).
os.environ.setdefault("PILLAR_PROGRESS_SECONDS", "inf")

# CI replays a fixed set of examples (reproducible verdicts); local runs explore new ones each time.
settings.register_profile("ci", derandomize=True, database=None)
if os.environ.get("CI"):
    settings.load_profile("ci")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The files that hold a test marked slow first: `make test` hands each worker a file at a time in this
    order (--no-loadscope-reorder: xdist would otherwise hand out the files with most tests first, and a long
    file started late ends the run on one worker alone), so the long ones start early. Within a file the order
    stays as written."""
    slow_files = {item.path for item in items if item.get_closest_marker("slow")}
    items.sort(key=lambda item: item.path not in slow_files)


@pytest.fixture(scope="session", autouse=True)
def _calibration_cache(tmp_path_factory: pytest.TempPathFactory) -> None:
    os.environ.setdefault("PILLAR_CACHE_DIR", str(tmp_path_factory.mktemp("pillar-cache")))


class Pillar:
    """Runs `pillar ...` in-process and returns the click Result (stdout, stderr, exit_code)."""

    def __init__(self) -> None:
        self.runner = CliRunner()

    def __call__(self, *args: str | Path, expect: int | None = 0):
        result = self.runner.invoke(app, [str(a) for a in args])
        if expect is not None and result.exit_code != expect:
            raise AssertionError(
                f"pillar {' '.join(map(str, args))} exited {result.exit_code}, expected {expect}\n"
                f"stdout: {result.stdout}\nstderr: {result.stderr}\n{result.exception!r}"
            )
        return result


@pytest.fixture(scope="session")
def pillar() -> Pillar:
    return Pillar()


@pytest.fixture(scope="session")
def mnist(tmp_path_factory: pytest.TempPathFactory, pillar: Pillar) -> dict[str, Any]:
    """emb.h5 and pca.h5 for MNIST-5k pixels, and `rows`: each split's rows (each row's split is its keyed
    draw: 3,217 private / 390 public / 402 val / 991 test, about the 64 / 8 / 8 / 20 % asked for)."""
    root = tmp_path_factory.mktemp("mnist")
    paths = {"emb": root / "emb.h5", "pca": root / "pca.h5", "root": root}
    pillar("embed", "--source", "mnist5k", "--backbone", "pixels", "-o", paths["emb"])
    pillar("fit-pca", f"{paths['emb']}:public", "--k-max", "100", "-o", paths["pca"])
    with h5py.File(paths["emb"], "r") as h5:
        paths["rows"] = {split: len(h5[f"splits/{split}/index"]) for split in h5["splits"]}
    return paths


@pytest.fixture(scope="session", autouse=True)
def _records_round_trip():
    """Every model and classifier the suite writes reads back, through its typed record, as exactly the
    attributes it stored (as stored: JSON): the record is the one description of those attributes. And every
    release's statement holds its model's guarantee, for its head: the one record, copied."""
    core, original = artifacts_core, artifacts_core._write_root_attrs

    def checked(h5, artifact, provenance, digests):
        if artifact.kind in ("model", "classifier"):
            stored = json.loads(json.dumps(artifact.attrs, default=json_default))
            again = (
                ModelRecord.from_attrs(stored).to_attrs()
                if artifact.kind == "model"
                else to_attrs(classifier_of(Artifact("classifier", artifact.arrays, stored)))
            )
            assert json.loads(json.dumps(again, default=json_default)) == stored, artifact.kind
        if artifact.kind == "classifier":
            _copies_its_models_guarantee(artifact, provenance)
        return original(h5, artifact, provenance, digests)

    core._write_root_attrs = checked
    yield
    core._write_root_attrs = original


def _copies_its_models_guarantee(release: Artifact, provenance) -> None:
    """A release's statement holds the guarantee of the model it was released from, for its head (the count
    only where the head's method read it)."""
    from pillar_cli.artifacts import read
    from pillar_cli.privacy.guarantee import Guarantee

    models = [ref.path for ref in provenance.inputs if ref.kind == "model" and Path(ref.path).exists()]
    if not models:
        return
    header = ModelRecord.of(read(models[0], "model"))
    method = release.attrs["head"].get("method")
    statement = Guarantee.from_attrs(
        json.loads(json.dumps(release.attrs["privacy"]["guarantee"], default=json_default))
    )
    assert statement == header.guarantee.for_head(method in header.count_read_by), (models[0], method)

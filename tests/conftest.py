"""Shared fixtures: a CLI runner and MNIST-5k pixel artifacts built once per session through the CLI."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import h5py
import pytest
from hypothesis import settings
from typer.testing import CliRunner

from pillar_cli.cli import app

# Off a terminal a long stage prints a progress line every PILLAR_PROGRESS_SECONDS: on a slow or loaded machine a step
# that is quick elsewhere would print one, and an exact-stderr assertion would see it. The suite turns them off; the
# test of progress lines asks for them (0: a line at every update).
os.environ.setdefault("PILLAR_PROGRESS_SECONDS", "inf")

# CI replays a fixed set of examples (reproducible verdicts); local runs explore new ones each time.
settings.register_profile("ci", derandomize=True, database=None)
if os.environ.get("CI"):
    settings.load_profile("ci")


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
            raise AssertionError(f"pillar {' '.join(map(str, args))} exited {result.exit_code}, expected {expect}\n"
                                 f"stdout: {result.stdout}\nstderr: {result.stderr}\n{result.exception!r}")
        return result


@pytest.fixture(scope="session")
def pillar() -> Pillar:
    return Pillar()


@pytest.fixture(scope="session")
def mnist(tmp_path_factory: pytest.TempPathFactory, pillar: Pillar) -> dict[str, Any]:
    """emb.h5 and pca.h5 for MNIST-5k pixels, and `rows`: each split's rows (each row's split is its keyed draw:
    3,217 private / 390 public / 402 val / 991 test, about the 64 / 8 / 8 / 20 % asked for)."""
    root = tmp_path_factory.mktemp("mnist")
    paths = {"emb": root / "emb.h5", "pca": root / "pca.h5", "root": root}
    pillar("embed", "--source", "mnist5k", "--backbone", "pixels", "-o", paths["emb"])
    pillar("fit-pca", f"{paths['emb']}:public", "--k-max", "100", "-o", paths["pca"])
    with h5py.File(paths["emb"], "r") as h5:
        paths["rows"] = {split: len(h5[f"splits/{split}/index"]) for split in h5["splits"]}
    return paths

"""Silent wrong behaviour, refused: overwrites, modified inputs, contaminated test sets, private labels, bad
parameters. Each refusal is one line and a non-zero exit, and leaves every file as it was."""

from __future__ import annotations

import os
import stat

import pytest
from checks import assert_clean_failure, snapshot

from pillar_cli import artifacts

pytestmark = pytest.mark.slow  # end-to-end runs of the pillar command


def test_existing_outputs_are_replaced_only_with_force(pillar, mnist, tmp_path):
    out = tmp_path / "pca.h5"
    pillar("fit-pca", f"{mnist['emb']}:public", "--k-max", "20", "-o", out)
    before = snapshot(tmp_path)
    result = pillar("fit-pca", f"{mnist['emb']}:public", "--k-max", "30", "-o", out, expect=None)
    assert_clean_failure(result, 2, f"output {out} exists; pass --force to replace it")
    assert snapshot(tmp_path) == before
    plot = tmp_path / "acc.png"
    plot.write_bytes(b"an earlier figure")
    model = tmp_path / "m.h5"
    pillar("train-private", mnist["emb"], "-p", mnist["pca"], "--k", "5", "--eps", "inf", "--steps", "20", "-o", model)
    before = snapshot(tmp_path)
    result = pillar("evaluate", model, "-e", f"{mnist['emb']}:test", "--plot", plot, expect=None)
    assert_clean_failure(result, 2, f"output {plot} exists; pass --force to replace it")
    assert snapshot(tmp_path) == before
    pillar("fit-pca", f"{mnist['emb']}:public", "--k-max", "30", "-o", out, "--force")
    assert artifacts.read(out, "projection").attrs["k_max"] == 30


def test_outputs_are_readable_under_the_umask(pillar, mnist, tmp_path):
    previous = os.umask(0o022)
    try:
        pillar("fit-pca", f"{mnist['emb']}:public", "--k-max", "10", "-o", tmp_path / "pca.h5")
    finally:
        os.umask(previous)
    assert stat.S_IMODE((tmp_path / "pca.h5").stat().st_mode) == 0o644

"""Silent wrong behaviour, refused: overwrites, modified inputs, contaminated test sets, private labels, bad
parameters. Each refusal is one line and a non-zero exit, and leaves every file as it was."""

from __future__ import annotations

import json
import os
import stat

import pytest
from checks import assert_clean_failure, edited_copy, snapshot

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


def test_inputs_edited_after_they_were_written_are_refused(pillar, mnist, tmp_path):
    edited = tmp_path / "emb.h5"
    with edited_copy(mnist["emb"], edited, restamp=False) as h5:  # shifted private labels, stored hash kept
        h5["splits/private/labels"][...] = (h5["splits/private/labels"][()] + 1) % 10
    before = snapshot(tmp_path)
    message = f"{edited} was modified after it was written: its content no longer matches its content hash"
    for command in (["fit-pca", f"{edited}:public", "-o", tmp_path / "p.h5"],
                    ["train-private", edited, "-p", mnist["pca"], "--eps", "inf", "-o", tmp_path / "m.h5"]):
        assert_clean_failure(pillar(*command, expect=None), 3, message)
    assert snapshot(tmp_path) == before
    projection = tmp_path / "pca.h5"
    with edited_copy(mnist["pca"], projection, restamp=False) as h5:
        del h5.attrs["k_max"]  # attributes are hashed too
    assert_clean_failure(pillar("inspect", projection, expect=None), 3,
                         f"{projection} was modified after it was written: its content no longer matches its content "
                         "hash")


def test_inspect_verify_rehashes_the_ancestors(pillar, mnist, tmp_path):
    embeddings, projection = tmp_path / "emb.h5", tmp_path / "pca.h5"
    embeddings.write_bytes(mnist["emb"].read_bytes())
    pillar("fit-pca", f"{embeddings}:public", "--k-max", "10", "-o", projection)
    chain = json.loads(pillar("inspect", projection, "--verify", "--json").stdout)["chain"]
    assert [link["status"] for link in chain] == ["ok"]
    with edited_copy(mnist["emb"], embeddings, restamp=False) as h5:
        h5["splits/public/features"][0, 0] += 1.0
    assert [link["status"] for link in json.loads(pillar("inspect", projection, "--json").stdout)["chain"]] == ["ok"]
    chain = json.loads(pillar("inspect", projection, "--verify", "--json").stdout)["chain"]
    assert [link["status"] for link in chain] == ["modified"]

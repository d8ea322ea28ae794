"""`pillar embed --split-from FILE`: each row's split named by the holder (an official test set, a paper's
split) is the split embedded, stated as the holder's choice in every statement made from the file; fractions
given beside it and a file whose splits follow the labels are refused in one line, nothing written."""

from __future__ import annotations

import json

import h5py
import numpy as np
import pytest
from sklearn.datasets import load_digits

from pillar_cli import artifacts

pytestmark = pytest.mark.slow  # end-to-end runs of the pillar command

ROLES = np.array(["public", "val", "test", "test"] + ["train"] * 6)


def test_the_holders_splits_are_embedded_and_stated_as_theirs(pillar, tmp_path):
    n = len(load_digits().target)
    named = ROLES[np.arange(n) % 10]  # by row position: a function of each record alone
    (tmp_path / "splits.txt").write_text("\n".join(named) + "\n")
    emb, pca, model = tmp_path / "e.h5", tmp_path / "pca.h5", tmp_path / "m.h5"
    pillar("embed", "--source", "digits", "--split-from", tmp_path / "splits.txt", "-o", emb)
    for split, role in (("private", "train"), ("public", "public"), ("val", "val"), ("test", "test")):
        assert artifacts.read_split(f"{emb}:{split}").index.tolist() == np.flatnonzero(named == role).tolist()
    with h5py.File(emb) as h5:
        assert h5.attrs["splits_given_by"] == "splits.txt" and "public_fraction" not in h5.attrs
    pillar("fit-pca", f"{emb}:public", "--k-max", "10", "-o", pca)
    pillar("train-private", emb, "-p", pca, "--eps", "1", "--k", "10", "-o", model)
    pillar("release", model, "-o", tmp_path / "rel.h5")
    with h5py.File(tmp_path / "rel.h5") as h5:
        rests_on = json.loads(h5.attrs["privacy"])["rests_on"]
    assert (
        "the splits: named for each record by the data holder (embed --split-from), the holder's choice, "
        "taken to be a function of each record alone; pillar refused a file whose splits followed the labels "
        "or split a person"
    ) in rests_on


def test_fractions_beside_it_and_splits_that_follow_the_labels_are_one_line(pillar, tmp_path):
    labels = load_digits().target
    (tmp_path / "by-label.txt").write_text(
        "\n".join(np.where(labels == 7, "test", ROLES[np.arange(len(labels)) % 10]))
    )
    out = tmp_path / "e.h5"
    beside = pillar("embed", "--source", "digits", "--split-from", tmp_path / "by-label.txt",
                    "--test-fraction", "0.3", "-o", out, expect=2)  # fmt: skip
    assert beside.stderr.splitlines()[0] == (
        "error: --split-from names each row's split: --test-fraction would draw splits it does not use"
    )
    refused = pillar("embed", "--source", "digits", "--split-from", tmp_path / "by-label.txt", "-o", out,
                     expect=None)  # fmt: skip
    assert refused.exit_code != 0 and refused.stderr.splitlines()[0] == (
        f"error: {tmp_path / 'by-label.txt'} names every row of class '7' test: a private row's label would "
        "decide its split"
    )
    assert not out.exists() and not list(tmp_path.glob("e.h5*"))

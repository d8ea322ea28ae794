"""An interrupted embed keeps its rows in OUT.partial; --resume finishes it into the same bytes as one clean
run."""

from __future__ import annotations

import pytest

from pillar_cli.embedding import extraction as embedding

pytestmark = pytest.mark.slow  # end-to-end runs of the pillar command


@pytest.fixture
def reproducible(monkeypatch):
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1700000000")


def test_resumed_embed_is_byte_identical_to_an_uninterrupted_one(pillar, tmp_path, monkeypatch, reproducible):
    command = [
        "embed",
        "--source",
        "digits",
        "--backbone",
        "resnet18",
        "--no-pretrained",
        "--resize",
        "32",
        "--crop",
        "32",
        "--batch-size",
        "64",
        "-o",
        "emb.h5",
    ]
    (tmp_path / "clean").mkdir()
    monkeypatch.chdir(tmp_path / "clean")
    pillar(*command)
    clean = (tmp_path / "clean" / "emb.h5").read_bytes()

    (tmp_path / "cut").mkdir()
    monkeypatch.chdir(tmp_path / "cut")
    real_write, calls = embedding.FeatureStore.write, []

    def interrupted_write(self, split, start, rows):
        calls.append(split)
        if len(calls) == 25:  # inside the second split: a simulated Ctrl-C
            raise KeyboardInterrupt
        real_write(self, split, start, rows)

    monkeypatch.setattr(embedding.FeatureStore, "write", interrupted_write)
    stopped = pillar(*command, expect=130)
    # a slow run may print a progress line first
    assert (
        "error: interrupted; the rows done so far are kept in emb.h5.partial" in stopped.stderr.splitlines()
    )
    assert not (tmp_path / "cut" / "emb.h5").exists() and (tmp_path / "cut" / "emb.h5.partial").exists()
    monkeypatch.setattr(embedding.FeatureStore, "write", real_write)

    refused = pillar(*command, expect=2)
    assert refused.stderr.startswith("error: an interrupted run left emb.h5.partial")
    other = pillar(*command[:-2], "--seed", "1", "-o", "emb.h5", "--resume", expect=2)
    assert other.stderr.startswith("error: emb.h5.partial was started with other options")

    pillar(*command, "--resume")
    assert (tmp_path / "cut" / "emb.h5").read_bytes() == clean
    assert not (tmp_path / "cut" / "emb.h5.partial").exists()


def test_dataloader_workers_give_the_same_artifact(pillar, tmp_path, monkeypatch, reproducible):
    command = [
        "embed",
        "--source",
        "digits",
        "--backbone",
        "resnet18",
        "--no-pretrained",
        "--resize",
        "32",
        "--crop",
        "32",
        "--batch-size",
        "128",
    ]
    monkeypatch.chdir(tmp_path)
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    pillar(*command, "-o", "a/emb.h5")
    pillar(*command, "--workers", "2", "-o", "b/emb.h5")
    from pillar_cli import artifacts

    first, second = artifacts.read("a/emb.h5", "embeddings"), artifacts.read("b/emb.h5", "embeddings")
    assert first.provenance.content_hash == second.provenance.content_hash


def test_lazy_pcam_is_reopened_in_each_worker(pillar, tmp_path):
    import numpy as np
    from fakes import write_pcam

    write_pcam(tmp_path, train=40, test=10, side=8)
    pillar("embed", "--source", "pcam", "--path", tmp_path, "--batch-size", "4", "-o", tmp_path / "a.h5")
    pillar(
        "embed",
        "--source",
        "pcam",
        "--path",
        tmp_path,
        "--batch-size",
        "4",
        "--workers",
        "2",
        "-o",
        tmp_path / "b.h5",
    )
    from pillar_cli import artifacts

    for split in ("private", "test"):
        np.testing.assert_array_equal(
            artifacts.read_split(f"{tmp_path / 'a.h5'}:{split}").features,
            artifacts.read_split(f"{tmp_path / 'b.h5'}:{split}").features,
        )

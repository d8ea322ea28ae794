"""The forked first reading of an artifact: a crash of the reading library is one error, not a dead
interpreter."""

from __future__ import annotations

import ctypes
import os
import shutil
import time

import h5py
import numpy as np
import pytest

from pillar_cli import artifacts
from pillar_cli.artifacts import Artifact, crash_guard, layout
from pillar_cli.artifacts.crash_guard import passes_in_child
from pillar_cli.errors import ArtifactError

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="the guard forks")


@pytest.fixture
def projection(tmp_path):
    """A projection artifact that came from elsewhere (a copy): this process has not written it."""
    arrays = {"mean": np.zeros(4), "scale": np.ones(4), "components": np.eye(4), "eigenvalues": np.ones(4)}
    attrs = {"k_max": 4, "standardized": True, "rank": 4, "n_public": 10}
    written = artifacts.write(tmp_path / "written.h5", Artifact("projection", arrays, attrs)).path
    shutil.copyfile(written, tmp_path / "p.h5")
    return str(tmp_path / "p.h5")


def test_a_segfault_while_reading_is_one_error_and_the_reader_lives_on(projection):
    with pytest.raises(ArtifactError) as caught:
        passes_in_child(projection, lambda h5: ctypes.string_at(0))  # a real segmentation fault, in the child
    assert (
        str(caught.value)
        == f"{projection} is not a readable pillar artifact (the HDF5 library crashed reading "
        "it: SIGSEGV)"
    )
    assert artifacts.read(projection, "projection").kind == "projection"


def test_a_reading_that_never_ends_is_stopped_and_is_one_error(projection, monkeypatch):
    monkeypatch.setattr(crash_guard, "BASE_SECONDS", 1.0)
    with pytest.raises(ArtifactError) as caught:
        passes_in_child(projection, lambda h5: time.sleep(600))  # as libhdf5 looping on a damaged file
    assert (
        str(caught.value)
        == f"{projection} is not a readable pillar artifact (the HDF5 library read nothing of it "
        "for 1 s)"
    )


def blocks_every(seconds: float, blocks: int, then_sleep: float = 0.0):
    """A check that reads `blocks` blocks, one every `seconds` (a slow disk), then waits `then_sleep`."""

    def check(h5):
        for _ in range(blocks):
            time.sleep(seconds)
            layout.on_block_read()
        time.sleep(then_sleep)

    return check


def test_a_slow_disk_that_keeps_reading_is_not_stopped(projection, monkeypatch):
    # 2.4 s in all, twice the first block's limit, but never more than 0.3 s without a block
    monkeypatch.setattr(crash_guard, "BASE_SECONDS", 1.0)
    assert passes_in_child(projection, blocks_every(0.3, 8)) is True


def test_a_reading_that_stalls_after_some_blocks_is_stopped(projection, monkeypatch):
    # blocks every 0.2 s, then nothing: stopped after 1 + 4 × 0.2 s without a block (more on a loaded machine)
    monkeypatch.setattr(crash_guard, "BASE_SECONDS", 1.0)
    start = time.monotonic()
    with pytest.raises(ArtifactError, match=r"\(the HDF5 library read nothing of it for \d+ s\)$"):
        passes_in_child(projection, blocks_every(0.2, 3, then_sleep=600))
    assert time.monotonic() - start < 60


def test_the_child_says_whether_the_check_passed(projection):
    assert passes_in_child(projection, lambda h5: h5.attrs["pillar_kind"]) is True
    assert passes_in_child(projection, lambda h5: h5["no such dataset"]) is False


def test_a_file_rewritten_between_the_childs_reading_and_the_parents_is_refused(projection, monkeypatch):
    def then_rewritten(path, check):
        verified = passes_in_child(path, check)
        os.utime(path, ns=(0, 0))  # a writer in between: the parent would read content nobody hashed
        return verified

    monkeypatch.setattr(crash_guard, "passes_in_child", then_rewritten)
    with pytest.raises(ArtifactError, match=f"^{projection} changed while it was read$"):
        artifacts.read(projection, "projection")


def test_a_file_found_intact_is_read_again_without_a_child_until_it_changes(projection, monkeypatch):
    children = []

    def counted(path, check):
        children.append(str(path))
        return passes_in_child(path, check)

    monkeypatch.setattr(crash_guard, "passes_in_child", counted)
    first, second = artifacts.read(projection, "projection"), artifacts.read(projection, "projection")
    assert children == [projection] and np.array_equal(
        first.arrays["components"], second.arrays["components"]
    )
    with h5py.File(
        projection, "a"
    ) as h5:  # rewritten in place: another identity, so read in a child and rehashed
        h5["components"][0, 0] = 2.0
    with pytest.raises(ArtifactError, match="its content no longer matches its content hash"):
        artifacts.read(projection, "projection")
    assert children == [projection] * 2


def test_a_file_this_process_wrote_is_read_without_a_child(tmp_path, monkeypatch):
    children = []
    monkeypatch.setattr(crash_guard, "passes_in_child", lambda path, check: children.append(path))
    arrays = {"mean": np.zeros(4), "scale": np.ones(4), "components": np.eye(4), "eigenvalues": np.ones(4)}
    written = artifacts.write(
        tmp_path / "p.h5",
        Artifact("projection", arrays, {"k_max": 4, "standardized": True, "rank": 4, "n_public": 10}),
    )
    assert np.array_equal(artifacts.read(written.path, "projection").arrays["components"], np.eye(4))
    assert children == []

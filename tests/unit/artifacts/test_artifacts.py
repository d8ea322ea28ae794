"""Artifact schema v1: round trips, provenance, atomic writes, kind/version checks, corrupt files."""

from __future__ import annotations

import json

import h5py
import numpy as np
import pytest

from pillar_cli import artifacts
from pillar_cli.artifacts import Artifact, InputRef
from pillar_cli.artifacts.provenance import content_matches
from pillar_cli.errors import ArtifactError

SAMPLE_ATTRS = {
    "backbone": "pixels",
    "class_names": ["x", "y"],
    "split_roles": {"a": "test"},
    "dim": 3,
    "ok": True,
}


def _sample() -> Artifact:
    arrays = {
        "splits/a/features": np.arange(12, dtype=np.float32).reshape(4, 3),
        "splits/a/labels": np.arange(4),
        "splits/a/index": np.arange(4),
    }
    return Artifact("embeddings", arrays, dict(SAMPLE_ATTRS))


def test_round_trip_keeps_arrays_attrs_and_provenance(tmp_path):
    ref = InputRef("in.h5", "projection", "abc", "public")
    written = artifacts.write(
        tmp_path / "e.h5", _sample(), inputs=[ref], config={"k": 5}, command=["pillar", "x"]
    )
    back = artifacts.read(tmp_path / "e.h5", "embeddings")
    assert back.attrs == SAMPLE_ATTRS
    for name, array in _sample().arrays.items():
        np.testing.assert_array_equal(back.arrays[name], array)
    assert back.provenance.inputs == [ref]
    assert back.provenance.config == {"k": 5} and back.provenance.command == ["pillar", "x"]
    assert back.provenance.content_hash == written.provenance.content_hash
    assert back.provenance.content_hash == artifacts.content_hash(back.arrays, back.attrs)


def test_content_hash_ignores_write_time_but_not_content(tmp_path):
    first = artifacts.write(tmp_path / "1.h5", _sample()).provenance.content_hash
    second = artifacts.write(tmp_path / "2.h5", _sample()).provenance.content_hash
    changed = _sample()
    changed.arrays["splits/a/labels"] = np.array([0, 1, 2, 4])
    assert first == second != artifacts.write(tmp_path / "3.h5", changed).provenance.content_hash


def test_read_refuses_wrong_kind_and_unknown_version(tmp_path):
    path = tmp_path / "e.h5"
    artifacts.write(path, _sample())
    with pytest.raises(ArtifactError, match=r"e\.h5 is a embeddings artifact, expected model$"):
        artifacts.read(path, "model")
    with h5py.File(path, "a") as h5:
        h5.attrs["schema_version"] = 7
    with pytest.raises(ArtifactError, match="has schema version 7; this pillar reads version 3"):
        artifacts.read(path, "embeddings")


def test_missing_corrupt_and_foreign_files(tmp_path):
    with pytest.raises(ArtifactError, match="artifact not found"):
        artifacts.read(tmp_path / "nope.h5", "embeddings")
    (tmp_path / "junk.h5").write_bytes(b"not hdf5 at all" * 10)
    with pytest.raises(ArtifactError, match="is not a readable pillar artifact"):
        artifacts.read(tmp_path / "junk.h5", "embeddings")
    with h5py.File(tmp_path / "plain.h5", "w") as h5:
        h5["x"] = np.zeros(3)
    with pytest.raises(ArtifactError, match=r"is not a pillar artifact \(no 'pillar_kind' attribute\)"):
        artifacts.read(tmp_path / "plain.h5", "embeddings")


def test_truncated_file_is_a_clean_error(tmp_path):
    path = tmp_path / "e.h5"
    artifacts.write(path, _sample())
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(ArtifactError):
        artifacts.read(path, "embeddings")


def test_failed_write_keeps_the_existing_file_and_leaves_no_temporary(tmp_path):
    path = tmp_path / "e.h5"
    artifacts.write(path, _sample())
    before = path.read_bytes()
    broken = _sample()
    broken.attrs["bad"] = object()
    with pytest.raises(ArtifactError):
        # replacing is allowed; a failed write still replaces nothing
        artifacts.write(path, broken, force=True)
    assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["e.h5"]


def test_unwritable_directory_is_reported(tmp_path):
    with pytest.raises(ArtifactError, match="does not exist"):
        artifacts.write(tmp_path / "missing" / "e.h5", _sample())


def test_parse_ref():
    assert artifacts.parse_ref("dir/emb.h5:private") == ("dir/emb.h5", "private")
    assert artifacts.parse_ref("emb.h5", "public") == ("emb.h5", "public")


def test_strings_with_nul_characters_round_trip(tmp_path):
    artifact = Artifact(
        "gsd", {"distance": np.zeros(1)}, {"note": "a\x00b", "ranking": [{"candidate": "a"}], "settings": {}}
    )
    artifacts.write(tmp_path / "n.h5", artifact)
    assert artifacts.read(tmp_path / "n.h5", "gsd").attrs["note"] == "a\x00b"


def test_an_output_another_writer_makes_meanwhile_is_kept_and_the_loser_says_why(tmp_path):
    """Two commands writing one output at once: the one that finishes second replaces nothing and says another
    writer made the file while it ran (not that the user should have passed --force); no temporary file
    stays."""
    from pillar_cli.artifacts.files import replacing
    from pillar_cli.errors import UsageError

    out = tmp_path / "model.h5"
    with (
        pytest.raises(
            UsageError,
            match=rf"^output {out} appeared while this command ran \(another writer\?\); "
            r"nothing was replaced$",
        ),
        replacing(out) as scratch,
    ):
        scratch.write_bytes(b"this command's result")
        out.write_bytes(b"the other writer's result")
    assert out.read_bytes() == b"the other writer's result" and [p.name for p in tmp_path.iterdir()] == [
        "model.h5"
    ]


def test_an_embed_scratch_file_another_run_is_writing_is_named_as_such(tmp_path):
    """A second embed to the same output while the first runs: told the scratch file is being written now, not
    that an interrupted run left it (and never offered to resume into it)."""
    import subprocess
    import sys
    import time

    from pillar_cli.embedding.extraction import FeatureStore
    from pillar_cli.errors import UsageError

    scratch = tmp_path / "emb.h5.partial"
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            f"import h5py, sys, time; f = h5py.File({str(scratch)!r}, 'w'); "
            "print('open', flush=True); time.sleep(60)",
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout.readline().strip() == "open"
        with pytest.raises(UsageError, match=rf"^{scratch} is being written by another embed run right now$"):
            FeatureStore(scratch, {}, {"private": 3}, 2, resume=False)
    finally:
        holder.kill()
        holder.wait()
    time.sleep(0.1)
    with pytest.raises(UsageError, match=rf"^an interrupted run left {scratch}$"):
        FeatureStore(scratch, {}, {"private": 3}, 2, resume=False)


def test_an_output_found_at_write_time_is_refused_as_a_usage_error_each_interface_words_its_own_way(tmp_path):
    """Refused while writing (another run made it meanwhile), it was an ArtifactError whose text had frozen
    the Python API's words: the command line said "pass force=True"."""
    from pillar_cli.cli.boundary import flag_name
    from pillar_cli.errors import UsageError

    out = tmp_path / "gsd.h5"
    out.write_bytes(b"another run's file")
    with pytest.raises(UsageError) as refused:
        artifacts.write(out, Artifact("gsd", {"distance": np.zeros(1)}, {"ranking": [], "settings": {}}))
    assert str(refused.value) == f"output {out} exists; pass force=True to replace it"
    assert refused.value.render(lambda name, value: flag_name(name, value, {}))[0] == (
        f"output {out} exists; pass --force to replace it"
    )
    assert out.read_bytes() == b"another run's file"


def two_splits(tmp_path, edit):
    """An embeddings file of splits a and b, `edit(h5)` applied to it after it was written."""
    arrays = _sample().arrays | {
        "splits/b/features": np.ones((2, 3), np.float32),
        "splits/b/labels": np.zeros(2, int),
        "splits/b/index": np.arange(4, 6),
    }
    path = artifacts.write(tmp_path / "e.h5", Artifact("embeddings", arrays, dict(SAMPLE_ATTRS))).path
    with h5py.File(path, "a") as h5:
        edit(h5)
    return path


def another_digest(stored: str) -> str:
    digests = json.loads(stored)
    digests["splits/b/features"] = "0" * 64
    return json.dumps(digests)


MODIFIED = "was modified after it was written: its content no longer matches its content hash"


def test_a_split_read_rehashes_its_own_arrays_and_checks_the_rest_from_their_digests(tmp_path):
    def edit(h5):
        h5["splits/b/features"][0, 0] = 7.0

    path = two_splits(tmp_path, edit)
    assert np.array_equal(
        artifacts.read(path, "embeddings", under="splits/a").arrays["splits/a/features"],
        _sample().arrays["splits/a/features"],
    )
    for under in ("splits/b", None):
        with pytest.raises(ArtifactError, match=f"^{path} {MODIFIED}$"):
            artifacts.read(path, "embeddings", under=under)
    assert not content_matches(path)


@pytest.mark.parametrize(
    "edit",
    [
        lambda h5: h5.attrs.modify("array_digests", another_digest(h5.attrs["array_digests"])),
        lambda h5: h5.create_dataset("splits/b/extra", data=np.zeros(2)),
        lambda h5: h5.__delitem__("splits/b/labels"),
        lambda h5: h5.attrs.modify("backbone", "another"),
    ],
    ids=["a digest", "a dataset added", "a dataset removed", "an attribute"],
)
def test_what_another_splits_read_does_not_rehash_is_still_checked(tmp_path, edit):
    path = two_splits(tmp_path, edit)
    with pytest.raises(ArtifactError, match=f"^{path} {MODIFIED}$"):
        artifacts.read(path, "embeddings", under="splits/a")

"""Property tests (hypothesis): artifacts round-trip; a fuzz of the reader only ever raises ArtifactError."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import numpy as np
from checks import fuzz_examples
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from pillar_cli import artifacts
from pillar_cli.artifacts import Artifact
from pillar_cli.errors import ArtifactError

array_names = st.from_regex(r"[a-z]{1,6}(/[a-z0-9]{1,6}){0,2}", fullmatch=True)


arrays = hnp.arrays(
    st.sampled_from([np.float32, np.float64, np.int64]),
    hnp.array_shapes(max_dims=3, max_side=5),
    elements=st.integers(-1000, 1000),
)


attr_values = st.one_of(
    st.text(max_size=20),
    st.integers(-(10**6), 10**6),
    st.booleans(),
    st.lists(st.integers(0, 9), max_size=4),
    st.dictionaries(st.text("abc", max_size=3), st.integers(), max_size=3),
)


@given(
    st.dictionaries(array_names, arrays, min_size=1, max_size=4),
    st.dictionaries(
        st.from_regex(r"[a-z_]{1,10}", fullmatch=True).filter(
            lambda key: key not in artifacts.RESERVED_ATTRS
        ),
        attr_values,
        max_size=4,
    ),
)
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_artifact_write_read_round_trip(named_arrays, attrs):
    names = sorted(named_arrays)
    if any(other.startswith(name + "/") for name in names for other in names):
        return  # a dataset cannot also be a group
    directory = Path(tempfile.mkdtemp())
    try:
        written = artifacts.write(directory / "a.h5", Artifact("gsd", named_arrays, attrs))
        back = artifacts.read(directory / "a.h5", "gsd", check_schema=False)  # storage of any content
        assert back.attrs == attrs and sorted(back.arrays) == names
        for name in names:
            np.testing.assert_array_equal(back.arrays[name], named_arrays[name])
        assert back.provenance.content_hash == written.provenance.content_hash
    finally:
        shutil.rmtree(directory)


def _valid_artifact_bytes() -> bytes:
    directory = Path(tempfile.mkdtemp())
    try:
        arrays = {
            "mean": np.arange(8.0),
            "scale": np.ones(8),
            "components": np.eye(8),
            "eigenvalues": np.ones(8),
        }
        attrs = {"k_max": 8, "standardized": True, "rank": 8, "n_public": 10}
        artifacts.write(directory / "a.h5", Artifact("projection", arrays, attrs))
        artifacts.read(directory / "a.h5", "projection")  # valid before any corruption
        return (directory / "a.h5").read_bytes()
    finally:
        shutil.rmtree(directory)


VALID = _valid_artifact_bytes()


@given(
    st.one_of(
        st.binary(max_size=4096),
        st.lists(st.tuples(st.integers(0, len(VALID) - 1), st.integers(0, 255)), min_size=1, max_size=40).map(
            lambda edits: _corrupt(VALID, edits)
        ),
        st.integers(0, len(VALID)).map(lambda cut: VALID[:cut]),
    )
)
@settings(max_examples=fuzz_examples(150), deadline=None)
def test_reader_fuzz_only_ever_raises_artifact_errors(data):
    directory = Path(tempfile.mkdtemp())
    try:
        path = directory / "fuzz.h5"
        path.write_bytes(data)
        try:
            artifact = artifacts.read(path, "projection")
        except ArtifactError:
            return
        assert artifact.kind == "projection"  # corruption that spared everything read is fine
    finally:
        shutil.rmtree(directory)


def _corrupt(data: bytes, edits: list[tuple[int, int]]) -> bytes:
    buffer = bytearray(data)
    for position, value in edits:
        buffer[position] = value
    return bytes(buffer)

"""The fuzz suite over what a user ships: a release and its ONNX, TorchScript and safetensors exports,
corrupted as test_fuzz.py corrupts artifacts (bytes flipped or cut; datasets and attributes dropped, retyped
or set; a field of a statement, recipe, head or class list set — re-stamped or re-hashed to be consistent, as
a buggy writer would leave it). Every reader (inspect, predict, export; the export metadata loader any user
can call) answers in one error line with a non-zero exit, or succeeds: never a traceback, never a partial
output file."""

from __future__ import annotations

from pathlib import Path

import pytest
from checks import fuzz_examples
from corruption import EXPORT_HOW, HOW, corrupt, corrupt_bytes, edit_export, values
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from pillar_cli.errors import PillarError
from pillar_cli.release.exported import read_export_metadata

pytestmark = pytest.mark.slow  # end-to-end runs of the pillar command

EXPORTS = {"onnx": ".onnx", "torchscript": ".pt", "safetensors": ".safetensors"}


@pytest.fixture(scope="module")
def shipped(mnist, pillar, tmp_path_factory) -> dict[str, Path]:
    """A release of one MNIST-5k head and its three exports."""
    root = tmp_path_factory.mktemp("shipped")
    pillar(
        "train-private",
        mnist["emb"],
        "-p",
        mnist["pca"],
        "--eps",
        "1",
        "--k",
        "10",
        "--lr",
        "0.5",
        "--steps",
        "20",
        "-o",
        root / "m.h5",
    )
    pillar("release", root / "m.h5", "-o", root / "release.h5")
    files = {"release": root / "release.h5"}
    for fmt, suffix in EXPORTS.items():
        files[fmt] = root / f"export{suffix}"
        pillar("export", files["release"], "--format", fmt, "-o", files[fmt])
    return files


def assert_one_line_or_success(result, argv: list, outputs: list[Path]) -> None:
    assert isinstance(result.exception, (SystemExit, type(None))), (argv, result.exception)
    if result.exit_code:
        first, *rest = result.stderr.splitlines()
        assert first.startswith("error: ") and len(rest) <= 1, (argv, result.stderr)
        assert "Traceback" not in result.stderr
        assert not any(path.exists() for path in outputs), (argv, "partial output")
    for path in outputs:
        path.unlink(missing_ok=True)


@given(how=st.sampled_from(HOW), choice=st.integers(0, 10**6), value=values)
@settings(
    max_examples=fuzz_examples(15), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
def test_a_corrupted_release_ends_in_one_line(pillar, mnist, shipped, tmp_path, how, choice, value):
    corrupted, csv, export = tmp_path / "release.h5", tmp_path / "p.csv", tmp_path / "x.safetensors"
    corrupt(shipped["release"], corrupted, how, choice, value)
    for argv, outputs in (
        (["inspect", corrupted], []),
        (["predict", corrupted, f"{mnist['emb']}:test", "-o", csv], [csv]),
        (["export", corrupted, "--format", "safetensors", "-o", export], [export]),
    ):
        assert_one_line_or_success(pillar(*argv, expect=None), argv, outputs)


@pytest.mark.parametrize("fmt", list(EXPORTS))
@given(how=st.sampled_from(EXPORT_HOW), choice=st.integers(0, 10**6), value=values)
# ε = 15,024: the PRV floor's grid failed (a traceback)
@example(how="set-field-rehashed", choice=0, value=15024)
@settings(
    max_examples=fuzz_examples(10), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
def test_a_corrupted_export_ends_in_one_line(pillar, shipped, tmp_path, fmt, how, choice, value):
    corrupted = tmp_path / f"export{EXPORTS[fmt]}"
    if not corrupt_bytes(shipped[fmt], corrupted, how, choice):
        edit_export(shipped[fmt], corrupted, choice, value, rehash=how == "set-field-rehashed")
    assert_one_line_or_success(pillar("inspect", corrupted, expect=None), ["inspect", corrupted], [])
    try:
        read_export_metadata(corrupted)
    except (
        PillarError
    ) as refused:  # the one kind of failure the loader may raise: a line, no exception's name
        assert "\n" not in str(refused) and "Error:" not in str(refused), str(refused)

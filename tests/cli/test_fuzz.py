"""Every artifact reader, fed corrupted files through the CLI: bit flips, truncation, missing datasets,
datasets of the wrong dtype or shape, wrong attributes (the last three with a consistent content hash, as a
buggy writer would leave them). Each run ends with one error line and a non-zero exit, or succeeds: never a
traceback."""

from __future__ import annotations

from pathlib import Path

import pytest
from checks import assert_clean_failure, edited_copy, fuzz_examples
from corruption import HOW, corrupt, values
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytestmark = pytest.mark.slow  # end-to-end runs of the pillar command


@pytest.fixture(scope="module")
def originals(mnist, pillar, tmp_path_factory) -> dict[str, Path]:
    """One artifact of every kind, from the MNIST-5k fixture."""
    root = tmp_path_factory.mktemp("originals")
    emb, pca = mnist["emb"], mnist["pca"]
    pillar(
        "train-private",
        emb,
        "-p",
        pca,
        "--k",
        "5,full",
        "--eps",
        "1",
        "--steps",
        "10",
        "-o",
        root / "model.h5",
    )
    pillar("evaluate", root / "model.h5", "-e", f"{emb}:test", "-o", root / "eval.h5")
    pillar("check-assumptions", f"{emb}:val", "-p", pca, "--k", "2,5", "-o", root / "assumptions.h5")
    pillar("gsd", "--private", emb, "--public", f"{emb}:test", "--max-samples", "100", "-o", root / "gsd.h5")
    return {
        "embeddings": emb,
        "projection": pca,
        "model": root / "model.h5",
        "evaluation": root / "eval.h5",
        "assumptions": root / "assumptions.h5",
        "gsd": root / "gsd.h5",
    }


def readers(kind: str, corrupted: Path, originals: dict[str, Path], out: Path) -> list[list]:
    """The commands that read an artifact of this kind."""
    emb = originals["embeddings"]
    return {
        "embeddings": [["fit-pca", f"{corrupted}:public", "-o", out], ["inspect", corrupted]],
        "projection": [["train-private", emb, "-p", corrupted, "--eps", "inf", "--steps", "5", "-o", out]],
        "model": [["evaluate", corrupted, "-e", f"{emb}:test"]],
        "evaluation": [["report", corrupted, "--methods-plot", out.with_suffix(".png")]],
        "assumptions": [["inspect", corrupted]],
        "gsd": [["inspect", corrupted, "--verify"]],
    }[kind] + (
        [["check-assumptions", f"{emb}:val", "-p", corrupted, "--k", "2", "--pairs", "2", "-o", out]]
        if kind == "projection"
        else []
    )


@pytest.mark.parametrize("kind", ["embeddings", "projection", "model", "evaluation", "assumptions", "gsd"])
@given(how=st.sampled_from(HOW), choice=st.integers(0, 10**6), value=values)
@settings(
    max_examples=fuzz_examples(15), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
def test_corrupted_artifacts_end_in_one_line(pillar, originals, tmp_path, kind, how, choice, value):
    corrupted = tmp_path / f"{kind}-{how}.h5"
    corrupt(originals[kind], corrupted, how, choice, value)
    for argv in readers(kind, corrupted, originals, tmp_path / "out.h5"):
        result = pillar(*argv, expect=None)
        for made in (tmp_path / "out.h5", tmp_path / "out.png"):
            made.unlink(missing_ok=True)
        assert isinstance(result.exception, (SystemExit, type(None))), (argv, how, result.exception)
        if result.exit_code:
            first, *rest = result.stderr.splitlines()
            assert first.startswith("error: ") and len(rest) <= 1, (argv, how, result.stderr)
            assert "Traceback" not in result.stderr


@pytest.mark.parametrize(
    "key, value, problem",
    [
        (
            "splits",
            "[1, 2]",
            "has split names that are not texts",
        ),  # once TypeError: sequence item 0: expected str
        (
            "public_fraction",
            "",
            "has no valid attribute 'public_fraction'",
        ),  # once TypeError: can't multiply sequence
    ],
    ids=["split-names-numbers", "public-fraction-text"],
)
def test_embeddings_attributes_the_randomised_runs_found_end_in_one_line(
    pillar, originals, tmp_path, key, value, problem
):
    """Cases the randomised test above found on a fresh clone (an attribute of the wrong type, re-hashed),
    pinned."""
    corrupted, out = tmp_path / "c.h5", tmp_path / "o.h5"
    with edited_copy(originals["embeddings"], corrupted) as h5:
        h5.attrs[key] = value
    assert_clean_failure(
        pillar("fit-pca", f"{corrupted}:public", "-o", out, expect=None),
        3,
        f"{corrupted}: embeddings artifact {problem}",
        out,
    )

"""Every artifact reader, fed corrupted files through the CLI: bit flips, truncation, missing datasets, datasets of
the wrong dtype or shape, wrong attributes (the last three with a consistent content hash, as a buggy writer
would leave them). Each run ends with one error line and a non-zero exit, or succeeds: never a traceback."""

from __future__ import annotations

from pathlib import Path

import h5py
import numpy as np
import pytest
from checks import edited_copy, fuzz_examples
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytestmark = pytest.mark.slow  # end-to-end runs of the pillar command


@pytest.fixture(scope="module")
def originals(mnist, pillar, tmp_path_factory) -> dict[str, Path]:
    """One artifact of every kind, from the MNIST-5k fixture."""
    root = tmp_path_factory.mktemp("originals")
    emb, pca = mnist["emb"], mnist["pca"]
    pillar("train-private", emb, "-p", pca, "--k", "5,full", "--eps", "1", "--steps", "10", "-o", root / "model.h5")
    pillar("evaluate", root / "model.h5", "-e", f"{emb}:test", "-o", root / "eval.h5")
    pillar("check-assumptions", f"{emb}:val", "-p", pca, "--k", "2,5", "-o", root / "assumptions.h5")
    pillar("gsd", "--private", emb, "--public", f"{emb}:test", "--max-samples", "100", "-o", root / "gsd.h5")
    return {"embeddings": emb, "projection": pca, "model": root / "model.h5", "evaluation": root / "eval.h5",
            "assumptions": root / "assumptions.h5", "gsd": root / "gsd.h5"}


def readers(kind: str, corrupted: Path, originals: dict[str, Path], out: Path) -> list[list]:
    """The commands that read an artifact of this kind."""
    emb = originals["embeddings"]
    return {"embeddings": [["fit-pca", f"{corrupted}:public", "-o", out], ["inspect", corrupted]],
            "projection": [["train-private", emb, "-p", corrupted, "--eps", "inf", "--steps", "5", "-o", out]],
            "model": [["evaluate", corrupted, "-e", f"{emb}:test"]],
            "evaluation": [["report", corrupted, "--methods-plot", out.with_suffix(".png")]],
            "assumptions": [["inspect", corrupted]], "gsd": [["inspect", corrupted, "--verify"]]}[kind] + \
        ([["check-assumptions", f"{emb}:val", "-p", corrupted, "--k", "2", "-o", out]] if kind == "projection" else [])


def _datasets(h5: h5py.File) -> list[str]:
    names: list[str] = []
    h5.visititems(lambda name, node: names.append(name) if isinstance(node, h5py.Dataset) else None)
    return sorted(names)


def corrupt(source: Path, target: Path, how: str, choice: int, value) -> None:
    if how == "flip":
        data = bytearray(source.read_bytes())
        for offset in range(choice % 7 + 1):
            data[(choice * 7919 + offset * 104729) % len(data)] ^= 0xFF
        target.write_bytes(bytes(data))
        return
    if how == "truncate":
        data = source.read_bytes()
        target.write_bytes(data[:choice % len(data)])
        return
    with edited_copy(source, target) as h5:
        names = _datasets(h5)
        name = names[choice % len(names)]
        if how == "drop-dataset":
            del h5[name]
        elif how == "reshape-dataset":
            array = h5[name][()]
            del h5[name]
            h5[name] = np.asarray(array).reshape(-1)[: max(1, np.asarray(array).size - 1)]
        elif how == "retype-dataset":
            shape = h5[name].shape
            del h5[name]
            h5[name] = np.full(shape, 1, dtype=value if isinstance(value, type) else np.int8)
        else:
            keys = sorted(h5.attrs)
            key = keys[choice % len(keys)]
            if how == "drop-attribute":
                del h5.attrs[key]
            else:
                h5.attrs[key] = value if not isinstance(value, type) else str(value)


values = st.one_of(st.integers(-3, 10**6), st.text(st.characters(exclude_characters="\x00"), max_size=8),
                   st.floats(allow_nan=True),
                   st.sampled_from([np.float16, np.int64, np.bool_, np.uint8, "[1, 2]", "{}", "null"]))


@pytest.mark.parametrize("kind", ["embeddings", "projection", "model", "evaluation", "assumptions", "gsd"])
@given(how=st.sampled_from(["flip", "truncate", "drop-dataset", "reshape-dataset", "retype-dataset",
                            "drop-attribute", "set-attribute"]), choice=st.integers(0, 10**6), value=values)
@settings(max_examples=fuzz_examples(15), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
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

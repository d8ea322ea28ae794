"""16-bit TIFFs whose two classes differ only below 8 bits (every pixel of both rounds to the 8-bit level 4):
embedded at their own depth they train a head that tells them apart, the recipe records the depth, predict
decodes new files at it, an ONNX export reads them as uint16 and agrees with predict; read at 8 bits the
classes are one image."""

from __future__ import annotations

import numpy as np
import pytest
from checks import read_predictions

from pillar_cli import artifacts

tifffile = pytest.importorskip("tifffile")
pytestmark = pytest.mark.slow  # end-to-end runs of the pillar command

LEVELS = {"dim": (1029, 1080), "bright": (1100, 1156)}  # / 257: 4.00-4.20 and 4.28-4.50, both 4 at 8 bits


def _write(folder, levels: tuple[int, int], count: int, rng: np.random.Generator) -> list[np.ndarray]:
    folder.mkdir(parents=True)
    images = [rng.integers(*levels, (8, 8), endpoint=True).astype(np.uint16) for _ in range(count)]
    for i, image in enumerate(images):
        tifffile.imwrite(folder / f"{i:03d}.tif", image)
    return images


def test_16_bit_files_keep_the_levels_8_bits_would_merge(pillar, tmp_path):
    rng = np.random.default_rng(0)
    for name, levels in LEVELS.items():
        _write(tmp_path / "train" / name, levels, 80, rng)
    new = [
        *_write(tmp_path / "new", LEVELS["bright"], 2, rng),
        rng.integers(1029, 1080, (8, 8)).astype(np.uint16),
    ]
    tifffile.imwrite(tmp_path / "new" / "002.tif", new[2])
    emb, pca, model, released = (tmp_path / name for name in ("emb.h5", "pca.h5", "m.h5", "rel.h5"))
    pillar(
        "embed",
        "--source",
        "image-folder",
        "--path",
        tmp_path / "train",
        "--param",
        "channels=1",
        "--public-fraction",
        "0.2",
        "-o",
        emb,
    )
    recipe = artifacts.read_split(f"{emb}:private").recipe
    assert recipe.pixel_depth == 16 and recipe.preprocessing == "flatten (HWC order), /65535"
    pillar(
        "embed",
        "--source",
        "image-folder",
        "--path",
        tmp_path / "train",
        "--param",
        "channels=1",
        "--param",
        "depth=8",
        "--public-fraction",
        "0.2",
        "-o",
        tmp_path / "eight.h5",
    )
    assert np.ptp(artifacts.read_split(f"{tmp_path / 'eight.h5'}:private").features) == 0

    pillar("fit-pca", f"{emb}:public", "--k-max", "5", "-o", pca)
    pillar("train-private", emb, "-p", pca, "--eps", "8", "--delta", "1e-3", "--k", "2", "-o", model)
    pillar("release", model, "-o", released)
    pillar(
        "predict", released, "--source", "image-folder", "--path", tmp_path / "new", "-o", tmp_path / "p.csv"
    )
    _, _, classes, probabilities = read_predictions(tmp_path / "p.csv")
    assert classes == ["bright", "bright", "dim"]

    import onnxruntime

    pillar("export", released, "--format", "onnx", "-o", tmp_path / "c.onnx")
    session = onnxruntime.InferenceSession(str(tmp_path / "c.onnx"), providers=["CPUExecutionProvider"])
    assert session.get_inputs()[0].type == "tensor(uint16)"
    exported = session.run(None, {session.get_inputs()[0].name: np.stack(new)[..., None]})[0]
    np.testing.assert_allclose(exported, probabilities, atol=1e-6)

    np.savez(tmp_path / "eight.npz", x=(np.stack(new) // 257).astype(np.uint8))
    result = pillar(
        "predict",
        released,
        "--source",
        "npz",
        "--path",
        tmp_path / "eight.npz",
        "-o",
        tmp_path / "q.csv",
        expect=None,
    )
    assert result.exit_code != 0 and result.stderr.splitlines()[0] == (
        "error: the inputs are 8-bit images; the classifier's rows were embedded from 16-bit images"
    )

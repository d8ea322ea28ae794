"""Image files as users have them, classified by a classifier trained on greyscale rows (MNIST-5k pixels):
8-bit and 16-bit greyscale PNGs, RGB PNGs and an EXIF-rotated JPEG-free PNG are decoded as its rows were
embedded (one channel, 8 bits, upright), so predict from the files gives what predict from the embedded rows
gives."""

from __future__ import annotations

import numpy as np
import pytest
from checks import mnist_pixels, read_predictions
from PIL import Image

from pillar_cli import artifacts

pytestmark = pytest.mark.slow  # end-to-end runs of the pillar command


def _write(folder, images: np.ndarray, kind: str) -> None:
    folder.mkdir()
    for i, image in enumerate(images):
        if kind == "grey8":
            picture = Image.fromarray(image, mode="L")
        elif kind == "grey16":  # an X-ray's depth: the same picture on 0-65,535
            picture = Image.fromarray(image.astype(np.uint16) * 257)
        elif kind == "rgb":
            picture = Image.fromarray(np.repeat(image[..., None], 3, axis=2), mode="RGB")
        else:  # stored rotated, with the EXIF orientation that turns it upright (6: rotate 270° to view)
            picture = Image.fromarray(np.rot90(image, k=1), mode="L")
            exif = Image.Exif()
            exif[0x0112] = 6
            picture.save(folder / f"{i:03d}.png", exif=exif)
            continue
        picture.save(folder / f"{i:03d}.png")


@pytest.mark.parametrize("kind", ["grey8", "grey16", "rgb", "exif-rotated"])
def test_image_files_are_decoded_as_the_rows_were_embedded(mnist, pillar, tmp_path, kind):
    pillar(
        "train-private",
        mnist["emb"],
        "-p",
        mnist["pca"],
        "--eps",
        "1",
        "--k",
        "20",
        "--lr",
        "0.5",
        "--steps",
        "100",
        "-o",
        tmp_path / "m.h5",
    )
    pillar("release", tmp_path / "m.h5", "-o", tmp_path / "c.h5")
    test = artifacts.read_split(f"{mnist['emb']}:test")
    pixels, _ = mnist_pixels()
    images = pixels.reshape(-1, 28, 28).astype(np.uint8)[test.index[:24]]
    _write(tmp_path / "files", images, kind)
    pillar(
        "predict",
        tmp_path / "c.h5",
        "--source",
        "image-folder",
        "--path",
        tmp_path / "files",
        "--workers",
        "0",
        "-o",
        tmp_path / "files.csv",
    )
    pillar("predict", tmp_path / "c.h5", f"{mnist['emb']}:test", "-o", tmp_path / "rows.csv")
    _, _, from_files, files_probabilities = read_predictions(tmp_path / "files.csv")
    _, _, from_rows, rows_probabilities = read_predictions(tmp_path / "rows.csv")
    assert from_files == from_rows[:24]
    np.testing.assert_allclose(files_probabilities, rows_probabilities[:24], atol=1e-6)


def test_channels_other_than_one_or_three_are_one_line(mnist, pillar, tmp_path):
    (tmp_path / "files").mkdir()
    Image.fromarray(np.zeros((28, 28), np.uint8)).save(tmp_path / "files" / "a.png")
    result = pillar(
        "embed",
        "--source",
        "image-folder",
        "--path",
        tmp_path / "files",
        "--param",
        "channels=2",
        "-o",
        tmp_path / "e.h5",
        expect=None,
    )
    assert result.exit_code == 2 and result.stderr.splitlines()[0] == (
        "error: --param channels=2: image files are read as 1 (greyscale) or 3 (colour) channels"
    )

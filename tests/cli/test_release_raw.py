"""A release applied to raw image files: embedded by the rebuilt recorded backbone (a timm network from a
weights file, and resized pixels), equal to predictions from the embeddings; exports that carry the backbone
inside."""

from __future__ import annotations

import shutil

import numpy as np
import pytest
from checks import assert_clean_failure, exported_probabilities, read_predictions
from PIL import Image
from sklearn.datasets import load_digits

pytestmark = pytest.mark.slow  # end-to-end runs of the pillar command

RESIZE = {"test_vit": ["--resize", "32", "--crop", "32"], "pixels": ["--resize", "12"]}


def _predictions(path) -> tuple[list[str], np.ndarray]:
    _, rows, _, probabilities = read_predictions(path)
    return rows, probabilities


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    """600 digits as 16 × 16 PNG files, one folder per class."""
    root = tmp_path_factory.mktemp("raw") / "digits"
    digits = load_digits()
    for i, (image, label) in enumerate(zip(digits.images[:600], digits.target[:600])):
        (root / str(label)).mkdir(parents=True, exist_ok=True)
        pixels = np.rint(image * (255 / 16)).astype(np.uint8)
        Image.fromarray(pixels).resize((16, 16), Image.BILINEAR).save(root / str(label) / f"{i:04d}.png")
    return root


@pytest.fixture(scope="module", params=["test_vit", "pixels"])
def released(request, folder, pillar):
    """(classifier, embeddings, weights file or None) of a head on features of the folder's images."""
    import timm
    import torch

    backbone, root = request.param, folder.parent
    weights = None
    if backbone != "pixels":
        torch.manual_seed(1)
        weights = root / "vit.pt"
        torch.save(timm.create_model(backbone, num_classes=0).state_dict(), weights)
    emb, pca, model, classifier = (root / f"{backbone}-{name}.h5" for name in ("emb", "pca", "model", "clf"))
    pillar(
        "embed",
        "--source",
        "image-folder",
        "--path",
        folder,
        "--backbone",
        backbone,
        *RESIZE[backbone],
        *(["--weights", weights] if weights else []),
        "--workers",
        "0",
        "-o",
        emb,
    )
    pillar("fit-pca", f"{emb}:public", "--k-max", "20", "-o", pca)
    pillar(
        "train-private",
        emb,
        "-p",
        pca,
        "--k",
        "10",
        "--eps",
        "1",
        "--lr",
        "0.5",
        "--batch-size",
        "128",
        "--steps",
        "100",
        "-o",
        model,
    )
    pillar("release", model, "-o", classifier)
    return classifier, emb, weights


def test_raw_files_are_classified_as_their_embeddings(folder, released, pillar, tmp_path):
    """The test split's image files, copied into a folder without classes (inputs to classify, no labels),
    predicted from the files equal the predictions from their embedded rows."""
    from pillar_cli import artifacts

    classifier, emb, weights = released
    files = sorted(folder.glob("*/*.png"))  # the image-folder source's row order
    test_ids = artifacts.read_split(f"{emb}:test").index[:40]
    unlabelled = tmp_path / "new"
    unlabelled.mkdir()
    for i in test_ids:
        shutil.copy(files[i], unlabelled / f"{i:04d}.png")
    pillar("predict", classifier, f"{emb}:test", "-o", tmp_path / "embedded.csv")
    pillar(
        "predict",
        classifier,
        "--source",
        "image-folder",
        "--path",
        unlabelled,
        "--workers",
        "0",
        *(["--weights", weights] if weights else []),
        "-o",
        tmp_path / "raw.csv",
    )
    embedded_rows, embedded = _predictions(tmp_path / "embedded.csv")
    raw_rows, raw = _predictions(tmp_path / "raw.csv")
    assert raw_rows == [str(unlabelled / f"{i:04d}.png") for i in test_ids]
    assert embedded_rows[:40] == [str(i) for i in test_ids]
    assert (
        np.abs(raw - embedded[:40]).max() <= 1e-5
    )  # fp32: other batches, other rounding in the resize kernels
    assert np.array_equal(raw.argmax(1), embedded[:40].argmax(1))


# TorchScript, as asked for
@pytest.mark.filterwarnings("ignore:`torch.jit.load` is deprecated:FutureWarning")
def test_exports_from_images_agree_with_predict(folder, released, pillar, tmp_path):

    classifier, _, weights = released
    pillar(
        "predict",
        classifier,
        "--source",
        "image-folder",
        "--path",
        folder,
        "--workers",
        "0",
        *(["--weights", weights] if weights else []),
        "-o",
        tmp_path / "raw.csv",
    )
    files, expected = _predictions(tmp_path / "raw.csv")
    images = np.stack([np.asarray(Image.open(file).convert("RGB")) for file in files])
    for fmt in ("onnx", "torchscript"):
        path = tmp_path / f"c.{fmt}"
        pillar(
            "export", classifier, "--format", fmt, *(["--weights", weights] if weights else []), "-o", path
        )
        assert np.abs(exported_probabilities(path, images) - expected).max() <= 1e-5, fmt


def test_refusals(folder, released, pillar, tmp_path):
    classifier, _, weights = released
    out = tmp_path / "p.csv"
    if weights is None:  # pixels: images of another size would be other features
        small = tmp_path / "small"
        small.mkdir()
        Image.fromarray(np.zeros((8, 8), np.uint8)).save(small / "a.png")
        assert_clean_failure(
            pillar(
                "predict", classifier, "--source", "image-folder", "--path", small, "-o", out, expect=None
            ),
            4,
            "the inputs have shape (8, 8, 3); the classifier's rows were embedded from (16, 16, 3)",
            out,
        )
        assert_clean_failure(
            pillar("embed", "--source", "image-folder", "--path", small, "-o", out, expect=None),
            4,
            "source 'image-folder' read 1 rows without labels: embed needs labelled rows for the "
            "private, val and test splits",
            out,
        )
        return
    import torch

    other = tmp_path / "other.pt"
    state = torch.load(weights)
    torch.save({name: tensor + 1 for name, tensor in state.items()}, other)
    raw = ["--source", "image-folder", "--path", folder, "-o", out]
    assert_clean_failure(
        pillar("predict", classifier, *raw, expect=None),
        2,
        f"the classifier's backbone weights came from a file (file:{_sha256(weights)}): pass "
        "--weights FILE, the same file",
        out,
    )
    assert_clean_failure(
        pillar("predict", classifier, *raw, "--weights", other, expect=None),
        4,
        f"{other} gives weights 'file:{_sha256(other)}'; the classifier's rows were embedded with "
        f"'file:{_sha256(weights)}'",
        out,
    )
    assert_clean_failure(
        pillar("export", classifier, "--format", "onnx", "--weights", other, "-o", out, expect=None),
        4,
        f"{other} gives weights 'file:{_sha256(other)}'; the classifier's rows were embedded with "
        f"'file:{_sha256(weights)}'",
        out,
    )


def _sha256(path) -> str:
    import hashlib

    return hashlib.sha256(path.read_bytes()).hexdigest()

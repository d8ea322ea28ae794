"""Hostile inputs that used to end in a traceback or a silent wrong result, each now a correct result or one
line: an empty dataset's hash, a pipeline whose steps are not a list, a grid value given twice, a learning
rate that diverges, a decompression bomb, a Parquet shard cut short; palette, alpha and CMYK images decoded to
their pixels."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.datasets import load_digits

from pillar_cli import sweep
from pillar_cli.artifacts.integrity import content_hash
from pillar_cli.cli.pipeline import load_pipeline
from pillar_cli.data.hf_datasets import read_hf
from pillar_cli.data.image_files import decode_image
from pillar_cli.errors import DataError, UsageError


def test_an_empty_dataset_hashes_and_hashes_differ_by_shape():
    empty = content_hash({"features": np.zeros((0, 784), np.float32)}, {})
    assert empty != content_hash({"features": np.zeros((0, 783), np.float32)}, {})
    assert len(empty) == 64


@pytest.mark.parametrize(
    "text, message",
    [
        (
            "pipelines:\n  demo:\n    steps:\n      embed: x\n",
            "pipeline 'demo' in {path}: steps must be a list of pillar command lines (got dict)",
        ),
        (
            "pipelines:\n  demo: [embed]\n",
            "pipeline 'demo' in {path} is not a mapping of description (text), vars and steps",
        ),
        ("- a list\n", "{path} holds no mapping 'pipelines' of names to pipelines"),
        # each once a traceback (IndexError, ValueError, MemoryError, AttributeError, RecursionError) or a
        # silent stop
        (
            "pipelines:\n  demo:\n    description: [a, b]\n    steps: [embed]\n",
            "pipeline 'demo' in {path} is not a mapping of description (text), vars and steps",
        ),
        ("pipelines:\n  demo:\n    steps: ['embed -o {0}']\n", None),
        ("pipelines:\n  demo:\n    steps: ['embed -o {w:>99999999999}']\n", None),
        ("pipelines:\n  demo:\n    steps: ['embed -o {']\n", None),
        (
            "pipelines:\n  demo:\n    steps: ['embed -o {out}']\n",
            "pipeline 'demo' uses undefined variable 'out' (step 1)",
        ),
        (
            "pipelines:\n  demo:\n    steps: ['embed -o \"open']\n",
            "pipeline 'demo', step 1: No closing quotation in 'embed -o \"open'",
        ),
        (
            "pipelines:\n  demo:\n    steps: ['run p.yaml demo']\n",
            "pipeline 'demo', step 1 runs a pipeline: a step is one stage",
        ),
        (
            "pipelines:\n  demo:\n    steps: ['fit-pca --help']\n",
            "pipeline 'demo', step 1 asks for --help: a step runs a stage",
        ),
    ],
)
def test_a_malformed_pipeline_is_one_line(tmp_path, text, message):
    path = tmp_path / "p.yaml"
    path.write_text(text)
    if message is None:  # braces that name no variable stay as written
        assert load_pipeline(path, "demo").steps[0][-1] == text.split("-o ")[1].split("'")[0]
        return
    with pytest.raises(UsageError) as raised:
        load_pipeline(path, "demo")
    assert str(raised.value) == message.format(path=path)


@pytest.fixture(scope="module")
def digits():
    x, y = load_digits(return_X_y=True)
    return x[:300], x[300:1000], y[300:1000]


def test_a_value_given_twice_and_an_absurd_learning_rate_are_refused(digits):
    public, x, y = digits
    with pytest.raises(UsageError, match=r"^k lists 5 twice: each value names one run of the grid$"):
        sweep(x, y, public=public, k=[5, 5], epsilon=[1.0], delta=1e-4, device="cpu")
    with pytest.raises(
        UsageError,
        match=r"^lr must be at most 10,000 \(got 1e\+30\): steps that large leave the "
        r"head's float32 logits no precision$",
    ):
        sweep(x, y, public=public, k=[5], epsilon=[1.0], lr=[1e30], steps=[20], delta=1e-4, device="cpu")
    with pytest.raises(
        UsageError,
        match=r"^epsilon 1e\+06 is above 700, where e\^ε overflows the accountants' floating point: no "
        r"guarantee can be computed for it; use 'inf' for non-private training$",
    ):
        sweep(x, y, public=public, k=[5], epsilon=[1e6], delta=1e-4, device="cpu", n_public=True)
    rng = np.random.default_rng(0)  # the rule's lr n·ε/(32·100) passes 10,000 at 50,000 rows in full batches
    many = rng.standard_normal((50_000, 8)).astype(np.float32)
    with pytest.raises(
        UsageError,
        match=r"^the default rule sets lr 10937.5 for these rows and ε, above 10,000: steps "
        r"that large leave the head's float32 logits no precision$",
    ):
        sweep(
            many,
            (many[:, 0] > 0).astype(int),
            public=rng.standard_normal((500, 8)),
            k=[5],
            epsilon=[700.0],
            batch_size=[None],
            delta=1e-6,
            device="cpu",
            n_public=True,
        )


def test_a_decompression_bomb_is_one_line(tmp_path, monkeypatch):
    from PIL import Image

    Image.new("L", (100, 100)).save(tmp_path / "big.png")
    monkeypatch.setattr(Image, "MAX_IMAGE_PIXELS", 100)  # a 100 × 100 image is a bomb at this limit
    with pytest.raises(
        DataError,
        match=rf"^cannot decode image {tmp_path / 'big.png'}: Image size \(10000 pixels\) "
        r"exceeds limit of 200 pixels",
    ):
        decode_image(str(tmp_path / "big.png"), None)


def test_a_parquet_shard_cut_short_is_one_line(tmp_path):
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    table = pa.table({"image": [{"bytes": b"\x89PNG", "path": None}] * 10, "label": list(range(10))})
    shard = tmp_path / "train-00000-of-00001.parquet"
    pq.write_table(table, shard)
    shard.write_bytes(shard.read_bytes()[: shard.stat().st_size // 2])
    with pytest.raises(DataError, match=rf"^cannot read the dataset in {tmp_path}: "):
        read_hf(tmp_path, None)


@pytest.mark.parametrize("mode", ["P", "RGBA", "CMYK", "LA"])
def test_palette_alpha_and_cmyk_images_decode_to_the_pixels_of_their_rgb_or_grey_original(tmp_path, mode):
    from PIL import Image

    rgb = np.zeros((6, 8, 3), np.uint8)
    rgb[:3, :4] = (200, 30, 90)
    rgb[3:, 4:] = (10, 250, 120)
    original = Image.fromarray(rgb, "RGB")
    grey = mode == "LA"
    converted = (
        original.convert("L").convert(mode)
        if grey
        else original.quantize(colors=4)
        if mode == "P"
        else original.convert(mode)
    )
    path = tmp_path / f"image.{'tiff' if mode == 'CMYK' else 'png'}"
    converted.save(path)
    expected = np.asarray(original.convert("L"))[..., None] if grey else rgb
    np.testing.assert_array_equal(decode_image(str(path), None, channels=1 if grey else 3), expected)

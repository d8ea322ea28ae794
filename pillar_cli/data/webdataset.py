"""WebDataset tar shards on disk: `<split>-*.tar` (or `<split>/*.tar`) under a directory, or one `.tar` file.
A sample is the tar members that share a key (`000017.jpg`, `000017.cls`); its image stays encoded until its
row is read. Opening a split reads the tar headers only (one seek per member) and keeps each image's offset
and size, so `TarImages` behaves like a uint8 (N, H, W, 3) array whose rows are read by seeking into their
shard: memory holds the offsets, not the images, the DataLoader workers of `embed --workers N` decode them,
and each rank of a `torchrun` embedding reads the bytes of its own rows only. Labels come from a member of one
extension per sample (`.cls` by default: an integer, or a class name as text); a member of the extension param
group= names (text) names each sample's person (groups.py).
"""

from __future__ import annotations

import hashlib
import io
import itertools
import os
import tarfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from pillar_cli.data.dataset import Dataset, no_labels
from pillar_cli.data.groups import Groups
from pillar_cli.data.image_files import EncodedRows, decode_image, require_shape
from pillar_cli.data.labels import encode_labels
from pillar_cli.errors import DataError, param

IMAGE_EXTENSIONS = ("jpg", "jpeg", "png", "webp", "ppm", "bmp", "tif", "tiff")
COMPRESSED = (".tar.gz", ".tgz", ".tar.bz2", ".tar.xz")


def tar_splits(root: Path) -> dict[str, list[Path]]:
    """Split name → its shards in order: a single .tar is the train split; in a directory, `<split>-*.tar` or
    the .tar files of a `<split>/` folder."""
    if root.is_file():
        if root.name.endswith(COMPRESSED):
            raise DataError(
                f"{root} is compressed; its members cannot be read by seeking",
                hint="store WebDataset shards as plain .tar (as webdataset writes them)",
            )
        return {"train": [root]}
    compressed = [p for suffix in COMPRESSED for p in root.rglob(f"*{suffix}")]
    if compressed:
        raise DataError(
            f"{compressed[0]} is compressed; its members cannot be read by seeking",
            hint="store WebDataset shards as plain .tar (as webdataset writes them)",
        )
    splits: dict[str, list[Path]] = {}
    for shard in sorted(root.rglob("*.tar")):
        name = shard.parent.name if shard.parent != root else shard.name.split("-")[0].split(".")[0]
        splits.setdefault(name, []).append(shard)
    if not splits:
        raise DataError(f"{root} holds no .tar shards")
    return splits


@dataclass(frozen=True)
class Samples:
    """A split's index: per sample its shard, the image member's offset and size, its label text (None without
    label members) and its group id (None without a group extension)."""

    shards: list[str]
    shard_of: np.ndarray
    offsets: np.ndarray
    sizes: np.ndarray
    labels: list[str] | None
    keys: list[str]
    groups: list[str] | None = None


def index_samples(shards: list[Path], image: str | None, label: str, group: str | None = None) -> Samples:
    """Scan the tar headers of a split's shards, in order; members of other extensions are ignored."""
    shard_of, offsets, sizes, label_members, group_members, keys = [], [], [], [], [], []
    for number, shard in enumerate(shards):
        try:
            members = _members(shard)
        except (tarfile.TarError, OSError) as err:
            raise DataError(f"cannot read the tar shard {shard}: {err}") from err
        for key, by_extension in members.items():
            found = [e for e in ((image,) if image else IMAGE_EXTENSIONS) if e in by_extension]
            if not found:
                raise DataError(
                    f"sample '{key}' of {shard} has no image member "
                    f"({'.' + image if image else ', '.join('.' + e for e in IMAGE_EXTENSIONS)})",
                    hint=f"name the image extension with {param('params')} image=EXT",
                )
            member = by_extension[found[0]]
            (
                shard_of.append(number),
                offsets.append(member.offset_data),
                sizes.append(member.size),
                keys.append(key),
            )
            label_members.append(by_extension.get(label))
            group_members.append(group and by_extension.get(group))
    if not keys:
        raise DataError(f"{shards[0]} holds no samples")
    texts = _member_texts(shards, shard_of, label_members, label, "a label, or none (to classify)")
    groups = None if group is None else _member_texts(shards, shard_of, group_members, group, "its person")
    if group is not None and groups is None:
        raise DataError(
            f"no sample of {shards[0].parent} has a .{group} member to name its person",
            hint=f"name the extension of the members holding group ids with {param('params')} group=EXT",
        )
    return Samples(
        [str(s) for s in shards],
        np.asarray(shard_of),
        np.asarray(offsets, np.int64),
        np.asarray(sizes, np.int64),
        texts,
        keys,
        groups,
    )


def _members(shard: Path) -> dict[str, dict[str, tarfile.TarInfo]]:
    """Sample key → extension → member, in the order of the shard (WebDataset's key: the name before its first
    dot in the last path component, with the directory). A key with two members of one extension, a member
    that runs past the end of the file, or a shard without tar's end-of-archive blocks (cut at a member's end)
    is refused."""
    samples: dict[str, dict[str, tarfile.TarInfo]] = {}
    size, end = shard.stat().st_size, 0
    with tarfile.open(shard, mode="r:") as tar:
        for member in tar:
            end = max(end, member.offset_data + -(-member.size // 512) * 512)
            if not member.isfile():
                continue
            if member.offset_data + member.size > size:
                raise DataError(
                    f"{shard} is cut short: member {member.name} needs {member.size} bytes at offset "
                    f"{member.offset_data}, the file ends at {size}"
                )
            folder, _, name = member.name.rpartition("/")
            stem, dot, extension = name.partition(".")
            if dot:
                key, extension = (f"{folder}/{stem}" if folder else stem), extension.lower()
                if extension in samples.setdefault(key, {}):
                    raise DataError(
                        f"sample '{key}' of {shard} has two .{extension} members: a WebDataset key "
                        "names one sample",
                        hint="give every sample a key of its own",
                    )
                samples[key][extension] = member
    with open(shard, "rb") as file:
        file.seek(end)
        if file.read(1024) != bytes(1024):
            raise DataError(
                f"{shard} ends without tar's end-of-archive blocks after its last member: it was cut short"
            )
    return samples


def _member_texts(
    shards: list[Path], shard_of: list[int], members: list, extension: str, needed: str
) -> list[str] | None:
    """The members' contents as text; None when no sample has one, an error when only some do (every sample
    needs `needed`)."""
    present = [m is not None for m in members]
    if not any(present):
        return None
    if not all(present):
        raise DataError(
            f"{present.count(False)} samples of {shards[0].parent} have no .{extension} member and "
            f"{present.count(True)} have one",
            hint=f"every sample needs {needed}",
        )
    texts = []
    for number, samples in itertools.groupby(
        zip(shard_of, members), key=lambda pair: pair[0]
    ):  # in shard order
        with open(shards[number], "rb") as file:
            for _, member in samples:
                file.seek(member.offset_data)
                texts.append(file.read(member.size).decode("utf-8", "replace").strip())
    return texts


class TarImages(EncodedRows):
    """An (N, H, W, 3) uint8 array-like over the encoded images of tar shards, decoded when rows are read."""

    def __init__(
        self,
        samples: Samples,
        size: int | None,
        rows: np.ndarray | None = None,
        image_shape: tuple[int, ...] | None = None,
    ):
        self.samples, self.size = samples, size
        self.rows = np.arange(len(samples.keys)) if rows is None else rows
        if image_shape is None:
            image_shape = (size, size, 3) if size else self._decode(int(self.rows[0])).shape
        self.shape = (len(self.rows), *image_shape)

    def subset(self, ids: np.ndarray) -> TarImages:
        return TarImages(self.samples, self.size, self.rows[ids], self.shape[1:])

    def _raw(self, row: int) -> bytes:
        with open(self.samples.shards[int(self.samples.shard_of[row])], "rb") as file:
            file.seek(int(self.samples.offsets[row]))
            return file.read(int(self.samples.sizes[row]))

    def _decode(self, row: int) -> np.ndarray:
        where = f"sample '{self.samples.keys[row]}' of {self.samples.shards[int(self.samples.shard_of[row])]}"
        image = decode_image(io.BytesIO(self._raw(row)), self.size, where)
        return require_shape(image, self.shape[1:], where) if hasattr(self, "shape") else image

    def fingerprint(self, labels: np.ndarray) -> str:
        """A content id from the shards' names and sizes, the rows and the labels (no image is decoded)."""
        digest = hashlib.sha256()
        for shard in self.samples.shards:
            digest.update(f"{os.path.basename(shard)}|{os.path.getsize(shard)}\n".encode())
        digest.update(np.ascontiguousarray(self.rows, dtype=np.int64).tobytes())
        digest.update(np.ascontiguousarray(labels, dtype=np.int64).tobytes())
        return digest.hexdigest()


def read_webdataset(
    root: Path,
    size: int | None,
    image: str | None = None,
    label: str = "cls",
    train: str = "train",
    test: str = "test",
    group: str | None = None,
) -> Dataset:
    """The `train` split (and `test`, when there is one) of WebDataset shards; samples without label members
    are unlabelled rows, to classify. `group`: the extension of the members naming each sample's person."""
    splits = tar_splits(root)
    if train not in splits:
        raise DataError(
            f"{root} has no split '{train}' (its splits: {', '.join(splits)})",
            hint=f"name the training split with {param('params')} train=SPLIT",
        )
    group = None if group is None else group.lstrip(".").lower()
    parts = [
        index_samples(splits[name], image, label.lstrip(".").lower(), group)
        for name in (train, test)
        if name in splits
    ]
    inputs = [TarImages(samples, size) for samples in parts]
    if all(samples.labels is None for samples in parts):
        labels, names = [no_labels(len(part)) for part in inputs], []
    elif any(samples.labels is None for samples in parts):
        raise DataError(
            f"the {train} split of {root} has .{label} members and the {test} split none, or the other "
            "way round",
            hint="every sample needs a label, or none (to classify)",
        )
    else:
        labels, names = encode_labels(f"{root}:.{label}", *(np.asarray(samples.labels) for samples in parts))
    groups = (
        None
        if group is None
        else Groups.of([g for samples in parts for g in samples.groups], f"member .{group}", str(root))
    )
    fingerprint = "|".join(part.fingerprint(part_labels) for part, part_labels in zip(inputs, labels))
    test_inputs, test_labels = (inputs[1], labels[1]) if len(inputs) > 1 else (None, None)
    return Dataset(
        "webdataset",
        inputs[0],
        labels[0],
        names,
        test_inputs,
        test_labels,
        fingerprint_hint=fingerprint,
        groups=groups,
        keys=np.asarray([key for samples in parts for key in samples.keys], dtype=object),
    )

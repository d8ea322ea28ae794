"""Images on disk as a lazily decoded array: an index of files built without decoding any of them.

`ImageFiles` behaves like a uint8 (or, for 16-bit files, uint16) array of shape (N, H, W, C) for what the
embedding stage does with a source (C = 3, or 1 for greyscale files read as the greyscale rows a classifier
was trained on): its length and shape, and reading rows (a slice or sorted ids), which decodes just those
files. So memory holds the file names, not the images, and decoding happens where the rows are read — in the
DataLoader workers of `embed --workers N`, several files at a time.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import numpy as np

from pillar_cli.data.dicom import SUFFIX as DICOM_SUFFIX
from pillar_cli.data.dicom import is_dicom
from pillar_cli.data.dicom_window import Window
from pillar_cli.data.pixels import PIXEL_TYPES, decode_image, image_depth
from pillar_cli.errors import DataError, param

IMAGE_SUFFIXES = {".png", ".jpg", ".jpeg", ".bmp", ".gif", ".ppm", ".tif", ".tiff", ".webp", DICOM_SUFFIX}


def require_shape(image: np.ndarray, shape: tuple[int, ...], name: str) -> np.ndarray:
    """The image, if it has the shape of the others; a resize is the fix otherwise."""
    if image.shape != tuple(shape):
        raise DataError(
            f"{name} is {image.shape[1]} × {image.shape[0]}, the other images {shape[1]} × {shape[0]}",
            hint=f"pass {param('param')} size=N to resize all of them to N × N",
        )
    return image


class ImageFiles:
    """An (N, H, W, channels) array-like over image files, decoded row by row when read, at `depth` bits a
    channel (uint8 or uint16; None: the first file's depth, until `read_as` names the file to read it off).
    Without `size` every image must have the first one's size; a file of another size is an error naming it.
    With `skip_bad`, a file that cannot be decoded reads as zeros and is listed in `skipped` (the embedding
    stage drops its row). DICOM files are read through `window`."""

    def __init__(
        self,
        files: list[str],
        size: int | None = None,
        image_shape: tuple[int, ...] | None = None,
        skip_bad: bool = False,
        channels: int = 3,
        depth: int | None = None,
        *,
        read_depth: int | None = None,
        window: Window = Window(),
    ):
        if not files:
            raise DataError("no image files to read")
        self.files, self.size, self.skip_bad, self.skipped, self.channels = (
            files,
            size,
            skip_bad,
            [],
            channels,
        )
        self.declared_depth, self.window = depth, window
        depth = read_depth or depth or image_depth(files[0])
        if image_shape is None:
            image_shape = (
                (size, size, channels)
                if size
                else decode_image(files[0], None, channels=channels, window=window).shape
            )
        self.depth, self.dtype = depth, PIXEL_TYPES[depth]
        self.shape = (len(files), *image_shape)

    def __len__(self) -> int:
        return len(self.files)

    def __getitem__(self, index: slice | int | np.ndarray) -> np.ndarray:
        if isinstance(index, (int, np.integer)):
            return self._decode(self.files[int(index)])
        positions = range(len(self.files))[index] if isinstance(index, slice) else np.asarray(index).tolist()
        return (
            np.stack([self._decode(self.files[i]) for i in positions])
            if len(positions)
            else np.empty((0, *self.shape[1:]), self.dtype)
        )

    def _decode(self, file: str) -> np.ndarray:
        try:
            image = decode_image(
                file, self.size, channels=self.channels, depth=self.depth, window=self.window
            )
        except DataError:
            if not self.skip_bad:
                raise
            self.skipped.append(file)
            return np.zeros(self.shape[1:], self.dtype)
        return require_shape(image, self.shape[1:], file)

    def subset(self, ids: np.ndarray) -> ImageFiles:
        """The files at sorted row ids, still undecoded."""
        return ImageFiles(
            [self.files[i] for i in ids.tolist()],
            self.size,
            self.shape[1:],
            self.skip_bad,
            self.channels,
            self.declared_depth,
            read_depth=self.depth,
            window=self.window,
        )

    def skipping_bad(self) -> ImageFiles:
        return ImageFiles(
            self.files,
            self.size,
            self.shape[1:],
            True,
            self.channels,
            self.declared_depth,
            read_depth=self.depth,
            window=self.window,
        )

    def read_as(self, position: int) -> ImageFiles:
        """These files read at the size (where no size is given) and the bit depth (where none is declared) of
        the file at `position`."""
        file = self.files[position]
        shape = (
            self.shape[1:]
            if self.size
            else decode_image(file, None, channels=self.channels, window=self.window).shape
        )
        return self.read_like(shape, self.declared_depth or image_depth(file))

    def read_like(self, shape: tuple[int, ...], depth: int) -> ImageFiles:
        """These files read at the given image shape and bit depth (a test part read as its train part is)."""
        return ImageFiles(
            self.files,
            self.size,
            tuple(shape),
            self.skip_bad,
            self.channels,
            self.declared_depth,
            read_depth=depth,
            window=self.window,
        )

    def positions_of(self, files: set[str]) -> list[int]:
        return [i for i, file in enumerate(self.files) if file in files]

    @property
    def dicom_window(self) -> Window | None:
        """The window DICOM files among these are read through; None where there are none."""
        return self.window if any(is_dicom(file) for file in self.files) else None

    def fingerprint(self, root: Path, labels: np.ndarray) -> str:
        """A content id from the index alone: relative paths, byte sizes and labels (no image is read)."""
        digest = hashlib.sha256()
        for file in self.files:
            digest.update(f"{os.path.relpath(file, root)}|{os.path.getsize(file)}\n".encode())
        digest.update(np.ascontiguousarray(labels, dtype=np.int64).tobytes())
        return digest.hexdigest()


class EncodedRows:
    """An (N, H, W, 3) uint8 array-like over rows kept encoded until read: `rows` (the reader's own row
    numbers of the rows in view), `shape`, `size`, `subset(ids)`, `_decode(row)` and `_raw(row)` come from the
    reader (a Parquet column, tar shards)."""

    dtype = np.dtype(np.uint8)
    depth = 8
    rows: np.ndarray
    shape: tuple[int, ...]
    size: int | None

    def _decode(self, row: int) -> np.ndarray:
        raise NotImplementedError

    def _raw(self, row: int) -> bytes:
        raise NotImplementedError

    def subset(self, ids: np.ndarray) -> EncodedRows:
        raise NotImplementedError

    def encoded(self, index: int) -> bytes:
        """The stored bytes of the row at `index` (what names it where the source does not)."""
        return self._raw(int(self.rows[index]))

    def read_as(self, position: int) -> EncodedRows:
        """These rows read at the size of the row at `position` (where no size is given)."""
        return self.read_like(self.shape[1:] if self.size else self._decode(int(self.rows[position])).shape)

    def read_like(self, shape: tuple[int, ...], depth: int = 8) -> EncodedRows:
        """These rows read at the given image shape."""
        like = self.subset(np.arange(len(self.rows)))
        like.shape = (len(self.rows), *shape)
        return like

    def __len__(self) -> int:
        return len(self.rows)

    def __getitem__(self, index: slice | int | np.ndarray) -> np.ndarray:
        if isinstance(index, (int, np.integer)):
            return self._decode(int(self.rows[int(index)]))
        picked = self.rows[index]
        return (
            np.stack([self._decode(int(row)) for row in picked])
            if len(picked)
            else np.empty((0, *self.shape[1:]), np.uint8)
        )


def default_channels(files: list[str]) -> int:
    """Greyscale for DICOM scans, colour for other images: what a source reads files as by default."""
    return 1 if all(is_dicom(file) for file in files) else 3


def file_keys(files: list[str], root: Path) -> np.ndarray:
    """Image files' keys: their paths under the source's root (what names a file whatever else is deleted)."""
    return np.asarray([os.path.relpath(file, root).replace(os.sep, "/") for file in files], dtype=object)


def image_files_in(folder: Path) -> list[str]:
    """The image files directly in `folder`, sorted by name."""
    return (
        sorted(str(p) for p in folder.iterdir() if p.suffix.lower() in IMAGE_SUFFIXES)
        if folder.is_dir()
        else []
    )

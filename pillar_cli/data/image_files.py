"""Images on disk as a lazily decoded array: an index of files built without decoding any of them.

`ImageFiles` behaves like a uint8 (or, for 16-bit files, uint16) array of shape (N, H, W, C) for what the embedding
stage does with a source (C = 3, or 1 for greyscale files read as the greyscale rows a classifier was trained on):
its length and shape, and reading rows (a slice or sorted ids), which decodes just those files. So memory holds
the file names, not the images, and decoding happens where the rows are read — in the DataLoader workers of
`embed --workers N`, several files at a time.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import numpy as np

from pillar_cli.data.dicom import SUFFIX as DICOM_SUFFIX
from pillar_cli.data.pixels import PIXEL_TYPES, decode_image, image_depth
from pillar_cli.errors import DataError, param

IMAGE_SUFFIXES = {".png", ".jpg", ".jpeg", ".bmp", ".gif", ".ppm", ".tif", ".tiff", ".webp", DICOM_SUFFIX}


def require_shape(image: np.ndarray, shape: tuple[int, ...], name: str) -> np.ndarray:
    """The image, if it has the shape of the others; a resize is the fix otherwise."""
    if image.shape != tuple(shape):
        raise DataError(f"{name} is {image.shape[1]} × {image.shape[0]}, the other images {shape[1]} × {shape[0]}",
                        hint=f"pass {param('param')} size=N to resize all of them to N × N")
    return image


class ImageFiles:
    """An (N, H, W, channels) array-like over image files, decoded row by row when read, at `depth` bits a channel
    (uint8 or uint16; None: the first file's depth). Without `size` every image must have the first one's size; a
    file of another size is an error naming it. With `skip_bad`, a file that cannot be decoded reads as zeros and
    is listed in `skipped` (the embedding stage drops its row)."""

    def __init__(self, files: list[str], size: int | None = None, image_shape: tuple[int, ...] | None = None,
                 skip_bad: bool = False, channels: int = 3, depth: int | None = None):
        if not files:
            raise DataError("no image files to read")
        self.files, self.size, self.skip_bad, self.skipped, self.channels = files, size, skip_bad, [], channels
        depth = depth or image_depth(files[0])
        if image_shape is None:
            image_shape = (size, size, channels) if size else decode_image(files[0], None, channels=channels).shape
        self.depth, self.dtype = depth, PIXEL_TYPES[depth]
        self.shape = (len(files), *image_shape)

    def __len__(self) -> int:
        return len(self.files)

    def __getitem__(self, index: slice | int | np.ndarray) -> np.ndarray:
        if isinstance(index, (int, np.integer)):
            return self._decode(self.files[int(index)])
        positions = range(len(self.files))[index] if isinstance(index, slice) else np.asarray(index).tolist()
        return np.stack([self._decode(self.files[i]) for i in positions]) if len(positions) else \
            np.empty((0, *self.shape[1:]), self.dtype)

    def _decode(self, file: str) -> np.ndarray:
        try:
            image = decode_image(file, self.size, channels=self.channels, depth=self.depth)
        except DataError:
            if not self.skip_bad:
                raise
            self.skipped.append(file)
            return np.zeros(self.shape[1:], self.dtype)
        return require_shape(image, self.shape[1:], file)

    def subset(self, ids: np.ndarray) -> ImageFiles:
        """The files at sorted row ids, still undecoded."""
        return ImageFiles([self.files[i] for i in ids.tolist()], self.size, self.shape[1:], self.skip_bad,
                          self.channels, self.depth)

    def skipping_bad(self) -> ImageFiles:
        return ImageFiles(self.files, self.size, self.shape[1:], True, self.channels, self.depth)

    def positions_of(self, files: set[str]) -> list[int]:
        return [i for i, file in enumerate(self.files) if file in files]

    def fingerprint(self, root: Path, labels: np.ndarray) -> str:
        """A content id from the index alone: relative paths, byte sizes and labels (no image is read)."""
        digest = hashlib.sha256()
        for file in self.files:
            digest.update(f"{os.path.relpath(file, root)}|{os.path.getsize(file)}\n".encode())
        digest.update(np.ascontiguousarray(labels, dtype=np.int64).tobytes())
        return digest.hexdigest()


class EncodedRows:
    """An (N, H, W, 3) uint8 array-like over rows kept encoded until read: `rows` (the reader's own row numbers of
    the rows in view), `shape`, and `_decode(row)` come from the reader (a Parquet column, tar shards)."""

    dtype = np.dtype(np.uint8)
    rows: np.ndarray
    shape: tuple[int, ...]

    def _decode(self, row: int) -> np.ndarray:
        raise NotImplementedError

    def __len__(self) -> int:
        return len(self.rows)

    def __getitem__(self, index: slice | int | np.ndarray) -> np.ndarray:
        if isinstance(index, (int, np.integer)):
            return self._decode(int(self.rows[int(index)]))
        picked = self.rows[index]
        return np.stack([self._decode(int(row)) for row in picked]) if len(picked) else \
            np.empty((0, *self.shape[1:]), np.uint8)


def image_files_in(folder: Path) -> list[str]:
    """The image files directly in `folder`, sorted by name."""
    return sorted(str(p) for p in folder.iterdir() if p.suffix.lower() in IMAGE_SUFFIXES) if folder.is_dir() else []

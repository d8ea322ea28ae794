"""One image file decoded to the rows the embedding stage reads: (H, W, channels) at a bit depth of 8 (uint8)
or 16 (uint16) a channel, upright (its EXIF orientation applied), resized to size × size when asked.

A file is read at its own depth: 16-bit PNG and TIFF greyscale (Pillow modes I;16*), 16-bit TIFF in any layout
(tifffile, when installed), DICOM with more than 8 bits stored (data/dicom.py); everything else is 8 bits. It
is then written at the depth asked for, so one folder holds one scale: a 16-bit image read at 8 bits is value
/ 257 (65,535 → 255) rounded, an 8-bit image read at 16 bits is value × 257. 32-bit integer images are taken
as holding 16-bit values (0..65,535), float images as holding 8-bit ones (0..255); values beyond those ranges,
negative samples, float samples all within [0, 1] and animated or multi-page images are refused in one line.
Pillow reads 16-bit colour and grey+alpha PNGs at 8 bits by their high byte (value // 256, not rounded): such
files are 8-bit here.
"""

from __future__ import annotations

from typing import BinaryIO

import numpy as np

from pillar_cli.data.dicom import dicom_depth, dicom_image, is_dicom
from pillar_cli.data.dicom_window import Window
from pillar_cli.errors import DataError

PIXEL_TYPES = {8: np.dtype(np.uint8), 16: np.dtype(np.uint16)}  # bit depth → the rows' dtype
CHANNELS = {1: "L", 3: "RGB"}  # what an image becomes at 8 bits: Pillow's greyscale or colour
LUMA = np.array([0.299, 0.587, 0.114])  # ITU-R 601-2, the weights of Pillow's RGB → L
TIFF_SUFFIXES = (".tif", ".tiff")


def pixel_depth(rows: object) -> int:
    """The bit depth of an array (or array-like) of image rows: 8 or 16."""
    dtype = np.dtype(getattr(rows, "dtype", np.uint8))
    for depth, pixel_type in PIXEL_TYPES.items():
        if dtype == pixel_type:
            return depth
    raise DataError(f"images are uint8 or uint16 rows; these are {dtype}")


def decode_image(
    file: str | BinaryIO,
    size: int | None,
    name: str | None = None,
    channels: int = 3,
    depth: int | None = 8,
    window: Window = Window(),
) -> np.ndarray:
    """One image (a file, or its bytes in a file object called `name`) as (H, W, channels) rows at `depth`
    bits (None: the file's own depth); a DICOM file through `window`."""
    from PIL import Image, UnidentifiedImageError

    where = name or str(file)
    try:
        pixels, own_depth = _read(file, where, window)
        return _rows(pixels, size, channels, depth or own_depth)
    except DataError:
        raise
    except (OSError, UnidentifiedImageError, ValueError, Image.DecompressionBombError) as err:
        raise DataError(f"cannot decode image {where}: {str(err).splitlines()[0]}") from err


def image_depth(file: str) -> int:
    """A file's own bit depth, read from its header (no pixels decoded)."""
    from PIL import Image, UnidentifiedImageError

    try:
        if is_dicom(file):
            return dicom_depth(file)
        if file.lower().endswith(TIFF_SUFFIXES) and _tifffile() is not None:
            with _tifffile().TiffFile(file) as tiff:
                page = tiff.pages[0]
            return 16 if page.bitspersample > 8 and page.dtype is not None and page.dtype.kind in "iu" else 8
        with Image.open(file) as opened:
            return 16 if opened.mode.startswith("I") else 8
    except DataError:
        raise
    except (OSError, UnidentifiedImageError, ValueError, Image.DecompressionBombError) as err:
        raise DataError(f"cannot decode image {file}: {str(err).splitlines()[0]}") from err


def _read(file: str | BinaryIO, where: str, window: Window):
    """The file's pixels and its bit depth: an 8-bit Pillow image, or levels in [0, 1] as (H, W[, 3])
    floats."""
    from PIL import Image, ImageOps

    if is_dicom(where):
        return dicom_image(file, where, window)
    if where.lower().endswith(TIFF_SUFFIXES) and _tifffile() is not None:
        read = _tiff(file, where)
        if read is not None:
            return read
    with Image.open(file) as opened:
        if (frames := getattr(opened, "n_frames", 1)) > 1:  # GIF, APNG, WebP, multi-page TIFF read by Pillow
            raise DataError(
                f"{where} is an animated or multi-page image ({frames} frames); embed one frame per file"
            )
        image = ImageOps.exif_transpose(opened)
        image.load()
    if image.mode.startswith("I"):
        return _unit_levels(np.asarray(image), where), 16
    if image.mode == "F":
        return _unit_levels(np.asarray(image), where), 8
    return image, 8


def _tifffile():
    try:
        import tifffile
    except ImportError:
        return None
    return tifffile


def _tiff(file: str | BinaryIO, where: str):
    """A TIFF of more than 8 bits a sample as its levels and depth, read by tifffile (Pillow cannot read
    16-bit colour); None for an 8-bit one, which Pillow reads (palette, CMYK and the rest)."""
    tifffile = _tifffile()
    with tifffile.TiffFile(file) as tiff:
        if len(tiff.pages) > 1:
            raise DataError(
                f"{where} is a multi-page TIFF ({len(tiff.pages)} pages); embed one page per file"
            )
        page = tiff.pages[0]
        if page.bitspersample <= 8:
            pixels = None
        elif page.photometric not in (tifffile.PHOTOMETRIC.MINISBLACK, tifffile.PHOTOMETRIC.RGB):
            raise DataError(
                f"{where} holds {page.bitspersample}-bit {page.photometric.name} pixels; greyscale and RGB "
                "images are read"
            )
        else:
            orientation = page.tags.get(274)  # TIFF Orientation
            pixels = _upright(
                _interleaved(page.asarray(), page.axes), 1 if orientation is None else orientation.value
            )
    if pixels is None:
        if hasattr(file, "seek"):
            file.seek(0)  # Pillow reads it from the start
        return None
    if pixels.ndim == 3 and pixels.shape[2] == 4:
        pixels = pixels[..., :3]  # alpha dropped, as Pillow's RGBA → RGB
    if pixels.ndim not in (2, 3) or (pixels.ndim == 3 and pixels.shape[2] != 3):
        raise DataError(f"{where} holds pixels of shape {pixels.shape}; greyscale and RGB images are read")
    return _unit_levels(pixels, where), 8 if pixels.dtype.kind == "f" else 16


def _interleaved(pixels: np.ndarray, axes: str) -> np.ndarray:
    """(H, W[, samples]) from tifffile's array, whose samples come first where the planes are stored apart
    ('SYX')."""
    return np.moveaxis(pixels, 0, -1) if axes.startswith("S") and pixels.ndim == 3 else pixels


def _upright(pixels: np.ndarray, orientation: int) -> np.ndarray:
    """The TIFF orientation tag applied (as Pillow's exif_transpose does for 8-bit files): rows and columns as
    a viewer shows them."""
    turned = {
        1: pixels,
        2: pixels[:, ::-1],
        3: pixels[::-1, ::-1],
        4: pixels[::-1],
        5: np.swapaxes(pixels, 0, 1),
        6: np.swapaxes(pixels, 0, 1)[:, ::-1],
        7: np.swapaxes(pixels, 0, 1)[::-1, ::-1],
        8: np.swapaxes(pixels, 0, 1)[::-1],
    }
    return np.ascontiguousarray(turned.get(int(orientation), pixels))


def _unit_levels(values: np.ndarray, where: str) -> np.ndarray:
    """Integer values as 16-bit levels (0..65,535), float values as 8-bit ones (0..255), scaled to [0, 1].
    What they would misread is refused: negative values (signed samples), values above the top (they would be
    clipped: a 32-bit image holding more than 16-bit values), and float samples all within [0, 1] (read as
    0..255 levels, they would be black)."""
    top = 255.0 if values.dtype.kind == "f" else 65535.0
    if values.dtype.kind == "f" and not np.isfinite(values).all():
        raise DataError(f"{where} holds {int((~np.isfinite(values)).sum())} NaN or infinite pixel values")
    if values.size and float(values.min()) < 0:
        raise DataError(
            f"{where} holds negative pixel values ({values.dtype}, down to {values.min():g}); pillar "
            "reads unsigned levels: shift or window them to 0..65,535 (or 0..255) first"
        )
    if values.size and float(values.max()) > top:
        raise DataError(
            f"{where} holds pixel values up to {values.max():g} ({values.dtype}); pillar reads "
            f"{'float images as 0..255' if top == 255 else 'integer images as 16-bit, 0..65,535'} levels: "
            "window or rescale them to that range first"
        )
    if values.dtype.kind == "f" and values.size and float(values.max()) <= 1:
        raise DataError(
            f"{where} holds float pixels within [0, 1]; pillar reads float images as 0..255 levels: "
            "scale them to 0..255, or save integers"
        )
    return values.astype(np.float64) / top


def _rows(pixels, size: int | None, channels: int, depth: int) -> np.ndarray:
    """`pixels` as (H, W, channels) rows at `depth` bits. At 8 bits, Pillow converts and resizes."""
    from PIL import Image

    if isinstance(pixels, np.ndarray) and depth == 8:
        pixels = Image.fromarray(np.rint(pixels * 255).astype(np.uint8))
    if isinstance(pixels, Image.Image):
        image = pixels.convert(CHANNELS[channels])
        if size:
            image = image.resize((size, size), Image.BILINEAR)
        rows = np.asarray(image, dtype=np.uint8).reshape(image.height, image.width, channels)
        return rows if depth == 8 else rows.astype(np.uint16) * 257
    return np.rint(_sized(_in_channels(pixels, channels), size) * 65535).clip(0, 65535).astype(np.uint16)


def _in_channels(levels: np.ndarray, channels: int) -> np.ndarray:
    levels = levels if levels.ndim == 3 else levels[..., None]
    if levels.shape[2] == channels:
        return levels
    return levels @ LUMA[:, None] if channels == 1 else np.repeat(levels, channels, axis=2)


def _sized(levels: np.ndarray, size: int | None) -> np.ndarray:
    """Each channel resized bilinearly in floats (Pillow's mode F), as 8-bit images are resized."""
    from PIL import Image

    if not size:
        return levels
    resized = [
        np.asarray(
            Image.fromarray(levels[..., c].astype(np.float32), mode="F").resize((size, size), Image.BILINEAR)
        )
        for c in range(levels.shape[2])
    ]
    return np.stack(resized, axis=2).astype(np.float64)

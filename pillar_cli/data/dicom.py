"""DICOM files as the grey levels the embedding stage reads (pydicom, imported only for them).

The pixel data are mapped as a viewer maps them: the modality LUT (rescale slope and intercept, or a Modality
LUT Sequence) to the stored unit (HU for CT), then an intensity window onto [0, 1] (data/dicom_window.py: each
file's own VOI window by default, one given for all, or the stored bit depth's range) — so a value means the
same grey level whatever depth, sign or rescale a scanner stored it with — and MONOCHROME1 (white = low)
inverted; a file with more than 8 bits stored is a 16-bit image (data/pixels.py writes the
levels at the depth asked for); one of more than 16 bits stored, or whose rescale is not a finite non-zero
slope and a finite intercept, is refused in one line. RGB files keep their three 8-bit channels. A multi-frame
file is refused (embed one frame per file); a compressed transfer syntax is decoded when an installed handler
can (pylibjpeg, gdcm), refused in one line otherwise."""

from __future__ import annotations

import logging
import re
import warnings
from typing import BinaryIO

import numpy as np

from pillar_cli.data.dicom_window import Window, recorded_window
from pillar_cli.errors import DataError

SUFFIX = ".dcm"


def is_dicom(name: str) -> bool:
    return str(name).lower().endswith(SUFFIX)


def dicom_depth(file: str) -> int:
    """16 for a greyscale file of more than 8 bits stored, 8 otherwise (its header read, not its pixels)."""
    dataset = _read(file, file, stop_before_pixels=True)
    colour = str(getattr(dataset, "PhotometricInterpretation", "MONOCHROME2")) == "RGB"
    return 16 if _bits_stored(dataset, file, 8) > 8 and not colour else 8


def _bits_stored(dataset, name: str, default: int) -> int:
    """The file's BitsStored (`default` where it records none); one recorded empty or out of range is one
    line."""
    if "BitsStored" not in dataset:
        return default
    value = dataset.BitsStored
    if value in (None, "") or not 1 <= int(value) <= 32:
        raise DataError(
            f"{name} records BitsStored {'empty' if value in (None, '') else value}: the range of its "
            "pixels is unknown"
        )
    return int(value)


def patient_ids(files: list[str]) -> list[str] | None:
    """Each file's PatientID (headers read, not pixels); None when no file records one. A file without one
    among files with one is refused: its person would be unknown."""
    ids = [
        str(getattr(_read(file, file, stop_before_pixels=True), "PatientID", "") or "").strip()
        for file in files
    ]
    if not any(ids):
        return None
    if not all(ids):
        raise DataError(
            f"{files[ids.index('')]} records no PatientID, other files do: every file needs its patient",
            hint="add it, or map files to persons with param groups=FILE.csv",
        )
    return ids


def _read(file: str | BinaryIO, name: str, **options):
    try:
        import pydicom
    except ImportError:
        raise DataError(
            f"reading DICOM ({name}) needs pydicom: pip install pydicom (or the 'medical' extra)"
        ) from None
    try:
        with warnings.catch_warnings():
            # pydicom warns of each oddity it reads past: the checks below decide
            warnings.simplefilter("ignore")
            return pydicom.dcmread(file, **options)
    except Exception as err:  # pydicom raises its own kinds on a damaged or foreign file
        raise DataError(f"cannot read DICOM file {name}: {_said(err)}") from None


def _said(err: Exception) -> str:
    """pydicom's message on one line: it lists each plugin's failure on a line of its own after a colon, and
    names in-memory buffers by their address, which tells a reader nothing."""
    text = " ".join(re.sub(r"<[^<>]* at 0x[0-9a-f]+>", "", str(err)).split())
    return text if len(text) <= 240 else text[:239] + "…"


def windowless(files: list[str]) -> int:
    """How many of the files record no VOI window (headers read, not pixels)."""
    return sum(recorded_window(_read(file, file, stop_before_pixels=True), file) is None for file in files)


def dicom_image(file: str | BinaryIO, name: str, window: Window = Window()):
    """The file's one frame and its bit depth: grey levels in [0, 1] (8 or 16 bits) through `window`, or an
    8-bit RGB PIL image."""
    dataset = _read(file, name)
    from PIL import Image
    from pydicom.pixels import apply_modality_lut

    frames = int(getattr(dataset, "NumberOfFrames", 1) or 1)
    if frames > 1:
        raise DataError(f"{name} is a multi-frame DICOM ({frames} frames); embed one frame per file")
    bits = _bits_stored(dataset, name, int(getattr(dataset, "BitsAllocated", 16) or 16))
    if bits > 16:
        raise DataError(
            f"{name} stores {bits} bits a pixel; pillar reads up to 16 bits stored: its levels would fit "
            "no 16-bit image",
            hint="window or rescale it to 16 bits first",
        )
    _check_rescale(dataset, name)
    quiet = logging.getLogger("pydicom")
    was, quiet.disabled = (
        quiet.disabled,
        True,
    )  # its decoders log each failure: the error below is the one line
    try:
        with warnings.catch_warnings():  # pydicom's warnings of what it reads past: the checks decide
            warnings.simplefilter("ignore")
            pixels = dataset.pixel_array
    except Exception as err:  # no handler for its transfer syntax, or no pixel data
        syntax = getattr(dataset.file_meta, "TransferSyntaxUID", None)
        compressed = bool(syntax is not None and getattr(syntax, "is_compressed", False))
        raise DataError(
            f"cannot decode the pixels of {name} (transfer syntax {syntax or 'unknown'}"
            f"{f', {syntax.name}' if compressed else ''}): {_said(err)}",
            hint="install a handler for it: pip install pylibjpeg pylibjpeg-libjpeg pylibjpeg-openjpeg"
            if compressed
            else None,
        ) from None
    finally:
        quiet.disabled = was
    photometric = str(getattr(dataset, "PhotometricInterpretation", "MONOCHROME2"))
    if photometric == "RGB" and pixels.dtype == np.uint8 and pixels.ndim == 3:
        return Image.fromarray(pixels, mode="RGB"), 8
    if photometric not in ("MONOCHROME1", "MONOCHROME2") or pixels.ndim != 2:
        raise DataError(
            f"{name} holds {photometric} pixels of shape {pixels.shape}; greyscale (MONOCHROME1/2) and "
            "8-bit RGB are read"
        )
    return _grey_levels(dataset, pixels, bits, apply_modality_lut, window, name), 16 if bits > 8 else 8


def _check_rescale(dataset, name: str) -> None:
    """The modality LUT's slope and intercept, where recorded, must be finite numbers and the slope non-zero:
    else every pixel maps to one grey level, or to none."""
    for tag in ("RescaleSlope", "RescaleIntercept"):
        if tag not in dataset or getattr(dataset, tag) in (None, ""):
            continue
        value = float(getattr(dataset, tag))
        if not np.isfinite(value):
            raise DataError(f"{name} records {tag} {value:g}: no pixel would read as a grey level")
        if tag == "RescaleSlope" and value == 0:
            raise DataError(f"{name} records RescaleSlope 0: every pixel would read as one grey level")


def _grey_levels(
    dataset, pixels: np.ndarray, bits: int, modality_lut, window: Window, name: str
) -> np.ndarray:
    """[0, 1] from the stored unit through the window (inverted for MONOCHROME1)."""
    signed = int(getattr(dataset, "PixelRepresentation", 0)) == 1
    stored = np.array([-(2 ** (bits - 1)), 2 ** (bits - 1) - 1] if signed else [0, 2**bits - 1])
    low, high = np.sort(np.asarray(modality_lut(stored, dataset), dtype=np.float64))
    values = np.asarray(modality_lut(pixels, dataset), dtype=np.float64)
    levels = window.levels(values, (float(low), float(high)), dataset, name)
    return 1 - levels if str(dataset.PhotometricInterpretation) == "MONOCHROME1" else levels

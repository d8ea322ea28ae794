"""Medical image files written for the tests: DICOM through pydicom."""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np


def write_dicom(
    path,
    pixels: np.ndarray,
    *,
    photometric="MONOCHROME2",
    bits=12,
    slope=1.0,
    intercept=0.0,
    frames=1,
    syntax=None,
    patient=None,
    signed=False,
    window=None,
    modality=None,
):
    """A DICOM file of `pixels` (signed: PixelRepresentation 1), with a VOI `window` (centre, width) where
    given; its PatientID is `patient`, or one of the file's own (one patient a file)."""
    from pydicom.dataset import FileDataset, FileMetaDataset
    from pydicom.uid import ExplicitVRLittleEndian, SecondaryCaptureImageStorage, generate_uid

    meta = FileMetaDataset()
    meta.MediaStorageSOPClassUID, meta.MediaStorageSOPInstanceUID = (
        SecondaryCaptureImageStorage,
        generate_uid(),
    )
    meta.TransferSyntaxUID = syntax or ExplicitVRLittleEndian
    dataset = FileDataset(str(path), {}, file_meta=meta, preamble=b"\0" * 128)
    dataset.SOPClassUID, dataset.SOPInstanceUID = (
        meta.MediaStorageSOPClassUID,
        meta.MediaStorageSOPInstanceUID,
    )
    # a file's own patient is named after its folder and name, not its temporary directory: the splits drawn
    # over patients are then the same in every run
    dataset.PatientID = patient or hashlib.sha256("/".join(Path(path).parts[-2:]).encode()).hexdigest()[:16]
    dataset.Rows, dataset.Columns = pixels.shape[-2:]
    dataset.SamplesPerPixel, dataset.PhotometricInterpretation = 1, photometric
    dataset.BitsAllocated, dataset.BitsStored, dataset.HighBit, dataset.PixelRepresentation = (
        16,
        bits,
        bits - 1,
        int(signed),
    )
    dataset.RescaleSlope, dataset.RescaleIntercept = slope, intercept
    if window is not None:
        dataset.WindowCenter, dataset.WindowWidth = window
    if modality is not None:
        dataset.Modality = modality
    if frames > 1:
        dataset.NumberOfFrames = frames
    data = pixels.astype(np.int16 if signed else np.uint16).tobytes()
    if syntax is not None:  # a compressed syntax holds fragments: these are not a valid codestream
        from pydicom.encaps import encapsulate

        data = encapsulate([data])
    dataset.PixelData = data
    dataset.save_as(str(path), enforce_file_format=True)


def four_encodings(folder, hu: np.ndarray, window=(40.0, 400.0), with_window=True):
    """One CT slice (`hu`, in HU) as four scanners might store it, each file displaying the same image:
    12-bit MONOCHROME2, 12-bit MONOCHROME1, 16-bit MONOCHROME2 and signed 16-bit MONOCHROME1. A MONOCHROME1
    file shows low values white, so its values are the window's mirror image (2c − 1 − HU: the LINEAR window
    maps it to 1 − the level), reached through a negative rescale slope."""
    centre = window[0]
    mirrored = 2 * centre - 1 - hu
    shown = window if with_window else None
    folder.mkdir(parents=True, exist_ok=True)
    write_dicom(folder / "a-12-mono2.dcm", hu + 1024, intercept=-1024.0, window=shown)
    write_dicom(
        folder / "b-12-mono1.dcm", 1103 - mirrored, photometric="MONOCHROME1", slope=-1.0, intercept=1103.0,
        window=shown,
    )  # fmt: skip
    write_dicom(
        folder / "c-16-mono2.dcm", (hu + 1024) * 16, bits=16, slope=1 / 16, intercept=-1024.0, window=shown
    )
    write_dicom(
        folder / "d-16-signed-mono1.dcm", -2 * mirrored, bits=16, signed=True, photometric="MONOCHROME1",
        slope=-0.5, window=shown,
    )  # fmt: skip
    return sorted(folder.glob("*.dcm"))

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
):
    """A DICOM file of `pixels`; its PatientID is `patient`, or one of the file's own (one patient a file)."""
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
        0,
    )
    dataset.RescaleSlope, dataset.RescaleIntercept = slope, intercept
    if frames > 1:
        dataset.NumberOfFrames = frames
    data = pixels.astype(np.uint16).tobytes()
    if syntax is not None:  # a compressed syntax holds fragments: these are not a valid codestream
        from pydicom.encaps import encapsulate

        data = encapsulate([data])
    dataset.PixelData = data
    dataset.save_as(str(path), enforce_file_format=True)

"""DICOM files written by pydicom decode to the grey levels a viewer shows: the rescale applied, then the VOI
window each file records (the stored bit depth's range where it records none, or by `window=stored`),
MONOCHROME1 inverted; a multi-frame file and undecodable pixel data are one line."""

from __future__ import annotations

import numpy as np
import pytest

from pillar_cli.data.dicom_window import Window
from pillar_cli.data.image_files import decode_image
from pillar_cli.errors import DataError, UsageError

pydicom = pytest.importorskip("pydicom")
from medical import four_encodings, write_dicom  # noqa: E402  (after the skip: it needs pydicom)


def test_greyscale_dicom_is_scaled_by_its_stored_bit_depth_through_the_rescale(tmp_path):
    stored = np.array([[0, 1024, 2048], [3072, 4095, 512]], dtype=np.uint16)
    write_dicom(tmp_path / "a.dcm", stored, slope=2.0, intercept=-1024.0)
    # a linear rescale keeps the proportions of the range
    expected = np.rint(stored / 4095 * 255).astype(np.uint8)
    np.testing.assert_array_equal(decode_image(str(tmp_path / "a.dcm"), None, channels=1)[..., 0], expected)
    write_dicom(tmp_path / "b.dcm", stored, photometric="MONOCHROME1")
    np.testing.assert_array_equal(
        decode_image(str(tmp_path / "b.dcm"), None, channels=1)[..., 0], 255 - expected
    )


def test_a_multi_frame_file_and_pixels_no_handler_decodes_are_one_line(tmp_path):
    from pydicom.uid import JPEG2000Lossless

    write_dicom(tmp_path / "frames.dcm", np.zeros((2, 4, 4)), frames=2)
    with pytest.raises(
        DataError, match=r"frames.dcm is a multi-frame DICOM \(2 frames\); embed one frame per file$"
    ):
        decode_image(str(tmp_path / "frames.dcm"), None, channels=1)
    write_dicom(tmp_path / "j2k.dcm", np.zeros((4, 4)), syntax=JPEG2000Lossless)
    with pytest.raises(DataError) as refused:
        decode_image(str(tmp_path / "j2k.dcm"), None, channels=1)
    # pydicom lists each plugin's failure on a line of its own after a colon: the message keeps them, on one
    # line
    assert str(refused.value) == (
        f"cannot decode the pixels of {tmp_path / 'j2k.dcm'} (transfer syntax 1.2.840.10008.1.2.4.90, JPEG "
        "2000 "
        "Image Compression (Lossless Only)): Unable to decode as exceptions were raised by all available "
        "plugins: pillow: cannot identify image file"
    )
    assert (
        refused.value.hint
        == "install a handler for it: pip install pylibjpeg pylibjpeg-libjpeg pylibjpeg-openjpeg"
    )


def test_an_empty_bits_stored_and_a_zero_rescale_slope_are_one_line(tmp_path):
    """Once a traceback (int(None), 66 lines) and a silently black image."""
    from pillar_cli.data.pixels import image_depth

    write_dicom(tmp_path / "bits.dcm", np.full((4, 4), 100))
    dataset = pydicom.dcmread(tmp_path / "bits.dcm")
    dataset.BitsStored = None
    dataset.save_as(tmp_path / "bits.dcm")
    for read in (
        lambda: decode_image(str(tmp_path / "bits.dcm"), None, channels=1),
        lambda: image_depth(str(tmp_path / "bits.dcm")),
    ):
        with pytest.raises(
            DataError, match=r"bits.dcm records BitsStored empty: the range of its pixels is unknown$"
        ):
            read()
    write_dicom(tmp_path / "slope.dcm", np.arange(16).reshape(4, 4), slope=0.0)
    with pytest.raises(
        DataError, match=r"slope.dcm records RescaleSlope 0: every pixel would read as one grey level$"
    ):
        decode_image(str(tmp_path / "slope.dcm"), None, channels=1)


def test_more_than_16_bits_stored_and_a_rescale_that_is_no_number_are_one_line(tmp_path):
    """Once all zeros, without a word: 32-bit levels spread over the 32-bit range, and a NaN slope."""
    write_dicom(tmp_path / "wide.dcm", np.full((4, 4), 4000), bits=16)
    dataset = pydicom.dcmread(tmp_path / "wide.dcm")
    dataset.BitsAllocated, dataset.BitsStored, dataset.HighBit = 32, 32, 31
    dataset.PixelData = np.full((4, 4), 4000, dtype=np.uint32).tobytes()
    dataset.save_as(tmp_path / "wide.dcm")
    with pytest.raises(
        DataError, match=r"wide.dcm stores 32 bits a pixel; pillar reads up to 16 bits stored"
    ):
        decode_image(str(tmp_path / "wide.dcm"), None, channels=1)
    for tag, value in (("slope", float("nan")), ("intercept", float("inf"))):
        write_dicom(tmp_path / f"{tag}.dcm", np.arange(16).reshape(4, 4), **{tag: value})
        name = "RescaleSlope nan" if tag == "slope" else "RescaleIntercept inf"
        with pytest.raises(
            DataError, match=rf"{tag}.dcm records {name}: no pixel would read as a grey level$"
        ):
            decode_image(str(tmp_path / f"{tag}.dcm"), None, channels=1)


def test_pydicom_warnings_of_what_it_reads_past_stay_off_stderr(tmp_path):
    """Excess padding after the pixel data: pydicom warned on stderr (a UserWarning before pillar's own
    lines); the pixels read are the file's."""
    import warnings

    write_dicom(tmp_path / "padded.dcm", np.arange(64).reshape(8, 8), bits=8)
    dataset = pydicom.dcmread(tmp_path / "padded.dcm")
    dataset.PixelData += b"\0" * 10
    dataset.save_as(tmp_path / "padded.dcm")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        levels = decode_image(str(tmp_path / "padded.dcm"), None, channels=1)[..., 0]
    np.testing.assert_array_equal(levels, np.rint(np.arange(64).reshape(8, 8) / 255 * 255).astype(np.uint8))


def test_one_slice_in_four_encodings_reads_as_one_image_through_its_window(tmp_path):
    """Normalised over each file's stored bit range, the four encodings read as four different images (12-bit
    and 16-bit ranges differ, a signed range is centred on 0); through the VOI window they record, as one."""
    hu = np.random.default_rng(0).integers(-1000, 1001, (6, 6)).astype(np.float64)
    files = four_encodings(tmp_path, hu)
    read = [decode_image(str(file), None, channels=1, depth=16)[..., 0].astype(np.int64) for file in files]
    for other in read[1:]:
        assert np.abs(other - read[0]).max() <= 1  # one 16-bit level: float rounding of the mirror
    expected = np.clip((hu - 39.5) / 399 + 0.5, 0, 1)  # DICOM's LINEAR window, c = 40, w = 400
    np.testing.assert_allclose(read[0] / 65535, expected, atol=1 / 65535)
    stored = [
        decode_image(str(file), None, channels=1, depth=16, window=Window.parse("stored"))[..., 0]
        for file in files
    ]
    # the bit-range rule: the signed MONOCHROME1 file reads about a quarter of the range away, on average
    assert np.abs(stored[3].astype(np.int64) - stored[0]).mean() > 10_000


def test_a_given_window_or_preset_reads_every_file_alike_and_a_ct_preset_refuses_another_modality(tmp_path):
    hu = np.random.default_rng(1).integers(-1000, 1001, (6, 6)).astype(np.float64)
    own = four_encodings(tmp_path / "own", hu, window=(-600.0, 1500.0))
    none = four_encodings(tmp_path / "none", hu, window=(-600.0, 1500.0), with_window=False)
    lung = Window.parse("lung")
    assert (lung.centre, lung.width, lung.spelled) == (-600, 1500, "-600,1500")
    by_own = decode_image(str(own[0]), None, channels=1, depth=16)
    for file in none[:1] + none[2:3]:  # the MONOCHROME2 files: a given window has no mirror to undo
        np.testing.assert_array_equal(
            decode_image(str(file), None, channels=1, depth=16, window=lung), by_own
        )
    write_dicom(tmp_path / "mr.dcm", np.full((4, 4), 300), modality="MR")
    with pytest.raises(DataError, match=r"mr.dcm is MR: window=lung is a CT preset in HU$"):
        decode_image(str(tmp_path / "mr.dcm"), None, channels=1, window=lung)


def test_a_window_no_function_can_use_is_one_line(tmp_path):
    write_dicom(tmp_path / "w0.dcm", np.zeros((4, 4)), window=(40.0, 0.0))
    with pytest.raises(
        DataError, match=r"w0.dcm records the window centre 40, width 0: no LINEAR window has it$"
    ):
        decode_image(str(tmp_path / "w0.dcm"), None, channels=1)
    for text, said in (("40", "give C,W"), ("40,0", "the width ≥ 1")):
        with pytest.raises(UsageError, match=said):
            Window.parse(text)

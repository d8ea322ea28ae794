"""Image files read at their bit depth: 16-bit PNG (Pillow), 16-bit TIFF in grey and colour (tifffile) and
DICOM keep their 16-bit values; read at 8 bits they are value / 257 rounded, and 8-bit files read at 16 bits
are value × 257; a multi-page TIFF is one line; a file's depth comes from its header without decoding it."""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image

from pillar_cli.data.image_files import ImageFiles
from pillar_cli.data.pixels import decode_image, image_depth
from pillar_cli.errors import DataError

tifffile = pytest.importorskip("tifffile")


@pytest.fixture
def grey16() -> np.ndarray:
    return np.random.default_rng(0).integers(0, 65536, (5, 7), dtype=np.uint16)


def test_a_16_bit_png_keeps_its_values_and_reads_at_8_bits_as_value_over_257(tmp_path, grey16):
    Image.fromarray(grey16).save(tmp_path / "a.png")
    assert image_depth(str(tmp_path / "a.png")) == 16
    np.testing.assert_array_equal(
        decode_image(str(tmp_path / "a.png"), None, channels=1, depth=None)[..., 0], grey16
    )
    eight = decode_image(str(tmp_path / "a.png"), None, channels=1, depth=8)
    assert eight.dtype == np.uint8
    np.testing.assert_array_equal(eight[..., 0], np.rint(grey16 / 257).astype(np.uint8))
    colour = decode_image(str(tmp_path / "a.png"), None, channels=3, depth=16)
    np.testing.assert_array_equal(colour, np.repeat(grey16[..., None], 3, axis=2))


def test_a_16_bit_colour_tiff_keeps_its_channels_and_turns_grey_by_pillows_weights(tmp_path):
    rgb = np.random.default_rng(1).integers(0, 65536, (4, 6, 3), dtype=np.uint16)
    tifffile.imwrite(tmp_path / "c.tif", rgb, photometric="rgb")
    assert image_depth(str(tmp_path / "c.tif")) == 16
    np.testing.assert_array_equal(decode_image(str(tmp_path / "c.tif"), None, depth=16), rgb)
    grey = rgb[..., 0] * 0.299 + rgb[..., 1] * 0.587 + rgb[..., 2] * 0.114
    np.testing.assert_array_equal(
        decode_image(str(tmp_path / "c.tif"), None, channels=1, depth=16)[..., 0],
        np.rint(grey).astype(np.uint16),
    )


def test_an_8_bit_file_reads_at_16_bits_as_value_times_257_and_a_resize_keeps_a_flat_image_flat(tmp_path):
    eight = np.random.default_rng(2).integers(0, 256, (6, 6), dtype=np.uint8)
    Image.fromarray(eight, mode="L").save(tmp_path / "e.png")
    assert image_depth(str(tmp_path / "e.png")) == 8
    np.testing.assert_array_equal(
        decode_image(str(tmp_path / "e.png"), None, channels=1, depth=16)[..., 0],
        eight.astype(np.uint16) * 257,
    )
    tifffile.imwrite(tmp_path / "flat.tif", np.full((9, 13), 40_001, np.uint16))
    np.testing.assert_array_equal(
        decode_image(str(tmp_path / "flat.tif"), 4, channels=1, depth=16),
        np.full((4, 4, 1), 40_001, np.uint16),
    )


def test_a_folder_of_16_bit_files_is_a_uint16_array_unless_read_at_8_bits(tmp_path, grey16):
    files = []
    for i in range(3):
        files.append(str(tmp_path / f"{i}.tif"))
        tifffile.imwrite(files[-1], grey16 + i)
    images = ImageFiles(files, channels=1)
    assert images.dtype == np.uint16 and images.shape == (3, 5, 7, 1) and images[1:].dtype == np.uint16
    np.testing.assert_array_equal(images[2][..., 0], grey16 + 2)
    assert ImageFiles(files, channels=1, depth=8)[:].dtype == np.uint8


def test_a_multi_page_tiff_is_one_line(tmp_path):
    tifffile.imwrite(tmp_path / "pages.tif", np.zeros((3, 4, 4), np.uint16), photometric="minisblack")
    with pytest.raises(
        DataError, match=r"pages.tif is a multi-page TIFF \(3 pages\); embed one page per file$"
    ):
        decode_image(str(tmp_path / "pages.tif"), None)


def test_dicom_of_more_than_8_bits_reads_at_16_bits_through_its_rescale(tmp_path):
    pytest.importorskip("pydicom")
    from medical import write_dicom

    stored = np.array([[0, 1024, 2048], [3072, 4095, 512]], dtype=np.uint16)
    write_dicom(tmp_path / "a.dcm", stored, slope=2.0, intercept=-1024.0)
    write_dicom(tmp_path / "b.dcm", stored, photometric="MONOCHROME1")
    assert image_depth(str(tmp_path / "a.dcm")) == 16
    expected = np.rint(stored / 4095 * 65535).astype(np.uint16)
    np.testing.assert_array_equal(
        decode_image(str(tmp_path / "a.dcm"), None, channels=1, depth=None)[..., 0], expected
    )
    np.testing.assert_array_equal(
        decode_image(str(tmp_path / "b.dcm"), None, channels=1, depth=16)[..., 0], 65535 - expected
    )


def test_an_8_bit_colour_tiff_is_read_by_pillow_and_a_16_bit_cmyk_tiff_is_one_line(tmp_path):
    rgb = np.random.default_rng(3).integers(0, 256, (4, 5, 3), dtype=np.uint8)
    tifffile.imwrite(tmp_path / "rgb8.tif", rgb, photometric="rgb")
    assert image_depth(str(tmp_path / "rgb8.tif")) == 8
    np.testing.assert_array_equal(decode_image(str(tmp_path / "rgb8.tif"), None), rgb)
    tifffile.imwrite(tmp_path / "cmyk.tif", np.zeros((4, 4, 4), np.uint16), photometric="separated")
    with pytest.raises(
        DataError, match=r"cmyk.tif holds 16-bit SEPARATED pixels; greyscale and RGB images are read$"
    ):
        decode_image(str(tmp_path / "cmyk.tif"), None)


def test_a_16_bit_tiff_stored_in_planes_or_turned_by_its_orientation_tag_reads_as_a_viewer_shows_it(tmp_path):
    """Planes stored apart (PlanarConfiguration 2) at a width of 4 were once taken for RGBA; the orientation
    tag is applied at 16 bits as Pillow applies it at 8."""
    rgb = np.random.default_rng(4).integers(0, 65536, (5, 4, 3), dtype=np.uint16)
    tifffile.imwrite(
        tmp_path / "planes.tif", np.moveaxis(rgb, -1, 0), photometric="rgb", planarconfig="separate"
    )
    np.testing.assert_array_equal(decode_image(str(tmp_path / "planes.tif"), None, depth=16), rgb)
    for orientation, upright in (
        (3, rgb[::-1, ::-1]),
        (6, np.swapaxes(rgb, 0, 1)[:, ::-1]),
        (8, np.swapaxes(rgb, 0, 1)[::-1]),
    ):
        tifffile.imwrite(
            tmp_path / f"o{orientation}.tif",
            rgb,
            photometric="rgb",
            extratags=[(274, "H", 1, orientation, True)],
        )
        np.testing.assert_array_equal(
            decode_image(str(tmp_path / f"o{orientation}.tif"), None, depth=16), upright
        )
    eight = rgb.astype(np.uint8)  # the 8-bit path (Pillow) turns the same way
    tifffile.imwrite(tmp_path / "o6-8.tif", eight, photometric="rgb", extratags=[(274, "H", 1, 6, True)])
    np.testing.assert_array_equal(
        decode_image(str(tmp_path / "o6-8.tif"), None), np.swapaxes(eight, 0, 1)[:, ::-1]
    )


def test_signed_and_unit_float_tiffs_and_animated_images_are_one_line(tmp_path):
    tifffile.imwrite(tmp_path / "signed.tif", np.array([[-1024, 0], [5, 3000]], np.int16))
    with pytest.raises(
        DataError,
        match=r"signed.tif holds negative pixel values \(int16, down to -1024\); pillar "
        r"reads unsigned levels: shift or window them to 0..65,535 \(or 0..255\) first$",
    ):
        decode_image(str(tmp_path / "signed.tif"), None)
    tifffile.imwrite(tmp_path / "unit.tif", np.array([[0.0, 0.25], [0.5, 1.0]], np.float32))
    with pytest.raises(
        DataError,
        match=r"unit.tif holds float pixels within \[0, 1\]; pillar reads float images as "
        r"0..255 levels: scale them to 0..255, or save integers$",
    ):
        decode_image(str(tmp_path / "unit.tif"), None)
    tifffile.imwrite(tmp_path / "levels.tif", np.array([[0.0, 64.0], [128.0, 255.0]], np.float32))
    np.testing.assert_array_equal(
        decode_image(str(tmp_path / "levels.tif"), None, channels=1)[..., 0], [[0, 64], [128, 255]]
    )
    frames = [Image.fromarray(np.full((4, 4), value, np.uint8), mode="L") for value in (0, 255)]
    for name in ("moving.gif", "moving.png"):
        frames[0].save(tmp_path / name, save_all=True, append_images=frames[1:])
        with pytest.raises(
            DataError,
            match=rf"{name} is an animated or multi-page image \(2 frames\); embed one "
            r"frame per file$",
        ):
            decode_image(str(tmp_path / name), None)


def test_levels_beyond_16_or_8_bits_and_nan_pixels_are_one_line_not_clipped(tmp_path):
    """An int32 TIFF holding more than 16-bit values was clipped at 65,535 without a word."""
    tifffile.imwrite(tmp_path / "wide.tif", np.array([[0, 70_000], [5, 3000]], np.int32))
    with pytest.raises(
        DataError,
        match=r"wide.tif holds pixel values up to 70000 \(int32\); pillar reads integer images as 16-bit, "
        r"0..65,535 levels: window or rescale them to that range first$",
    ):
        decode_image(str(tmp_path / "wide.tif"), None)
    tifffile.imwrite(tmp_path / "bright.tif", np.array([[0.0, 300.0], [5.0, 30.0]], np.float32))
    with pytest.raises(
        DataError, match=r"bright.tif holds pixel values up to 300 \(float32\); pillar reads "
    ):
        decode_image(str(tmp_path / "bright.tif"), None)
    tifffile.imwrite(tmp_path / "nan.tif", np.array([[0.0, np.nan], [5.0, 30.0]], np.float32))
    with pytest.raises(DataError, match=r"nan.tif holds 1 NaN or infinite pixel values$"):
        decode_image(str(tmp_path / "nan.tif"), None)
    tifffile.imwrite(tmp_path / "fits.tif", np.array([[0, 65_535], [5, 3000]], np.int32))
    np.testing.assert_array_equal(
        decode_image(str(tmp_path / "fits.tif"), None, channels=1, depth=16)[..., 0], [[0, 65_535], [5, 3000]]
    )


def test_a_16_bit_colour_png_reads_at_8_bits_by_its_high_byte_as_the_docs_say(tmp_path):
    """Pillow decodes 16-bit RGB and grey+alpha PNGs at 8 bits, keeping value // 256 (0x12ff → 0x12, where
    value / 257 rounded would give 0x13): what docs/cli.md states, checked on files written byte by byte."""
    import struct
    import zlib

    def png(path, pixels: np.ndarray, colour_type: int) -> None:
        rows = b"".join(b"\x00" + row.astype(">u2").tobytes() for row in pixels)

        def chunk(kind: bytes, data: bytes) -> bytes:
            return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

        header = struct.pack(">IIBBBBB", pixels.shape[1], pixels.shape[0], 16, colour_type, 0, 0, 0)
        path.write_bytes(
            b"\x89PNG\r\n\x1a\n"
            + chunk(b"IHDR", header)
            + chunk(b"IDAT", zlib.compress(rows))
            + chunk(b"IEND", b"")
        )

    rgb = np.array([[[0x1280, 0x12FF, 0xFFFF], [0, 0x00FF, 0x0100]]], np.uint16)
    png(tmp_path / "rgb.png", rgb, 2)
    assert image_depth(str(tmp_path / "rgb.png")) == 8
    np.testing.assert_array_equal(decode_image(str(tmp_path / "rgb.png"), None), rgb // 256)
    grey_alpha = np.array([[[0x12FF, 0xFFFF], [0x8000, 0x0000]]], np.uint16)
    png(tmp_path / "la.png", grey_alpha, 4)
    np.testing.assert_array_equal(
        decode_image(str(tmp_path / "la.png"), None, channels=1)[..., 0], grey_alpha[..., 0] // 256
    )

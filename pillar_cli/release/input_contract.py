"""What an export's graph reads, stated in its metadata (`pillar_input`) so that code with nothing but a file
reader and onnxruntime feeds it what `pillar predict` feeds the head: the tensor's type and shape, and how
each kind of file becomes it (data/pixels.py and data/dicom.py decode files so). DICOM is spelled out: a
12-bit file's stored values are not the 16-bit levels the graph reads, the window its rows were read through
decides the grey levels, and MONOCHROME1 turns the scale over.
"""

from __future__ import annotations

from pillar_cli.artifacts.feature_recipe import FeatureRecipe
from pillar_cli.data.dicom_window import FILE, STORED, Window

VALUES = (
    "v = the modality LUT's output (stored × RescaleSlope + RescaleIntercept, or a Modality LUT Sequence as "
    "pydicom's apply_modality_lut applies it), where stored is the pixel array as stored"
)
STORED_RANGE = (
    "level = (v − lo) / (hi − lo), clipped to [0, 1], where [lo, hi] is the range BitsStored B holds "
    "([0, 2^B − 1]; [−2^(B−1), 2^(B−1) − 1] where PixelRepresentation is 1) through the same modality LUT, "
    "lo the smaller"
)
LINEAR = "level = clip((v − (c − 0.5)) / (w − 1) + 0.5, 0, 1)"
OWN_WINDOW = (
    "c, w = the file's first WindowCenter and WindowWidth; by its VOILUTFunction, LINEAR (the default): "
    f"{LINEAR}; LINEAR_EXACT: level = clip((v − c) / w + 0.5, 0, 1); SIGMOID: level = 1 / (1 + exp(−4 "
    f"(v − c) / w)); a file recording no window: {STORED_RANGE}"
)


def dicom_levels(window: Window) -> str:
    """How a DICOM file's stored pixels become levels in [0, 1] through `window`, in formulas."""
    if window.rule == STORED:
        rule = STORED_RANGE
    elif window.rule == FILE:
        rule = OWN_WINDOW
    else:
        rule = f"c = {window.centre:g}, w = {window.width:g}: {LINEAR}"
    return f"{VALUES}; {rule}; then 1 − level for MONOCHROME1"


def input_contract(recipe: FeatureRecipe, shape: tuple[int, ...] | None, features: int) -> dict:
    """The graph's input and how to make it from files; `shape` (H, W, C) of an export from images, None for
    one that reads embedded features (`features` of them)."""
    if shape is None:
        return {
            "tensor": f"float32 (N, {features}): features embedded as `features` (the recipe) says",
            "from_files": "embed them with pillar (its recipe), then feed the rows; standardising and "
            "projecting are inside the graph",
        }
    height, width, channels = shape
    depth = recipe.depth or 8
    top = 2**depth - 1
    resize = f"resized bilinearly to {width} × {height} (Pillow's BILINEAR, " + (
        "on the float levels before rounding)" if depth == 16 else "on the rounded 8-bit levels)"
    )
    return {
        "tensor": f"uint{depth} (N, {height}, {width}, {channels}), channels last, input name 'input'",
        "value": f"round(level × {top}), a level in [0, 1]; {'grey' if channels == 1 else 'RGB'}",
        "images": f"PNG, JPEG, TIFF: read at {depth} bits (a 16-bit value read at 8 bits is value / 257 "
        f"rounded, an 8-bit value read at 16 bits value × 257), EXIF or TIFF orientation applied; {resize}",
        "dicom": f"{dicom_levels(Window.parse(recipe.pixel_window or STORED))}; then round(level × {top}); "
        f"{resize}",
        "reference": "pillar predict CLASSIFIER --source image-folder|dicom --path FOLDER decodes files so",
    }

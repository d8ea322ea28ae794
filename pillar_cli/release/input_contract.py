"""What an export's graph reads, stated in its metadata (`pillar_input`) so that code with nothing but a file
reader and onnxruntime feeds it what `pillar predict` feeds the head: the tensor's type and shape, and how
each kind of file becomes it (data/pixels.py and data/dicom.py decode files so). DICOM is spelled out: a
12-bit file's stored values are not the 16-bit levels the graph reads, and MONOCHROME1 and a negative rescale
slope turn the scale over.
"""

from __future__ import annotations

from pillar_cli.artifacts.feature_recipe import FeatureRecipe


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
        "dicom": "level = (stored − lo) / (hi − lo), clipped to [0, 1], where stored is the pixel array as "
        "stored and [lo, hi] the range BitsStored B holds ([0, 2^B − 1]; [−2^(B−1), 2^(B−1) − 1] where "
        "PixelRepresentation is 1); (hi − stored) / (hi − lo) where RescaleSlope is negative (the rescale "
        "intercept cancels; a Modality LUT Sequence is applied as pydicom's apply_modality_lut applies it, "
        f"to the pixels and to lo and hi); 1 − level for MONOCHROME1; then round(level × {top}); {resize}",
        "reference": "pillar predict CLASSIFIER --source image-folder|dicom --path FOLDER decodes files so",
    }

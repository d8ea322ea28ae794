"""What an exported classifier carries (pillar export): its privacy statement, class names, head and feature
recipe, read back from ONNX metadata_props, a TorchScript extra file or safetensors metadata. Each reader is
imported only for its own format.
"""

from __future__ import annotations

import json
import warnings
import zipfile
from pathlib import Path

from pillar_cli.errors import ArtifactError

EXPORT_FORMATS = ("onnx", "torchscript", "safetensors")
METADATA_KEYS = ("privacy", "class_names", "head", "features")  # each stored as JSON under "pillar_<key>"
EXTRA_FILE = "pillar.json"  # TorchScript: one extra file holding the metadata


def exported_format(path: Path) -> str | None:
    """The export format of a file (by its suffix; TorchScript files are zip archives), None for anything else."""
    suffix = path.suffix.lower()
    if suffix in (".onnx", ".safetensors"):
        return suffix[1:]
    return "torchscript" if path.is_file() and zipfile.is_zipfile(path) else None


def read_export_metadata(path: Path) -> dict:
    """The statement, class names, head and feature recipe an exported file carries, by key."""
    fmt = exported_format(path)
    try:
        if fmt == "onnx":
            import onnx

            raw = {prop.key: prop.value for prop in onnx.load(str(path), load_external_data=False).metadata_props}
        elif fmt == "safetensors":
            from safetensors import safe_open

            with safe_open(str(path), "np") as handle:
                raw = handle.metadata() or {}
        else:
            import torch

            files = {EXTRA_FILE: ""}
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", FutureWarning)  # TorchScript is deprecated in torch, still read
                torch.jit.load(str(path), map_location="cpu", _extra_files=files)
            raw = json.loads(files[EXTRA_FILE] or "{}")
        return {key: json.loads(raw[f"pillar_{key}"]) for key in METADATA_KEYS}
    except Exception as err:  # each reader raises its own types on a foreign or damaged file
        raise ArtifactError(f"{path} carries no pillar privacy statement ({type(err).__name__})",
                            hint="export it with pillar export") from err

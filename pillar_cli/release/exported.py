"""What an exported classifier carries (pillar export): its privacy statement, class names, head and feature
recipe, read back from ONNX metadata_props, a TorchScript extra file or safetensors metadata. Each reader is
imported only for its own format.
"""

from __future__ import annotations

import hashlib
import json
import warnings
import zipfile
from pathlib import Path

from pillar_cli.artifacts.schema import carried_problem
from pillar_cli.errors import ArtifactError

FILE_FORMATS = ("onnx", "torchscript", "safetensors")  # one file each
EXPORT_FORMATS = (*FILE_FORMATS, "hf")
SUFFIXES = {"onnx": (".onnx",), "torchscript": (".pt", ".pth", ".ts", ".torchscript"), "safetensors": (".safetensors",),
            "hf": ("",)}  # hf: a folder in the Hugging Face model layout
HF_WEIGHTS = "model.safetensors"  # an hf folder's tensors and metadata; beside it config.json and README.md
METADATA_KEYS = ("privacy", "class_names", "head", "features", "release")  # each stored as JSON under "pillar_<key>"
HASH_KEY = "pillar_content_hash"  # sha256 over the metadata above: an edit of one value without it is refused
EXTRA_FILE = "pillar.json"  # TorchScript: one extra file holding the metadata


def exported_format(path: Path) -> str | None:
    """The export format of a file (by its suffix; TorchScript files are zip archives; an hf folder holds
    model.safetensors), None for anything else."""
    if path.is_dir():
        return "hf" if (path / HF_WEIGHTS).is_file() else None
    suffix = path.suffix.lower()
    if suffix in (".onnx", ".safetensors"):
        return suffix[1:]
    return "torchscript" if path.is_file() and zipfile.is_zipfile(path) else None


def read_export_metadata(path: Path) -> dict:
    """The statement, class names, head and feature recipe an exported file carries, by key; refused with one line
    when the file is not of its format, carries no pillar metadata, or carries metadata of the wrong shape."""
    fmt = exported_format(path)
    try:
        raw = _raw_metadata(path, fmt)
    except Exception as err:  # each format's reader raises its own types on a foreign or damaged file
        raise ArtifactError(f"{path} is not a readable {fmt} file ({str(err).splitlines()[0][:120]})",
                            hint="export it again with pillar export") from err
    missing = [key for key in METADATA_KEYS if f"pillar_{key}" not in raw]
    if missing:
        raise ArtifactError(f"{path} carries no pillar {missing[0]} in its metadata", hint="export it with pillar export")
    try:
        carried = {key: json.loads(raw[f"pillar_{key}"]) for key in METADATA_KEYS}
    except (TypeError, ValueError):
        raise ArtifactError(f"{path}: its pillar metadata is not JSON") from None
    if raw.get(HASH_KEY) != metadata_hash(carried):
        raise ArtifactError(f"{path}: its pillar metadata was changed after it was exported (its content hash does "
                            "not match)", hint="export it again from its release")
    if problem := carried_problem(carried):
        raise ArtifactError(f"{path} {problem}")
    return carried


def metadata_hash(carried: dict) -> str:
    """sha256 over the pillar metadata of an export (sorted JSON), which the export stores beside it."""
    return hashlib.sha256(json.dumps(carried, sort_keys=True).encode()).hexdigest()


def _raw_metadata(path: Path, fmt: str | None) -> dict:
    """The format's own key-value metadata."""
    if fmt == "onnx":
        import onnx

        return {prop.key: prop.value for prop in onnx.load(str(path), load_external_data=False).metadata_props}
    if fmt in ("safetensors", "hf"):
        from safetensors import safe_open

        with safe_open(str(path / HF_WEIGHTS if fmt == "hf" else path), "np") as handle:
            return handle.metadata() or {}
    import torch

    files = {EXTRA_FILE: ""}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)  # TorchScript is deprecated in torch, still read
        torch.jit.load(str(path), map_location="cpu", _extra_files=files)
    extra = json.loads(files[EXTRA_FILE] or "{}")
    return extra if isinstance(extra, dict) else {}

"""What an exported classifier carries (pillar export): its privacy statement, class names, head and feature
recipe, read back from ONNX metadata_props, a TorchScript extra file or safetensors metadata. Each reader is
imported only for its own format.

An export checks itself: its metadata holds the sha256 of everything else in it (`contents`) — the ONNX graph
with its initializers, every member of the TorchScript archive, the safetensors tensors, and for an hf folder
its tensors and the bytes of its card and config.json — and one hash over all the metadata. A flipped weight
byte or an edited card is refused by every reader. Hashes anyone can recompute after an edit; only a signature
says who wrote the file (release/signing.py).
"""

from __future__ import annotations

import hashlib
import json
import warnings
import zipfile
from pathlib import Path

import numpy as np

from pillar_cli.artifacts.schema import carried_problem
from pillar_cli.errors import ArtifactError

FILE_FORMATS = ("onnx", "torchscript", "safetensors")  # one file each
EXPORT_FORMATS = (*FILE_FORMATS, "hf")
SUFFIXES = {
    "onnx": (".onnx",),
    "torchscript": (".pt", ".pth", ".ts", ".torchscript"),
    "safetensors": (".safetensors",),
    "hf": ("",),
}  # hf: a folder in the Hugging Face model layout
HF_WEIGHTS = "model.safetensors"  # an hf folder's tensors and metadata; beside it config.json and README.md
METADATA_KEYS = (
    "privacy",
    "class_names",
    "head",
    "features",
    "release",
)  # each stored as JSON under "pillar_<key>"
CONTENTS_KEY, METRICS_KEY = (
    "contents",
    "metrics",
)  # the hashes of the rest of the file; an hf card's test metrics
INPUT_KEY = "input"  # what the graph reads and how files become it (release/input_contract.py)
# a signed hf folder's signature, inside it so that an upload keeps it (not hashed)
HF_SIGNATURE = "model.sig"
HF_FILES = ("README.md", "config.json")  # an hf folder's files beside its weights, which `contents` hashes
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
    """The statement, class names, head and feature recipe an exported file carries, by key; refused with one
    line when the file is not of its format, carries no pillar metadata, or carries metadata of the wrong
    shape."""
    fmt = exported_format(path)
    try:
        raw = _raw_metadata(path, fmt)
    except Exception as err:  # each format's reader raises its own types on a foreign or damaged file
        raise ArtifactError(
            f"{path} is not a readable {fmt} file ({str(err).splitlines()[0][:120]})",
            hint="export it again with pillar export",
        ) from err
    missing = [key for key in (*METADATA_KEYS, CONTENTS_KEY) if f"pillar_{key}" not in raw]
    if missing:
        raise ArtifactError(
            f"{path} carries no pillar {missing[0]} in its metadata", hint="export it with pillar export"
        )
    try:
        carried = {
            key: json.loads(raw[f"pillar_{key}"])
            for key in (*METADATA_KEYS, CONTENTS_KEY, METRICS_KEY, INPUT_KEY)
            if f"pillar_{key}" in raw
        }
    except (TypeError, ValueError):
        raise ArtifactError(f"{path}: its pillar metadata is not JSON") from None
    if raw.get(HASH_KEY) != metadata_hash(carried):
        raise ArtifactError(
            f"{path}: its pillar metadata was changed after it was exported (its content hash does "
            "not match)",
            hint="export it again from its release",
        )
    if problem := carried_problem(carried):
        raise ArtifactError(f"{path} {problem}")
    try:
        changed = changed_contents(path, fmt, carried[CONTENTS_KEY])
    except (
        Exception
    ) as err:  # each format's reader raises its own types on damaged weights (a zip member's CRC)
        raise ArtifactError(
            f"{path} is not a readable {fmt} file ({str(err).splitlines()[0][:120]})",
            hint="export it again with pillar export",
        ) from err
    if changed is not None:
        raise ArtifactError(
            f"{path}: its {changed} changed after it was exported (the hash its metadata holds "
            "does not match)",
            hint="export it again from its release",
        )
    return carried


def contents_of(path: Path, fmt: str) -> dict[str, str]:
    """sha256 of everything an export holds besides its pillar metadata, by part: `graph` (ONNX, the model
    without its metadata), `archive` (TorchScript, every member but the extra file and the id torch derives
    from all of them), `tensors` (safetensors and hf), and for hf each of HF_FILES."""
    if fmt == "onnx":
        import onnx

        model = onnx.load(str(path), load_external_data=False)
        del model.metadata_props[:]
        return {"graph": hashlib.sha256(model.SerializeToString(deterministic=True)).hexdigest()}
    if fmt == "torchscript":
        digest = hashlib.sha256()
        with zipfile.ZipFile(path) as archive:
            for member in sorted(archive.namelist(), key=lambda name: name.split("/", 1)[-1]):
                short = member.split("/", 1)[-1]  # the archive's top folder is named after the file
                if short not in (
                    f"extra/{EXTRA_FILE}",
                    ".data/serialization_id",
                ):  # the id hashes the extra file
                    digest.update(f"{short}\n".encode() + hashlib.sha256(archive.read(member)).digest())
        return {"archive": digest.hexdigest()}
    contents = {"tensors": _tensors_digest(path / HF_WEIGHTS if fmt == "hf" else path)}
    if fmt == "hf":
        contents |= {
            name: hashlib.sha256((path / name).read_bytes()).hexdigest() if (path / name).is_file() else ""
            for name in HF_FILES
        }
    return contents


def changed_contents(path: Path, fmt: str, recorded: object) -> str | None:
    """What part of an export differs from the hashes its metadata records (None: nothing)."""
    if not isinstance(recorded, dict):
        return "contents record"
    found = contents_of(path, fmt)
    return next((part for part, digest in found.items() if recorded.get(part) != digest), None)


def _tensors_digest(path: Path) -> str:
    """sha256 over a safetensors file's tensors: each one's name, dtype, shape and bytes, by name."""
    from safetensors import safe_open

    digest = hashlib.sha256()
    with safe_open(str(path), "np") as handle:
        for name in sorted(handle.keys()):
            tensor = handle.get_tensor(name)
            digest.update(f"{name}|{tensor.dtype}|{list(tensor.shape)}\n".encode())
            digest.update(np.ascontiguousarray(tensor).tobytes())
    return digest.hexdigest()


def metadata_hash(carried: dict) -> str:
    """sha256 over the pillar metadata of an export (sorted JSON), which the export stores beside it."""
    return hashlib.sha256(json.dumps(carried, sort_keys=True).encode()).hexdigest()


def _raw_metadata(path: Path, fmt: str | None) -> dict:
    """The format's own key-value metadata."""
    if fmt == "onnx":
        import onnx

        return {
            prop.key: prop.value for prop in onnx.load(str(path), load_external_data=False).metadata_props
        }
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

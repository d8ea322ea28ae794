"""Every value a shipped file stores, by address: HDF5 attributes (parsed down to JSON leaves) and datasets;
ONNX metadata, initializers and node attributes; TorchScript archive members and its extra files; safetensors
metadata and tensors; an hf folder's weights, config.json and card; a page's text and attributes; a table's
lines; a figure's pixels and text chunks. Arrays and opaque members are compared by digest. What the
neighbours check (audit/neighbours.py) compares between runs."""

from __future__ import annotations

import contextlib
import hashlib
import json
import zipfile
from pathlib import Path

import h5py
import numpy as np

from pillar_cli.errors import UsageError
from pillar_cli.release.exported import HF_WEIGHTS


def stored_values(path: Path) -> dict[str, str]:
    """Every value a shipped file stores, by address: leaves of its metadata as text, arrays as digests."""
    if path.is_dir():
        return _hf_values(path)
    suffix = path.suffix.lower()
    if suffix == ".h5":
        return _hdf5_values(path)
    if suffix == ".onnx":
        return _onnx_values(path)
    if suffix == ".safetensors":
        return _safetensors_values(path)
    if suffix in (".html", ".htm"):
        return _html_values(path)
    if suffix in (".md", ".csv"):
        return {f"lines/{number}": repr(line) for number, line in enumerate(path.read_text().splitlines())}
    if suffix == ".png":
        return _png_values(path)
    if zipfile.is_zipfile(path):
        return _zip_values(path)
    raise UsageError(f"{path}: not a file the neighbours check can read")


def _leaves(prefix: str, value: object) -> dict[str, str]:
    """A JSON value as its leaves: dicts and lists by key and position, strings that hold JSON parsed too."""
    if isinstance(value, str) and value[:1] in "{[":
        with contextlib.suppress(ValueError):
            value = json.loads(value)
    if isinstance(value, dict):
        return {k: v for key, item in value.items() for k, v in _leaves(f"{prefix}/{key}", item).items()}
    if isinstance(value, list):
        return {k: v for i, item in enumerate(value) for k, v in _leaves(f"{prefix}/{i}", item).items()}
    return {prefix: repr(value)}


def _digest(array: np.ndarray) -> str:
    array = np.ascontiguousarray(array)
    return f"{array.dtype}{list(array.shape)} sha256:{hashlib.sha256(array.tobytes()).hexdigest()[:16]}"


def _hdf5_values(path: Path) -> dict[str, str]:
    values: dict[str, str] = {}
    with h5py.File(path, "r") as h5:
        for key, value in h5.attrs.items():
            values |= _leaves(
                f"attrs/{key}",
                value.decode()
                if isinstance(value, bytes)
                else value.item()
                if isinstance(value, np.generic)
                else value,
            )

        def visit(name: str, node: object) -> None:
            if isinstance(node, h5py.Dataset):
                values[f"datasets/{name}"] = _digest(node[()])

        h5.visititems(visit)
    return values


def _onnx_values(path: Path) -> dict[str, str]:
    import onnx
    from onnx import numpy_helper

    model = onnx.load(str(path))
    values: dict[str, str] = {}
    for prop in model.metadata_props:
        values |= _leaves(f"metadata/{prop.key}", prop.value)
    for tensor in model.graph.initializer:
        values[f"initializers/{tensor.name}"] = _digest(numpy_helper.to_array(tensor))
    for node in model.graph.node:
        for attribute in node.attribute:
            serialized = attribute.SerializeToString()
            values[f"nodes/{node.name}/{attribute.name}"] = hashlib.sha256(serialized).hexdigest()[:16]
    return values


def _safetensors_values(path: Path) -> dict[str, str]:
    from safetensors import safe_open

    values: dict[str, str] = {}
    with safe_open(str(path), "np") as handle:
        for key, value in (handle.metadata() or {}).items():
            values |= _leaves(f"metadata/{key}", value)
        for name in handle.keys():
            values[f"tensors/{name}"] = _digest(handle.get_tensor(name))
    return values


def _hf_values(folder: Path) -> dict[str, str]:
    """An hf folder: its weights as a safetensors file, its config.json's leaves, its card's front matter
    leaves and the digest of its text."""
    from pillar_cli.release.card import front_matter_of

    values = {f"{HF_WEIGHTS}/{key}": value for key, value in _safetensors_values(folder / HF_WEIGHTS).items()}
    values |= _leaves("config.json", (folder / "config.json").read_text())
    card = (folder / "README.md").read_text()
    values |= _leaves("README.md/front", front_matter_of(card) or {})
    values["README.md/text"] = hashlib.sha256(card.encode()).hexdigest()[:16]
    return values


def _html_values(path: Path) -> dict[str, str]:
    """A page: every text node and attribute value, in document order (an inline figure's drawing among
    them)."""
    from html.parser import HTMLParser

    found: list[str] = []

    class Collect(HTMLParser):
        def handle_starttag(self, tag: str, attrs: list) -> None:
            found.extend(f"{tag}@{name}={value}" for name, value in attrs)

        def handle_data(self, data: str) -> None:
            if data.strip():
                found.append(data.strip())

    Collect().feed(path.read_text(encoding="utf-8"))
    return {f"html/{index}": repr(value) for index, value in enumerate(found)}


def _png_values(path: Path) -> dict[str, str]:
    """A figure: its pixels by digest and its text chunks."""
    from PIL import Image

    with Image.open(path) as image:
        values = {f"text/{key}": repr(value) for key, value in image.info.items() if isinstance(value, str)}
        return values | {"pixels": _digest(np.asarray(image))}


def _zip_values(path: Path) -> dict[str, str]:
    """A TorchScript archive: its extra files parsed, every other member by digest."""
    values: dict[str, str] = {}
    with zipfile.ZipFile(path) as archive:
        for member in archive.namelist():
            data = archive.read(member)
            short = member.split("/", 1)[-1]  # the archive's own top folder is named after the file
            if "/extra/" in f"/{short}":
                values |= _leaves(f"members/{short}", data.decode())
            else:
                values[f"members/{short}"] = hashlib.sha256(data).hexdigest()[:16]
    return values

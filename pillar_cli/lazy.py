"""Heavy libraries imported on first use, so that a command's `--help` and the commands that never touch them
start at once: torch alone costs about a second, and most modules name it only inside functions.

    from pillar_cli.lazy import torch   # no import yet (scipy's submodules likewise)
    torch.zeros(3)                      # imports torch here, once

A module that needs the library at import time (a class deriving from `torch.nn.Module`) imports it plainly.

May import: nothing.
"""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import TYPE_CHECKING, Any


class LazyModule:
    """Stands for a module until one of its attributes is read; each attribute read is then kept on the
    stand-in, so that a hot loop pays the forwarding once per name."""

    def __init__(self, name: str):
        self._name = name
        self._module: ModuleType | None = None

    def __getattr__(self, attribute: str) -> Any:
        if self._module is None:
            self._module = importlib.import_module(self._name)
        value = getattr(self._module, attribute)
        setattr(self, attribute, value)
        return value

    def __repr__(self) -> str:
        return f"<lazy module '{self._name}'{'' if self._module is None else ' (imported)'}>"


if TYPE_CHECKING:  # what a type checker sees: the modules themselves
    import scipy.optimize as scipy_optimize
    import scipy.sparse.linalg as scipy_sparse_linalg
    import torch
else:
    torch = LazyModule("torch")
    scipy_optimize = LazyModule("scipy.optimize")
    scipy_sparse_linalg = LazyModule("scipy.sparse.linalg")
scipy_stats = LazyModule("scipy.stats")

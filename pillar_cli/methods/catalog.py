"""The training methods by name. Adding a method: one module with a `Method` subclass, one entry here."""

from __future__ import annotations

from pillar_cli.errors import UsageError
from pillar_cli.methods.adadps import ADADPS
from pillar_cli.methods.base import Method
from pillar_cli.methods.closed_form import DP_LS, PUBLIC_LDA
from pillar_cli.methods.disjunctions import EM_COMPONENTS, EM_DISJUNCTIONS
from pillar_cli.methods.gep import GEP
from pillar_cli.methods.noisy_sgd import NOISY_SGD
from pillar_cli.methods.projected import DPSGD, JL, PILLAR

METHODS: dict[str, Method] = {method.name: method for method in (PILLAR, DPSGD, JL, GEP, NOISY_SGD, PUBLIC_LDA,
                                                                DP_LS, ADADPS, EM_COMPONENTS, EM_DISJUNCTIONS)}


def get_method(name: str) -> Method:
    if name not in METHODS:
        raise UsageError(f"unknown method '{name}' (known: {', '.join(METHODS)})")
    return METHODS[name]

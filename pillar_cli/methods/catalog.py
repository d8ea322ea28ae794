"""The training methods by name, in the order result tables list them (the paper's Table 1 first).

Adding a method: one module with a `Method` subclass and one registration — here for a built-in method, or,
for a plugin, an entry point in its package's metadata naming the `Method` instance:

    [project.entry-points."pillar.methods"]
    centroids = "my_package.centroids:CENTROIDS"

Its name, options (flags of train-private), family (its row in the reports) and audit coverage then come from
it.
"""

from __future__ import annotations

import sys
from importlib.metadata import entry_points
from typing import Any

from pillar_cli.errors import UsageError
from pillar_cli.methods.adadps import ADADPS
from pillar_cli.methods.base import Cannot, Method
from pillar_cli.methods.closed_form import DP_LS, PUBLIC_LDA
from pillar_cli.methods.disjunctions import EM_COMPONENTS, EM_DISJUNCTIONS
from pillar_cli.methods.gep import GEP
from pillar_cli.methods.noisy_sgd import NOISY_SGD
from pillar_cli.methods.projected import DPSGD, JL, PILLAR
from pillar_cli.methods.prototypes import PROTOTYPES, VOTES
from pillar_cli.methods.second_order import DP_FC, DP_NEWTON, PUBLIC_FC

PLUGIN_GROUP = "pillar.methods"
DEFAULT_METHOD = PILLAR.name

METHODS: dict[str, Method] = {}


def register(method: Method) -> Method:
    """Add a method to every sweep, command and report; its name and its options' flags must be new."""
    if not isinstance(method, Method) or not method.name:
        raise ValueError(f"{method!r} is not a named pillar Method")
    if method.name in METHODS:
        raise ValueError(f"a method named '{method.name}' is already registered")
    owners = {spec.name: name for name, known in METHODS.items() for spec in known.option_specs()}
    for spec in method.option_specs():
        if spec.name in owners:
            raise ValueError(
                f"method '{method.name}' declares option {spec.flag}, which is already method "
                f"'{owners[spec.name]}''s"
            )
    METHODS[method.name] = method
    return method


def get_method(name: str) -> Method:
    if name not in METHODS:
        raise UsageError(f"unknown method '{name}' (known: {', '.join(METHODS)})")
    return METHODS[name]


def options_by_method(values: dict[str, Any]) -> dict[str, Any]:
    """Each method's options (for the methods that have some) from values by option name."""
    return {
        name: method.make_options(values) for name, method in METHODS.items() if method.options is not None
    }


def auditable() -> list[str]:
    """The methods the input-canary audit can run."""
    return [name for name, method in METHODS.items() if method.can(Cannot.BE_AUDITED)]


def bounding_persons() -> list[str]:
    """The methods that can bound one person's contribution (the privacy unit person)."""
    return [name for name, method in METHODS.items() if method.can(Cannot.BOUND_A_PERSON)]


def _load_plugins() -> None:
    """Register every installed plugin's method; one that fails to load is skipped with a warning, so that a
    broken plugin does not take the built-in methods down."""
    for entry in entry_points(group=PLUGIN_GROUP):
        try:
            register(entry.load())
        except Exception as err:  # any error of third-party code: reported, never fatal
            print(f"warning: method plugin '{entry.name}' ({entry.value}) not loaded: {err}", file=sys.stderr)


for _builtin in (
    DPSGD,
    JL,
    ADADPS,
    GEP,
    PILLAR,
    PUBLIC_LDA,
    DP_LS,
    PROTOTYPES,
    VOTES,
    DP_NEWTON,
    DP_FC,
    PUBLIC_FC,
    NOISY_SGD,
    EM_COMPONENTS,
    EM_DISJUNCTIONS,
):
    register(_builtin)
_load_plugins()

"""The registry's methods on the command line: the --method help and one flag per option a method declares."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable

import typer

from pillar_cli.methods.catalog import METHODS

METHOD_LIST = "; ".join(f"{name} ({method.description})" for name, method in METHODS.items())


def method_flags(methods: Iterable[str]) -> Callable[[Callable], Callable]:
    """A decorator giving a command one flag per option these methods declare (a plugin's included), passed to
    it as keyword arguments, under "Method options" in its help."""

    def decorate(command: Callable) -> Callable:
        signature = inspect.signature(command)
        own = [p for p in signature.parameters.values() if p.kind is not inspect.Parameter.VAR_KEYWORD]
        taken = {p.name for p in own}
        flags = []
        for name in methods:
            for spec in METHODS[name].option_specs():
                if spec.name in taken:
                    raise ValueError(
                        f"method '{name}' declares option {spec.flag}, which {command.__name__} already has"
                    )
                flags.append(
                    inspect.Parameter(
                        spec.name,
                        inspect.Parameter.KEYWORD_ONLY,
                        annotation=spec.type,
                        default=typer.Option(
                            spec.default, help=f"{name}: {spec.help}", rich_help_panel="Method options"
                        ),
                    )
                )
        command.__signature__ = signature.replace(parameters=[*own, *flags])
        return command

    return decorate

"""Library errors name parameters; the CLI shows the flag the user typed for each."""

from __future__ import annotations

from pillar_cli.cli.boundary import flag_name
from pillar_cli.errors import UsageError, param


def test_library_errors_name_parameters_and_the_cli_names_flags():
    err = UsageError(
        f"{param('k_max')} 50 exceeds the rank",
        hint=f"pass {param('resume', True)} or {param('pretrained', False)}; check {param('epsilon')}",
    )
    assert str(err) == "k_max 50 exceeds the rank"
    assert err.render() == (
        "k_max 50 exceeds the rank",
        "pass resume=True or pretrained=False; check epsilon",
    )
    assert err.render(lambda name, value: flag_name(name, value, {})) == (
        "--k-max 50 exceeds the rank",
        "pass --resume or --no-pretrained; check --eps",
    )
    gsd_flags = {"epsilon": "--dp-eps"}
    assert err.render(lambda name, value: flag_name(name, value, gsd_flags))[1].endswith("check --dp-eps")

"""The `pillar` command and `python -m pillar_cli`. The command line's modules (typer, rich, the commands)
are imported inside `main`: an interrupt while they load is one line and exit 130, as it is once a command
runs (cli/boundary.py), not a traceback."""

from __future__ import annotations

import sys


def main() -> None:
    try:
        from pillar_cli.cli import main as run
    except KeyboardInterrupt:
        print("error: interrupted while starting; nothing was done", file=sys.stderr)
        raise SystemExit(130) from None
    run()


if __name__ == "__main__":
    main()

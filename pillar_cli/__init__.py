from pillar_cli.version import __version__

__all__ = ["__version__"]

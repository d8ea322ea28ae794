"""The package version, recorded in every artifact."""

__version__ = "0.1.0"

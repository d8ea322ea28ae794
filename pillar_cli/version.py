"""The package version, recorded in every artifact.

May import: nothing.
"""

__version__ = "0.1.0"

"""The program's name and the package version, recorded in every artifact.

May import: nothing.
"""

__version__ = "0.3.0"
PROGRAM = "pillar"  # the command's name (and of its cache directory)

"""Stand-in for trl in ain's sandbox (see ../README.md)."""

__version__ = "0.25.1+ain-standin"

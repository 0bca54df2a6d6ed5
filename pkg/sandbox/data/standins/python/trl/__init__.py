"""Stand-in for trl in ain's sandbox (pkg/sandbox/data/standins/README.md)."""

__version__ = "0.25.1"

"""Import-only stand-in for transformers in ain's sandbox (pkg/sandbox/data/standins/README.md)."""

__version__ = "4.57.1"

"""Import-only stand-in for peft in ain's sandbox (pkg/sandbox/data/standins/README.md)."""

__version__ = "0.17.1"

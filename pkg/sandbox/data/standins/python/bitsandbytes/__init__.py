"""Import-only stand-in for bitsandbytes in ain's sandbox (pkg/sandbox/data/standins/README.md)."""

__version__ = "0.49.2"

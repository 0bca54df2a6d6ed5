"""Import-only stand-in for bitsandbytes in ain's sandbox (see ../README.md)."""

__version__ = "0.49.2+ain-standin"

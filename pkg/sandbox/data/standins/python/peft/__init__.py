"""Import-only stand-in for peft in ain's sandbox (see ../README.md)."""

__version__ = "0.17.1+ain-standin"

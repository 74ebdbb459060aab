"""The version of hiddenstate (one place; ``hiddenstate.__version__`` re-exports it)."""

__version__ = "0.1.0"

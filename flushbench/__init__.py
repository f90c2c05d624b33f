"""flushbench core: the pieces every package shares (errors, units, paths)."""

__version__ = "0.1.0"

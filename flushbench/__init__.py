"""flushbench: its command line (``flushbench.cli``) and its version; the pieces every package
shares (errors, units, paths) live in ``core``."""

__version__ = "0.1.0"

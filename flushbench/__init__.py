"""flushbench: its command line (``flushbench.cli``) and its version; the pieces every package
shares (errors, units, paths, the version string itself: ``core.version``) live in ``core``."""

from core.version import VERSION as __version__

__all__ = ["__version__"]

"""flushbench's version: the one string every package reads (the command shows it, each run
records it with its code version). Kept equal to ``version`` in ``pyproject.toml``."""

VERSION = "0.1.0"

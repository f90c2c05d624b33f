"""The core every package shares: errors and their messages, units, paths, YAML input,
validation, server flavors, credential redaction, file checks, steady-state and latency
arithmetic, the clock and storage-limit records.

Core modules import nothing of ours outside ``core`` (tests/test_layers.py holds this), so
the runner, the analysis, the store and the command line can all use them.
"""

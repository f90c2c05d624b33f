"""Translation of logical knobs to server terms: per server flavor and version
(:mod:`.rules`, :mod:`.translate`), and what the sandbox refuses to let a raw variable touch
(:mod:`.ownership`). The knobs themselves (their table and typed models) are part of the
experiment model, :mod:`core.experiment.knob_table` and :mod:`core.experiment.knobs`."""

from runner.knobs.rules import (
    ALLOCATOR_LIB_DIRS,
    ALLOCATOR_LIBS,
    ALLOCATOR_PACKAGES,
    KNOB_RULES,
    REDO_LIMITS,
    allocator_library,
    family,
    raw_value_text,
)
from runner.knobs.translate import translate, translate_for_option_list, translate_partial

__all__ = [
    "ALLOCATOR_LIBS",
    "ALLOCATOR_LIB_DIRS",
    "ALLOCATOR_PACKAGES",
    "KNOB_RULES",
    "REDO_LIMITS",
    "allocator_library",
    "family",
    "raw_value_text",
    "translate",
    "translate_for_option_list",
    "translate_partial",
]

"""Logical knobs: declared once (:mod:`.table`), typed for experiment files (:mod:`.models`),
translated per server flavor and version (:mod:`.rules`, :mod:`.translate`)."""

from runner.knobs.models import Knobs, Matrix, RawScalar
from runner.knobs.rules import (
    ALLOCATOR_LIB_DIRS,
    ALLOCATOR_LIBS,
    ALLOCATOR_PACKAGES,
    REDO_LIMITS,
    Translation,
    allocator_library,
    family,
    raw_value_text,
)
from runner.knobs.table import KNOB_BY_NAME, KNOB_NAMES, KNOBS, SIZE_KNOBS, KnobDef
from runner.knobs.translate import translate, translate_for_option_list, translate_partial

__all__ = [
    "ALLOCATOR_LIBS",
    "ALLOCATOR_LIB_DIRS",
    "ALLOCATOR_PACKAGES",
    "KNOBS",
    "KNOB_BY_NAME",
    "KNOB_NAMES",
    "REDO_LIMITS",
    "SIZE_KNOBS",
    "KnobDef",
    "Knobs",
    "Matrix",
    "RawScalar",
    "Translation",
    "allocator_library",
    "family",
    "raw_value_text",
    "translate",
    "translate_for_option_list",
    "translate_partial",
]

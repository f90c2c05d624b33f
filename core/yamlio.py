"""Strict YAML reading: duplicate keys are errors, not silently "last one wins"."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from core.errors import ConfigError
from core.filecheck import check_input_file


class _StrictLoader(yaml.SafeLoader):
    """SafeLoader that refuses duplicate mapping keys (a classic copy-paste bug in matrices)."""


def _construct_mapping(loader: _StrictLoader, node: yaml.MappingNode, deep: bool = False) -> dict:
    seen: dict[Any, yaml.Node] = {}
    for key_node, _value in node.value:
        key = loader.construct_object(key_node, deep=deep)
        if not isinstance(key, (str, int, float, bool)) and key is not None:
            # `? [a, b]` makes a list a key: no flushbench key is one (and it cannot be hashed).
            raise yaml.constructor.ConstructorError(
                None, None, f"a key must be a plain name, not a {type(key).__name__}",
                key_node.start_mark)
        if key in seen:
            raise yaml.constructor.ConstructorError(
                None,
                None,
                f"duplicate key {key!r} (first at line {seen[key].start_mark.line + 1})",
                key_node.start_mark,
            )
        seen[key] = key_node
    return loader.construct_mapping(node, deep=deep)


_StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)


#: Experiment files and profiles are a few kilobytes; anything near this is not one.
MAX_FILE_BYTES = 1024 * 1024
#: Nesting deeper than this is no experiment file (and would be slow to validate).
MAX_DEPTH = 32
#: Nodes after alias expansion: refuses "billion laughs" files before building them.
MAX_NODES = 100_000


def read_text_file(path: Path, what: str = "file", max_bytes: int = MAX_FILE_BYTES) -> str:
    """The UTF-8 text of a small regular file; anything else is a :class:`ConfigError`.

    A FIFO, a device (``/dev/zero``), a directory or a file over ``max_bytes`` is refused
    without reading it; binary and non-UTF-8 content get a clear message.
    """
    check_input_file(path, what, max_bytes=max_bytes)
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise ConfigError(f"cannot read {what}: {exc.strerror}", where=str(path)) from None
    if b"\x00" in data:
        raise ConfigError(f"{what} is binary, not text", where=str(path),
                          fix="name a YAML or option file")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{what} is not UTF-8 text (byte 0x{data[exc.start]:02x} at offset"
                          f" {exc.start})", where=str(path), fix="save it as UTF-8") from None


def _check_shape(root: yaml.Node, path: Path) -> None:
    """Refuse documents too deep or too large once aliases are expanded — before building."""
    sizes: dict[int, int] = {}

    def walk(node: yaml.Node, depth: int) -> int:
        if depth > MAX_DEPTH:
            raise ConfigError(f"nesting deeper than {MAX_DEPTH} levels", where=f"{path}:"
                              f"{node.start_mark.line + 1}", fix="flatten the file")
        if id(node) in sizes:
            return sizes[id(node)]
        total = 1
        if isinstance(node, yaml.MappingNode):
            for key, value in node.value:
                total += walk(key, depth + 1) + walk(value, depth + 1)
        elif isinstance(node, yaml.SequenceNode):
            for item in node.value:
                total += walk(item, depth + 1)
        if total > MAX_NODES:
            raise ConfigError(f"the document expands to more than {MAX_NODES:,} values"
                              " (anchors and aliases included)", where=str(path),
                              fix="write the values out, or split the file")
        sizes[id(node)] = total
        return total

    walk(root, 0)


def read_yaml_mapping(path: Path) -> dict[str, Any]:
    """Read a YAML file that must hold a mapping; every problem becomes a :class:`ConfigError`."""
    text = read_text_file(path)
    try:
        loader = _StrictLoader(text)
        try:
            root = loader.get_single_node()
            if root is not None:
                _check_shape(root, path)
            data = loader.construct_document(root) if root is not None else None
        finally:
            loader.dispose()
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"{path}:{mark.line + 1}:{mark.column + 1}" if mark else str(path)
        problem = getattr(exc, "problem", None) or str(exc)
        raise ConfigError(f"invalid YAML: {problem}", where=where, fix="fix the syntax") from None
    except RecursionError:
        raise ConfigError(f"nesting deeper than {MAX_DEPTH} levels", where=str(path),
                          fix="flatten the file") from None
    if not isinstance(data, dict):
        raise ConfigError(
            f"expected a mapping at the top level, got {type(data).__name__}",
            where=str(path),
            fix="start the file with `version: 1`",
        )
    return data


#: What YAML (1.1, as PyYAML reads it) takes for a line break, besides ``\n`` and ``\r``.
_YAML_BREAKS = {"\x85": "\\x85", "\u2028": "\\u2028", "\u2029": "\\u2029"}


def comment_text(text: str) -> str:
    """``text`` safe inside a ``#`` comment: every control character and YAML line break
    escaped (``\\n``, ``\\x1b``), so a newline in a path cannot end the comment."""
    out = []
    for char in str(text):
        if char in _YAML_BREAKS:
            out.append(_YAML_BREAKS[char])
        elif ord(char) < 32 or ord(char) == 127:
            out.append(repr(char)[1:-1])
        else:
            out.append(char)
    return "".join(out)


def dump_yaml(data: dict[str, Any], comments: list[str] | tuple[str, ...] = ()) -> str:
    """The YAML text of a mapping, after ``comments`` as ``#`` lines (escaped by
    :func:`comment_text`): the one writer of the YAML files flushbench makes.

    The text is read back before it is returned: whatever the values hold (newlines, ``:``,
    ``#``, quotes), it must say exactly ``data`` and nothing else.

    Raises
    ------
    ValueError
        The text would not read back as ``data`` (a bug, never the user's input).
    """
    header = "".join(f"# {comment_text(line)}\n" for line in comments)
    text = header + yaml.safe_dump(data, sort_keys=False, allow_unicode=False)
    if yaml.safe_load(text) != data:
        raise ValueError("the YAML written does not read back as the data given")
    return text

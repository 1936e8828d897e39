"""A deployment file's YAML, kept as PyYAML's composed nodes so every key and value knows its line.

``Entry`` is one value with its dotted key (``sources.bids.format``) and line; its readers
(``mapping``, ``string``, ``choice``...) return plain values or raise a ``ConfigError`` written
``job.yaml:LINE: key 'sources.bids.format': expected one of [...], got 'jsn'``.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from darwin.config import yaml_node_problem, yaml_problem, yaml_value
from darwin.errors import ConfigError


def compose(path: Path) -> yaml.Node | None:
    """The document of ``path`` as nodes (SafeLoader: no tags that build Python objects)."""
    try:
        raw = path.read_bytes()
    except OSError as e:
        raise ConfigError(f"cannot read deployment file {str(path)!r}: {e.strerror}") from e
    try:
        return yaml.compose(raw, Loader=yaml.SafeLoader)
    except yaml.YAMLError as e:
        raise ConfigError(f"{path.name}: not valid YAML: {yaml_problem(e)}") from e


def plain(node: yaml.Node) -> Any:
    """The Python value of ``node`` (and its children), as ``yaml.safe_load`` would build it (check
    ``yaml_node_problem`` first: SafeLoader keeps the last of a key set twice, and refuses tags with
    errors that are not ``ConfigError``s)."""
    return yaml_value(node)


@dataclass(frozen=True)
class Entry:
    """A value of the file: its node, its dotted key and the line of that key."""

    file: str
    key: str
    node: yaml.Node
    line: int

    def error(self, problem: str, line: int | None = None) -> ConfigError:
        where = f"key {self.key!r}: " if self.key else ""
        return ConfigError(f"{self.file}:{line or self.line}: {where}{problem}")

    def value(self) -> Any:
        """The value as ``yaml.safe_load`` builds it, from plain YAML only: a tag that builds no plain value
        (``!!python/...``, ``!env``) or a key set twice inside it is an error naming its key and line."""
        self._check()
        try:
            return plain(self.node)
        except ConfigError as e:
            raise self.error(str(e)) from None

    def _check(self) -> None:
        problem = yaml_node_problem(self.node)
        if problem is not None:
            key, line, text = problem
            inner = f"{self.key}.{key}" if self.key and key and not key.startswith("[") else f"{self.key}{key}"
            raise Entry(self.file, inner, self.node, line).error(text)

    def _got(self) -> str:
        if isinstance(self.node, yaml.MappingNode):
            return "a mapping"
        if isinstance(self.node, yaml.SequenceNode):
            return "a list"
        return repr(self.value())

    def mapping(self, required: Iterable[str] = (), optional: Iterable[str] = ()) -> dict[str, Entry]:
        """The keys of a mapping; a key not in ``required`` or ``optional`` is an error, and so is a
        required key left out (named with this mapping's line). An empty ``optional`` and
        ``required`` take any key (a mapping of names)."""
        if not isinstance(self.node, yaml.MappingNode):
            raise self.error(f"expected a mapping, got {self._got()}")
        self._check()  # tags and keys set twice, down to the leaves, first by line
        known = [*required, *optional]
        out: dict[str, Entry] = {}
        for key_node, value_node in self.node.value:
            line = key_node.start_mark.line + 1
            name = Entry(self.file, self.key, key_node, line).value()
            if not isinstance(name, str) or not name:
                raise self.error(f"keys are names (strings), got {name!r}", line)
            child = Entry(self.file, f"{self.key}.{name}" if self.key else name, value_node, line)
            if known and name not in known:
                raise child.error(f"unknown key; known keys here: {sorted(known)}")
            if name in out:
                raise child.error(f"set twice (first on line {out[name].line})")
            out[name] = child
        missing = [k for k in required if k not in out]
        if missing:
            raise self.error(f"missing required key{'s' if len(missing) > 1 else ''} "
                             f"{', '.join(repr(m) for m in missing)}")
        return out

    def string(self) -> str:
        value = self.value()
        if not isinstance(value, str) or not value:
            raise self.error(f"expected a non-empty string, got {self._got()}")
        return value

    def choice(self, choices: Iterable[str]) -> str:
        options = list(choices)
        value = self.value() if isinstance(self.node, yaml.ScalarNode) else None
        if value not in options:
            raise self.error(f"expected one of {options}, got {self._got()}")
        assert isinstance(value, str)
        return value

    def integer(self, least: int = 0) -> int:
        value = self.value()
        if not isinstance(value, int) or isinstance(value, bool) or value < least:
            raise self.error(f"expected an integer >= {least}, got {self._got()}")
        return value

    def number(self) -> float:
        value = self.value()
        if not isinstance(value, (int, float)) or isinstance(value, bool) or not value > 0:
            raise self.error(f"expected a positive number, got {self._got()}")
        return float(value)

    def boolean(self) -> bool:
        value = self.value()
        if not isinstance(value, bool):
            raise self.error(f"expected true or false, got {self._got()}")
        return value

    def duration(self) -> str | int:
        """A duration as Darwin takes one ('10s', '500ms', or an integer of milliseconds)."""
        from darwin.durations import to_millis

        value = self.value()
        if isinstance(value, bool) or not isinstance(value, (str, int)):
            raise self.error(f"expected a duration such as '5s' or '500ms', got {self._got()}")
        try:
            to_millis(value, "duration")
        except (ConfigError, ValueError) as e:
            raise self.error(str(e)) from None
        return value

    def names(self) -> tuple[str, ...]:
        """One column name or a list of them."""
        value = self.value()
        names = (value,) if isinstance(value, str) else tuple(value) if isinstance(value, list) else None
        if not names or not all(isinstance(n, str) and n for n in names):
            raise self.error(f"expected a column name or a list of them, got {self._got()}")
        return names

    def string_map(self) -> dict[str, str]:
        """A mapping of settings, every value kept as its text (librdkafka and Spark settings)."""
        out = {}
        for name, entry in self.mapping().items():
            value = entry.value()
            if isinstance(value, (dict, list)) or value is None:
                raise entry.error(f"expected a scalar setting, got {entry._got()}")
            out[name] = str(value).lower() if isinstance(value, bool) else str(value)
        return out

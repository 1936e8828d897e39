"""Where in the SQL text a problem is: every ``SqlError`` names the line and column."""

from __future__ import annotations

from sqlglot import exp

from darwin.errors import SqlError


class Located:
    """The text being planned, to turn a node's character offset into a line and column."""

    def __init__(self, text: str) -> None:
        self.text = text

    def position(self, node: exp.Expr | None) -> tuple[int, int] | None:
        """(line, column), 1-based, of the earliest token of ``node`` the parser placed; for a node it
        placed none of (sqlglot keeps no position for TRUE, FALSE or a DATE literal), of the nearest
        enclosing node's."""
        while node is not None:
            starts = [n.meta["start"] for n in node.walk() if n.meta and "start" in n.meta]
            if starts:
                start = min(starts)
                return self.text.count("\n", 0, start) + 1, start - (self.text.rfind("\n", 0, start) + 1) + 1
            node = node.parent
        return None

    def at(self, offset: int) -> str:
        """"line L, column C" of the character at ``offset``."""
        line, column = self.text.count("\n", 0, offset) + 1, offset - (self.text.rfind("\n", 0, offset) + 1) + 1
        return f"line {line}, column {column}"

    def error_at(self, offset: int, message: str) -> SqlError:
        return SqlError(f"{self.at(offset)}: {message}")

    def error(self, node: exp.Expr | None, message: str) -> SqlError:
        where = self.position(node)
        return SqlError(f"line {where[0]}, column {where[1]}: {message}" if where else message)

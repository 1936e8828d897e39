"""SQL's SIMILAR TO as Flink reads it. Flink (SqlLikeUtils, copied from Calcite's Like.sqlToRegexSimilar)
turns the pattern into a Java regular expression that must match the whole value: ``_`` and ``.`` are one
character other than a line end (Java's ``.``), ``%`` any run, ``|``, ``*``, ``+``, ``?``, ``{m,n}``, ``(...)``
and ``[...]`` (with ``[:ALPHA:]`` and its kin) as in regular expressions, ``^`` the value's start, ``$`` and
``\\`` ordinary characters; ``ESCAPE`` makes the next special character literal.

``similar_regex`` parses the pattern into one regular expression that means the same in Python's ``re`` and
Java's ``java.util.regex``, so the compiled engine, the interpreter and Spark agree by construction. What Flink
refuses is refused here; what Flink hands to Java for Java to read in its own way (``(?``, a ``\\`` or ``&&``
inside brackets, a quantifier right after another, which Java reads as lazy or possessive) is refused too.
"""

from __future__ import annotations

from darwin.errors import DarwinTypeError

SPECIALS = "[]()|^-+*_%?{}"  # Flink's SQL_SIMILAR_SPECIALS: what an escape may precede
JAVA_INT_MAX = 2**31 - 1
ANY_ONE = "[^\\n\\r\\u0085\\u2028\\u2029]"  # Java's '.': any character but a line end
ANY_RUN = "(?s:.*)"
# Calcite's REG_CHAR_CLASSES, spelled as the ASCII ranges Java's \p{Alpha}, \d, \s ... are without flags
POSIX_CLASSES = {
    name: ranges
    for names, ranges in (
        (("[:ALPHA:]", "[:alpha:]"), "A-Za-z"), (("[:UPPER:]", "[:upper:]"), "A-Z"),
        (("[:LOWER:]", "[:lower:]"), "a-z"), (("[:DIGIT:]", "[:digit:]"), "0-9"),
        (("[:SPACE:]", "[:space:]"), " "), (("[:WHITESPACE:]", "[:whitespace:]"), "\\t\\n\\x0B\\f\\r "),
        (("[:ALNUM:]", "[:alnum:]"), "A-Za-z0-9"),
    )
    for name in names
}


def similar_regex(pattern: str, escape: str) -> str:
    """The regular expression (Python's and Java's alike) that matches what ``pattern`` does when it matches
    the whole value; ``escape`` is '' for none. A pattern Flink refuses, or one whose meaning Java would
    decide, raises DarwinTypeError naming the position."""
    return _Translator(pattern, escape).translate()


def literal(c: str) -> str:
    """One character as a regular expression of both flavours: ASCII punctuation behind a backslash (Java
    and Python read a backslash before any of it as the character itself), anything else as it is."""
    return "\\" + c if c.isascii() and not c.isalnum() and c.isprintable() and c != " " else c


class _Translator:
    def __init__(self, pattern: str, escape: str) -> None:
        self.pattern, self.escape = pattern, escape
        self.i = 0
        self.out: list[str] = []
        self.open_groups = 0
        self.repeatable = False  # whether what came last can take a quantifier
        self.quantified = False  # whether what came last is a quantifier

    def fail(self, problem: str, at: int | None = None) -> DarwinTypeError:
        where = self.i if at is None else at
        return DarwinTypeError(f"SIMILAR TO pattern {self.pattern!r}: {problem} at position {where + 1}")

    def translate(self) -> str:
        self._check_escapes()
        while self.i < len(self.pattern):
            c = self.pattern[self.i]
            if self.escape and c == self.escape:
                self._add(literal(self._escaped()), repeatable=True)
            elif c == "[":
                self._add(self._brackets(), repeatable=True)
            elif c in "*+?{":
                self._quantifier(c)
            elif c == "(":
                self.open_groups += 1
                self._add("(?:", repeatable=False, step=1)
            elif c == ")":
                if not self.open_groups:
                    raise self.fail("')' closes no '('")
                self.open_groups -= 1
                self._add(")", repeatable=True, step=1)
            elif c in "|^":
                self._add(c, repeatable=False, step=1)
            elif c == "]":
                raise self.fail("']' without '['; escape it to match it")
            else:
                piece = ANY_ONE if c in "_." else ANY_RUN if c == "%" else literal(c)
                self._add(piece, repeatable=True, step=1)
        if self.open_groups:
            raise self.fail("a '(' is left open")
        return "".join(self.out)

    def _add(self, piece: str, repeatable: bool, step: int = 0) -> None:
        self.out.append(piece)
        self.i += step
        self.repeatable, self.quantified = repeatable, False

    def _check_escapes(self) -> None:
        """Flink's similarEscapeRuleChecking: an escape that is itself special must precede a special
        character at each of its occurrences (read one by one, not in pairs), and ':' as the escape needs a
        '[:' class and a ':]' in the pattern."""
        p, e = self.pattern, self.escape
        if e and e in SPECIALS:
            for j, c in enumerate(p):
                if c == e and (j + 1 == len(p) or p[j + 1] not in SPECIALS):
                    raise self.fail(f"the escape {e!r} must be followed by one of {SPECIALS}", j)
        if e == ":" and ("[:" not in p or ":]" not in p):
            raise self.fail("the escape ':' needs a [:...:] class in the pattern, as Flink requires", 0)

    def _escaped(self) -> str:
        """The character the escape at ``i`` makes literal; ``i`` moves past both."""
        nxt = self.pattern[self.i + 1:self.i + 2]
        if not nxt or (nxt not in SPECIALS and nxt != self.escape):
            raise self.fail(f"the escape {self.escape!r} must be followed by one of {SPECIALS} or itself")
        if nxt == self.escape and nxt in "$.\\":  # Flink hands the doubled escape to Java as it is
            raise self.fail(f"a doubled escape {nxt!r} is an operator in the Java regular expression Flink "
                            "makes of it; choose another escape")
        self.i += 2
        return nxt

    def _quantifier(self, c: str) -> None:
        if self.quantified:
            raise self.fail(f"{c!r} right after a quantifier (Java would read it as lazy or possessive)")
        if not self.repeatable:
            raise self.fail(f"{c!r} follows nothing it could repeat; escape it to match it")
        start = self.i
        if c == "{":
            end = self.pattern.find("}", start)
            counts = self.pattern[start + 1:end].split(",") if end > 0 else []
            if not 1 <= len(counts) <= 2 or not _digits(counts[0]) or not all(_digits(x) for x in counts[1:] if x):
                raise self.fail("'{' must start a count {m}, {m,} or {m,n}")
            numbers = [int(x) for x in counts if x]
            if max(numbers) > JAVA_INT_MAX or numbers != sorted(numbers):
                raise self.fail(f"the count {self.pattern[start:end + 1]} must have m <= n <= {JAVA_INT_MAX}")
            self.i = end + 1
            self.out.append("{" + ",".join(str(int(x)) if x else "" for x in counts) + "}")
        else:
            self.i += 1
            self.out.append(c)
        self.repeatable, self.quantified = False, True

    def _brackets(self) -> str:
        """A ``[...]`` at ``i`` as a character class; ``i`` moves past its ']'."""
        opened = self.i
        self.i += 1
        negated = self.pattern[self.i:self.i + 1] == "^"
        self.i += negated
        items: list[tuple[str, str]] = []  # ('char', c), ('dash', '-') or ('class', ranges)
        while True:
            if self.i >= len(self.pattern):
                raise self.fail("a '[' is left open", opened)
            c = self.pattern[self.i]
            if c == "]":
                break
            items.append(self._bracket_item(c))
        if not items:
            raise self.fail("empty brackets match nothing", opened)
        body = self._class_body(items, opened)
        self.i += 1
        return "[" + "^" * negated + body + "]"

    def _bracket_item(self, c: str) -> tuple[str, str]:
        if self.escape and c == self.escape:
            return "char", self._escaped()
        if c == "-":
            self.i += 1
            return "dash", c
        if c == "^":  # not first: an ordinary character, in Java too
            self.i += 1
            return "char", c
        if c == "[":
            name = next((n for n in POSIX_CLASSES if self.pattern.startswith(n, self.i)), None)
            if name is None:
                raise self.fail("'[' inside brackets must start one of " + ", ".join(POSIX_CLASSES))
            self.i += len(name)
            return "class", POSIX_CLASSES[name]
        if c in SPECIALS:
            raise self.fail(f"{c!r} inside brackets (Flink refuses it); escape it to match it")
        if c == "\\" or self.pattern.startswith("&&", self.i):
            raise self.fail(f"{c!r} inside brackets, which Java reads as an operator (Flink hands it on); "
                            "write it outside brackets")
        self.i += 1
        return "char", c

    def _class_body(self, items: list[tuple[str, str]], opened: int) -> str:
        """The inside of a character class: a '-' between two characters is a range, first or last it is itself."""
        out = []
        k = 0
        while k < len(items):
            kind, c = items[k]
            if kind == "char" and k + 2 < len(items) and items[k + 1][0] == "dash" and items[k + 2][0] == "char":
                high = items[k + 2][1]
                if high < c:
                    raise self.fail(f"the range {c}-{high} runs backwards", opened)
                out.append(literal(c) + "-" + literal(high))
                k += 3
                continue
            if kind == "dash" and 0 < k < len(items) - 1:
                raise self.fail("a '-' inside brackets must be between two characters, or first or last", opened)
            out.append(c if kind == "class" else literal(c))
            k += 1
        return "".join(out)


def _digits(text: str) -> bool:
    return text.isascii() and text.isdigit()

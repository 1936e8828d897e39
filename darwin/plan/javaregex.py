"""Java regular expressions read by Python's ``re``. Flink's REGEXP, REGEXP_REPLACE and REGEXP_EXTRACT hand
their pattern to ``java.util.regex`` with no flags: ``\\d \\w \\s`` and ``(?i)`` are ASCII, ``.``, ``^`` and ``$``
end lines at ``\\n``, ``\\r``, ``\\r\\n``, U+0085, U+2028 and U+2029, and the syntax has things Python lacks
(``\\p{Alpha}``, ``\\Q...\\E``, ``[a-z&&[^e]]``, ``\\h``, ``\\z``) or reads otherwise (``\\Z``, ``\\v``, ``(?P<``).

``translate`` parses a pattern as Java does and writes a Python pattern of the same meaning out of explicit
pieces: every character class becomes the set of code points Java's would match (so nesting, intersections,
negation and ``(?i)`` are settled here, not by Python), every line anchor a lookaround over Java's line ends.
What cannot be written so that both mean the same raises ``UnsupportedRegex`` naming the construct and where
it is: Java's Unicode properties (``\\p{L}``; the two Unicode tables differ), ``\\b`` (Java 11-18 take any
Unicode letter as a word character, 19 on only ``\\w``'s), the flags ``(?U) (?u) (?d) (?x)``, the escapes in
``REFUSED_ESCAPES``, and groups Java and Python set differently (a capturing group in a repetition that may match
nothing, a possessive one, an atomic group or a look-around). A pattern Java refuses is refused too, so no pattern
means two things on Darwin's engines and Spark's.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

LINE_ENDS = "\n\r\u0085\u2028\u2029"
MAX_CODE_POINT = 0x10FFFF
JAVA_INT_MAX = 2**31 - 1
Ranges = tuple[tuple[int, int], ...]  # sorted, disjoint, not touching: a set of code points


class UnsupportedRegex(ValueError):
    """A pattern Java refuses, or whose meaning Python's re cannot be made to share exactly."""

    def __init__(self, pattern: str, position: int, problem: str) -> None:
        super().__init__(f"{problem} at position {position + 1} of {pattern!r}")
        self.position, self.problem = position, problem


@dataclass(frozen=True)
class JavaRegex:
    python: str  # the same pattern in Python's syntax, to be compiled with re.ASCII
    groups: int  # capturing groups, as Java's Matcher.groupCount()


@dataclass(frozen=True)
class Part:
    """Python text for a piece of the pattern, and what the reader must know of it to accept a quantifier after it."""
    text: str
    repeatable: bool  # matches characters (a quantifier after an anchor or a look-around is refused)
    nullable: bool  # may match the empty string
    captures: bool  # holds a capturing group
    unbounded: bool = False  # holds a repetition without a greatest count (* + {n,})


def char_part(text: str) -> Part:
    return Part(text, True, False, False)


def anchor_part(text: str) -> Part:
    return Part(text, False, True, False)


def ranges(*pairs: tuple[int, int]) -> Ranges:
    """The union of closed intervals, normalised."""
    out: list[tuple[int, int]] = []
    for lo, hi in sorted(p for p in pairs if p[0] <= p[1]):
        if out and lo <= out[-1][1] + 1:
            out[-1] = (out[-1][0], max(out[-1][1], hi))
        else:
            out.append((lo, hi))
    return tuple(out)


def chars(text: str) -> Ranges:
    return ranges(*((ord(c), ord(c)) for c in text))


def union(a: Ranges, b: Ranges) -> Ranges:
    return ranges(*a, *b)


def complement(a: Ranges) -> Ranges:
    out, start = [], 0
    for lo, hi in a:
        out.append((start, lo - 1))
        start = hi + 1
    out.append((start, MAX_CODE_POINT))
    return ranges(*out)


def intersect(a: Ranges, b: Ranges) -> Ranges:
    return complement(union(complement(a), complement(b)))


def ascii_case_closed(a: Ranges) -> Ranges:
    """``a`` with the other case of each ASCII letter in it: Java's (?i) without UNICODE_CASE."""
    extra = [(max(lo, c0) + d, min(hi, c1) + d) for lo, hi in a
             for c0, c1, d in ((65, 90, 32), (97, 122, -32))]
    return ranges(*a, *extra)


# Java's classes without UNICODE_CHARACTER_CLASS (java.util.regex.Pattern's documentation)
DIGIT = ranges((48, 57))
LOWER, UPPER = ranges((97, 122)), ranges((65, 90))
ALPHA = union(LOWER, UPPER)
ALNUM = union(ALPHA, DIGIT)
WORD = union(ALNUM, chars("_"))
SPACE = chars(" \t\n\x0b\f\r")
PUNCT = chars("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~")
GRAPH = union(ALNUM, PUNCT)
HORIZONTAL = union(chars(" \t\xa0\u1680\u180e\u202f\u205f\u3000"), ranges((0x2000, 0x200A)))
VERTICAL = chars("\n\x0b\f\r\x85\u2028\u2029")
POSIX = {"Lower": LOWER, "Upper": UPPER, "ASCII": ranges((0, 127)), "Alpha": ALPHA, "Digit": DIGIT,
         "Alnum": ALNUM, "Punct": PUNCT, "Graph": GRAPH, "Print": union(GRAPH, chars(" ")),
         "Blank": chars(" \t"), "Cntrl": ranges((0, 31), (127, 127)), "XDigit": union(DIGIT, chars("abcdefABCDEF")),
         "Space": SPACE}
PREDEFINED = {"d": DIGIT, "w": WORD, "s": SPACE, "h": HORIZONTAL, "v": VERTICAL}
CONTROL_ESCAPES = {"t": 9, "n": 10, "r": 13, "f": 12, "a": 7, "e": 27}
ANCHORS = {  # Java's line anchors (Pattern's Begin, Caret, Dollar), spelled with Python's \A, \Z
    "^": "\\A",
    "^m": "(?:(?<![^\\n\\r\\x85\\u2028\\u2029])(?<!\\r(?=\\n))(?!\\Z))",
    "$": "(?:(?=(?:\\r\\n|[\\n\\r\\x85\\u2028\\u2029])?\\Z)(?!(?<=\\r)\\n))",
    "$m": "(?:(?=[\\n\\r\\x85\\u2028\\u2029]|\\Z)(?!(?<=\\r)\\n))",
}
REFUSED_ESCAPES = {
    "b": "\\b (a word boundary: Java 11 to 18 count every Unicode letter and digit as a word character, Java 19 "
         "on only \\w's; write (?:(?<=\\w)(?!\\w)|(?<!\\w)(?=\\w)) for the ASCII one)",
    "B": "\\B (Java's word characters depend on its version, as \\b's; write (?:(?<=\\w)(?=\\w)|(?<!\\w)(?!\\w)))",
    "G": "\\G (the end of the previous match)", "R": "\\R (any line break)", "X": "\\X (a grapheme cluster)",
    "N": "\\N{name} (a character by its Unicode name)",
}


@lru_cache(maxsize=256)
def translate(pattern: str) -> JavaRegex:
    """``pattern`` as Java reads it, written for Python's re (compile it with re.ASCII); UnsupportedRegex if Java
    refuses it or its meaning cannot be written exactly."""
    reader = _Reader(pattern)
    python = reader.alternation().text
    if reader.i < len(pattern):  # only a ')' stops the top level early
        raise reader.fail("an unmatched ')'")
    try:
        re.compile(python, re.ASCII)
    except (re.error, OverflowError, RecursionError) as e:  # a look-behind of no fixed width (Java's may vary)
        raise UnsupportedRegex(pattern, 0, f"a pattern Python's re cannot read as Java does ({e})") from None
    return JavaRegex(python, reader.groups)


@lru_cache(maxsize=256)
def java_regex(pattern: str) -> re.Pattern[str]:
    """The compiled Python pattern that matches what Java's does."""
    return re.compile(translate(pattern).python, re.ASCII)


def class_text(a: Ranges) -> str:
    """A Python regular expression matching one code point of ``a``."""
    if not a:
        return "(?!)"
    if a == ((0, MAX_CODE_POINT),):
        return "(?s:.)"
    return "[" + "".join(f"\\U{lo:08x}" if lo == hi else f"\\U{lo:08x}-\\U{hi:08x}" for lo, hi in a) + "]"


def literal_text(c: int, ignore_case: bool) -> str:
    if ignore_case and chr(c).isascii() and chr(c).isalpha():
        return class_text(ascii_case_closed(((c, c),)))
    return re.escape(chr(c))


class _Reader:
    """A recursive-descent reader of Java's syntax (Pattern.expr, sequence, closure, clazz, escape) writing
    Python's. Flags (i, m, s) are its own state, as in Java: set by (?i), kept to the end of the enclosing group."""

    def __init__(self, pattern: str) -> None:
        self.pattern = pattern
        self.i = 0
        self.flags: frozenset[str] = frozenset()
        self.groups = 0
        self.closed: set[int] = set()  # capturing groups already closed: a back reference may name them
        self.names: dict[str, int] = {}

    def fail(self, problem: str, at: int | None = None) -> UnsupportedRegex:
        return UnsupportedRegex(self.pattern, self.i if at is None else at, problem)

    def peek(self, ahead: int = 0) -> str:
        j = self.i + ahead
        return self.pattern[j] if j < len(self.pattern) else ""

    def take(self) -> str:
        if self.i >= len(self.pattern):
            raise self.fail("an unexpected end of the pattern")
        c = self.pattern[self.i]
        self.i += 1
        return c

    # --- structure -------------------------------------------------------------------------------------

    def alternation(self) -> Part:
        branches = [self.sequence()]
        while self.peek() == "|":
            self.i += 1
            branches.append(self.sequence())
        return Part("|".join(b.text for b in branches), True, any(b.nullable for b in branches),
                    any(b.captures for b in branches), any(b.unbounded for b in branches))

    def sequence(self) -> Part:
        out: list[Part] = []
        while self.peek() not in ("", "|", ")"):
            start = self.i
            parts = self.atom()
            if self.peek() in ("*", "+", "?", "{"):
                at = self.i
                if not parts:
                    raise self.fail("a quantifier after \\Q\\E or nothing")
                last = parts[-1]
                if not last.repeatable:
                    raise self.fail(f"a quantifier after {self.pattern[start:self.i]!r}, which matches no character")
                text, low, high, possessive = self.quantifier()
                if last.captures and (last.nullable or possessive):
                    raise self.fail("a capturing group in a repetition that may match nothing or is possessive "
                                    "(Java and Python's re leave different groups set there)", at)
                parts[-1] = Part("(?:" + last.text + ")" + text, True, low == 0 or last.nullable, last.captures,
                                 high is None or last.unbounded)
                if self.peek() in ("*", "+", "?", "{"):
                    raise self.fail("a quantifier after a quantifier")
            out.extend(parts)
        return Part("".join(p.text for p in out), True, all(p.nullable for p in out), any(p.captures for p in out),
                    any(p.unbounded for p in out))

    def quantifier(self) -> tuple[str, int, int | None, bool]:
        """The quantifier's Python text, its least and greatest counts and whether it is possessive."""
        c = self.take()
        low, high = (1 if c == "+" else 0), (1 if c == "?" else None)
        if c == "{":
            at = self.i - 1
            low = self.number(at)
            high = low
            if self.peek() == ",":
                self.i += 1
                high = self.number(at) if self.peek().isdigit() else None
            if self.peek() != "}":
                raise self.fail("a repetition that is not {n}, {n,} or {n,m}", at)
            self.i += 1
            if high is not None and high < low:
                raise self.fail("a repetition {n,m} with m < n", at)
            c = f"{{{low},{'' if high is None else high}}}"
        if self.peek() in ("?", "+"):  # lazy or possessive, as Python 3.11 reads them too
            c += self.take()
        return c, low, high, c.endswith("+") and len(c) > 1

    def number(self, at: int) -> int:
        start = self.i
        while self.peek().isascii() and self.peek().isdigit():
            self.i += 1
        if start == self.i or int(self.pattern[start:self.i]) > JAVA_INT_MAX:
            raise self.fail("a repetition that is not {n}, {n,} or {n,m} with n, m at most 2^31-1", at)
        return int(self.pattern[start:self.i])

    def atom(self) -> list[Part]:
        """The next atom (several for \\Q...\\E, whose last character a quantifier takes; none for (?i))."""
        c = self.peek()
        if c == "(":
            return self.group()
        if c == "[":
            self.i += 1
            return [char_part(class_text(self.char_class()))]
        if c in ("*", "+", "?", "{"):
            raise self.fail(f"a quantifier {c!r} after nothing")
        self.i += 1
        if c == ".":
            return [char_part("(?s:.)" if "s" in self.flags else class_text(complement(chars(LINE_ENDS))))]
        if c in ("^", "$"):
            return [anchor_part(ANCHORS[c + ("m" if "m" in self.flags else "")])]
        if c == "\\":
            return self.escape()
        return [char_part(literal_text(ord(c), "i" in self.flags))]

    def group(self) -> list[Part]:
        at = self.i
        self.i += 1
        saved = self.flags
        head, capture = "(?:", 0
        if self.peek() == "?":
            self.i += 1
            c = self.take()
            if c == "<" and self.peek() in ("=", "!"):
                head = "(?<" + self.take()
            elif c in ("=", "!", ">"):
                head = "(?" + c
            elif c == ":":
                pass
            elif c == "<":
                name = self.group_name(at)
                self.groups += 1
                capture = self.groups
                self.names[name] = capture
                head = f"(?P<{name}>"
            elif c in "imsduxU-":
                self.i -= 1
                if self.inline_flags(at):  # (?i) alone: the flags hold to the end of the enclosing group
                    return []
            elif c == "P":
                raise self.fail("(?P...) (Python's named groups; Java writes (?<name>...) and \\k<name>)", at)
            elif c == "#":
                raise self.fail("(?#...) (a Python comment; Java has none)", at)
            else:
                raise self.fail(f"an unknown group (?{c}", at)
        else:
            self.groups += 1
            capture = self.groups
            head = "("
        body = self.alternation()
        if self.peek() != ")":
            raise self.fail("an unclosed group", at)
        self.i += 1
        self.flags = saved
        if capture:
            self.closed.add(capture)
        if body.captures and head in ("(?>", "(?=", "(?!", "(?<=", "(?<!"):
            raise self.fail("a capturing group in an atomic group or a look-around (Java keeps what it captured in an "
                            "attempt that failed)", at)
        if body.unbounded and head in ("(?<=", "(?<!"):
            raise self.fail("a look-behind without a greatest length, which Java refuses", at)
        around = head in ("(?=", "(?!", "(?<=", "(?<!")
        return [Part(head + body.text + ")", not around, around or body.nullable, bool(capture) or body.captures,
                     body.unbounded)]

    def group_name(self, at: int) -> str:
        start = self.i
        while self.peek().isascii() and self.peek().isalnum():
            self.i += 1
        name = self.pattern[start:self.i]
        if not name or not name[0].isalpha() or self.peek() != ">":
            raise self.fail("a group name that is not a letter and letters or digits in <...>", at)
        if name in self.names:
            raise self.fail(f"a second group named {name!r}", at)
        self.i += 1
        return name

    def inline_flags(self, at: int) -> bool:
        """Reads (?flags) or (?flags: up to its ')' or ':'; True for (?flags), which has no body."""
        on = True
        flags = set(self.flags)
        while (c := self.take()) not in (")", ":"):
            if c == "-":
                on = False
            elif c in "ims":
                (flags.add if on else flags.discard)(c)
            elif c in "duxU":
                what = {"d": "UNIX_LINES", "u": "UNICODE_CASE", "x": "COMMENTS",
                        "U": "UNICODE_CHARACTER_CLASS"}[c]
                raise self.fail(f"the flag (?{c}) ({what}), which Python's re cannot read as Java does", at)
            else:
                raise self.fail(f"an unknown flag {c!r}", self.i - 1)
        if c == ")":
            self.flags = frozenset(flags)
            return True
        self.flags = frozenset(flags)  # for the body of (?flags:...); group() restores them after it
        return False

    # --- escapes ---------------------------------------------------------------------------------------

    def escape(self) -> list[Part]:
        """After a backslash outside a class."""
        at = self.i - 1
        c = self.take() if self.i < len(self.pattern) else ""
        if not c:
            raise self.fail("a backslash at the end", at)
        ignore_case = "i" in self.flags
        if c == "Q":
            end = self.pattern.find("\\E", self.i)
            text = self.pattern[self.i:] if end < 0 else self.pattern[self.i:end]
            self.i = len(self.pattern) if end < 0 else end + 2
            return [char_part(literal_text(ord(x), ignore_case)) for x in text]
        if c in "123456789":
            return [Part(self.back_reference(int(c), at), True, True, False)]
        if c == "k":
            if self.take() != "<":
                raise self.fail("\\k without <name>", at)
            start = self.i
            end = self.pattern.find(">", start)
            name = self.pattern[start:end] if end >= 0 else ""
            if name not in self.names or self.names[name] not in self.closed:
                raise self.fail(f"\\k<{name}>, a group not closed before it", at)
            self.i = end + 1
            return [Part(f"(?{'i' if ignore_case else ''}:(?P={name}))", True, True, False)]
        if c == "A":
            return [anchor_part("\\A")]
        if c == "z":
            return [anchor_part("\\Z")]
        if c == "Z":  # Java's \Z is $ without MULTILINE; Python's is the very end (Java's \z)
            return [anchor_part(ANCHORS["$"])]
        if c in REFUSED_ESCAPES:
            raise self.fail(REFUSED_ESCAPES[c], at)
        return [char_part(class_text(self.class_escape(c, at)))]

    def back_reference(self, number: int, at: int) -> str:
        """Java's \\n: more digits while they name a group opened so far (Pattern.ref)."""
        while self.peek().isascii() and self.peek().isdigit() and number * 10 + int(self.peek()) <= self.groups:
            number = number * 10 + int(self.take())
        if number not in self.closed:
            raise self.fail(f"\\{number}, a group not closed before it", at)
        return f"(?{'i' if 'i' in self.flags else ''}:\\{number})"

    def class_escape(self, c: str, at: int) -> Ranges:
        """The code points of an escape that stands for characters: \\d and its kin, \\p{...}, or one character."""
        if c.lower() in PREDEFINED:
            found = PREDEFINED[c.lower()]
            return complement(found) if c.isupper() else found
        if c in ("p", "P"):
            return self.property(c == "P", at)
        code = self.character_escape(c, at)
        return ascii_case_closed(((code, code),)) if "i" in self.flags else ((code, code),)

    def property(self, negated: bool, at: int) -> Ranges:
        if self.peek() == "{":
            end = self.pattern.find("}", self.i)
            if end < 0:
                raise self.fail("an unclosed \\p{", at)
            name = self.pattern[self.i + 1:end]
            self.i = end + 1
        else:
            name = self.take()
        if name not in POSIX:
            raise self.fail(f"\\p{{{name}}} (a Unicode property or script: Java's tables and Python's differ; "
                            f"Darwin takes the ASCII classes {', '.join(POSIX)})", at)
        if name in ("Lower", "Upper") and "i" in self.flags:
            raise self.fail(f"\\p{{{name}}} under (?i) (Java 16 on takes both cases, Java 11 one)", at)
        found = POSIX[name]
        return complement(found) if negated else found

    def character_escape(self, c: str, at: int) -> int:
        """The code point of a one-character escape (\\t, \\x41, \\u00e9, \\0101, \\cA, \\.), as Java's escape()."""
        if c in CONTROL_ESCAPES:
            return CONTROL_ESCAPES[c]
        if c == "0":
            digits = ""
            while len(digits) < 3 and self.peek() in tuple("01234567") and self.peek():
                if len(digits) == 2 and digits[0] > "3":
                    break
                digits += self.take()
            if not digits:
                raise self.fail("\\0 without octal digits", at)
            return int(digits, 8)
        if c == "x":
            if self.peek() == "{":
                end = self.pattern.find("}", self.i)
                code = self.hex_code(self.pattern[self.i + 1:end] if end > 0 else "", at)
                self.i = end + 1
            else:
                code = self.hex_code(self.pattern[self.i:self.i + 2], at, width=2)
                self.i += 2
            return self.not_surrogate(code, at)
        if c == "u":
            code = self.hex_code(self.pattern[self.i:self.i + 4], at, width=4)
            self.i += 4
            if 0xD800 <= code <= 0xDBFF and self.pattern.startswith("\\u", self.i):
                low = self.hex_code(self.pattern[self.i + 2:self.i + 6], at, width=4)
                if 0xDC00 <= low <= 0xDFFF:
                    self.i += 6
                    return 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00)
            return self.not_surrogate(code, at)
        if c == "c":
            return ord(self.take()) ^ 64
        if c.isascii() and c.isalnum():
            raise self.fail(f"\\{c}, an escape Java does not have", at)
        return ord(c)

    def hex_code(self, text: str, at: int, width: int = 0) -> int:
        if not text or (width and len(text) != width) or any(x not in "0123456789abcdefABCDEF" for x in text):
            raise self.fail("a hexadecimal escape without its digits", at)
        if int(text, 16) > MAX_CODE_POINT:
            raise self.fail("a code point past U+10FFFF", at)
        return int(text, 16)

    def not_surrogate(self, code: int, at: int) -> int:
        if 0xD800 <= code <= 0xDFFF:
            raise self.fail("a surrogate code point on its own, which no string holds", at)
        return code

    # --- classes ---------------------------------------------------------------------------------------

    def char_class(self) -> Ranges:
        """After '[': the code points of the class up to its ']' (Pattern.clazz, Java 9 on): items are united,
        '&&' intersects what is before it with what is after, and a '^' first negates the whole."""
        at = self.i - 1
        negated = self.peek() == "^"
        if negated:
            self.i += 1
        operands: list[Ranges] = []
        current: Ranges | None = None
        while True:
            c = self.peek()
            if not c:
                raise self.fail("an unclosed character class", at)
            if c == "]" and current is not None:
                self.i += 1
                break
            if c == "]" and operands:
                raise self.fail("'&&' with nothing after it", self.i)
            if c == "&" and self.peek(1) == "&":
                if current is None:
                    raise self.fail("'&&' with nothing before it", self.i)
                operands.append(current)
                current = None
                self.i += 2
                continue
            item = self.class_item()
            current = item if current is None else union(current, item)
        found = current
        for operand in operands:
            found = intersect(operand, found)
        return complement(found) if negated else found

    def class_item(self) -> Ranges:
        at = self.i
        c = self.take()
        if c == "[":
            return self.char_class()
        if c == "\\":
            e = self.take() if self.i < len(self.pattern) else ""
            if not e:
                raise self.fail("a backslash at the end", at)
            if e == "Q":
                raise self.fail("\\Q...\\E inside a character class (write the characters escaped)", at)
            if e.lower() in PREDEFINED or e in ("p", "P"):
                return self.class_escape(e, at)
            if e in "123456789" or e in "bBAzZGRXNk":
                raise self.fail(f"\\{e} inside a character class, which Java refuses", at)
            start = self.character_escape(e, at)
        else:
            start = ord(c)
        if self.peek() == "-" and self.peek(1) not in ("]", "[", ""):
            self.i += 1
            end_at = self.i
            e = self.take()
            if e == "\\":
                x = self.take() if self.i < len(self.pattern) else ""
                if not x or x.lower() in PREDEFINED or x in "pPQ" or (x.isascii() and x.isalpha()
                                                                      and x not in CONTROL_ESCAPES and x not in "xuc"):
                    raise self.fail("a range that does not end at a character", end_at)
                end = self.character_escape(x, end_at)
            else:
                end = ord(e)
            if end < start:
                raise self.fail("a range whose end is before its start", at)
            found: Ranges = ((start, end),)
        else:
            found = ((start, start),)
        return ascii_case_closed(found) if "i" in self.flags else found

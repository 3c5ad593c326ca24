"""Find regexes that backtrack catastrophically, before they ship (``patterns check``).

A backtracking regex engine tries every way a string can be split between quantifiers. Two
shapes make that explode on a line built for it (a run of spaces, a long token):

* **nested quantifiers over the same characters**: ``(\\w+\\s?)+``, ``(a+)+`` - a repeated group
  whose body can match a run in more than one way: exponential in the run's length;
* **adjacent quantifiers over the same characters**, with only optional items between them:
  `` * +`` (a padded field before a separator), `` +\\S* +`` (an empty ``${PID}`` between two
  separators) - each split of a run between them is tried: quadratic per start position, cubic
  for a search, and never needed (one repeat matches the same). Spring Boot's start-line regex
  had both; a file of padded lines took minutes.

A third shape is slow only on a line that holds many records (an HTML report of an earlier run,
a log whose line ends were lost), and is everywhere such a line is read:

* **stacked free repeats**: two or more unbounded repeats of any character (``.*``, ``.+?``,
  ``[\\s\\S]*?``) on one path through the regex, a later one followed by an item that must
  match: ``group (?P<group>.+?) in state .* \\(reason: (?P<reason>.*)\\)$``. When the end fails,
  each repeat is tried at every place its terminator occurs, and the terminators occur once per
  record: quadratic per start position, cubic for a search (100 records on a line: over 10 s).
  Only one free repeat may stay free; seal each earlier one with the text that ends it in an
  atomic group (``(?>(?P<group>.+?) in state )``: the value runs to the first terminator), or
  make it a class that cannot run past its terminator (``[^()]*``).

Repeats of *overlapping* but different characters (``(?P<msg>.*?) +\\(``) can also be slow on a
long run of the shared characters; they are everywhere in the packs and are bounded by the
timeout every pattern and layout regex runs with (``regex_guard``), which counts when it fires.

The check is static: it parses the regex (Python's own regex parser, which reads the syntax the
packs and layouts use), works out which characters each item can match over a representative
alphabet, and reports the first offending shape with the text around it. Possessive quantifiers
and atomic groups never backtrack, so they are fine.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

try:  # Python 3.11+
    import re._constants as _c
    import re._parser as _parser
except ImportError:  # pragma: no cover - Python 3.10
    import sre_constants as _c  # type: ignore[no-redef]
    import sre_parse as _parser  # type: ignore[no-redef]

# One character of every kind a log line holds: what "can match the same characters" is
# decided on.
ALPHABET = frozenset("\t\n\r !\"#$%&'()*+,-./0123456789:;<=>?@ABCXYZ[\\]^_`abcxyz{|}~\u00a0\u00e9\u4e2d")
# What a "free" repeat matches: every character of a line (``.``; ``[\s\S]`` and ``(?s).`` also cross lines).
_ANY_IN_LINE = ALPHABET - {"\n", "\r"}
_UNBOUNDED = _c.MAXREPEAT
_REPEATS = (_c.MAX_REPEAT, _c.MIN_REPEAT)
_POSSESSIVE = getattr(_c, "POSSESSIVE_REPEAT", None)
_ATOMIC = getattr(_c, "ATOMIC_GROUP", None)
_CATEGORIES = {
    _c.CATEGORY_DIGIT: r"\d", _c.CATEGORY_NOT_DIGIT: r"\D", _c.CATEGORY_SPACE: r"\s",
    _c.CATEGORY_NOT_SPACE: r"\S", _c.CATEGORY_WORD: r"\w", _c.CATEGORY_NOT_WORD: r"\W",
    _c.CATEGORY_LINEBREAK: r"\n", _c.CATEGORY_NOT_LINEBREAK: r"[^\n]",
}


@dataclass(frozen=True)
class Finding:
    kind: str      # "nested", "adjacent" or "stacked"
    where: str     # the part of the regex at fault
    why: str

    def __str__(self) -> str:
        return f"catastrophic backtracking ({self.kind} quantifiers): {self.why} in {self.where!r}"


def overlapping_repeats(source: str) -> bool:
    """Whether two repeats of overlapping characters follow each other (with only optional
    items between): slow on a long run of the shared characters, though not rejected. Such a
    record-start regex runs with a timeout (``regex_guard``). True when it cannot be told."""
    try:
        tree = _parser.parse(source)
    except (re.error, OverflowError, RecursionError, ValueError, TypeError):
        return True
    linter = _Linter(source, False)
    linter.same_only = False
    items = list(tree)
    while items and linter.nullable(items[-1]):  # a repeat at the very end has nothing to fail on
        items.pop()
    return linter.sequence(items) is not None


def lint(source: str, dotall: bool = False, stacked: bool = True) -> Finding | None:
    """The first catastrophic-backtracking shape in ``source``; None when there is none (or
    when the syntax is beyond Python's parser, such as ``\\p{L}``: nothing is claimed then).
    ``stacked=False`` leaves out the stacked free repeats (for layout regexes: see packcheck)."""
    try:
        tree = _parser.parse(_unique_names(source), re.DOTALL if dotall else 0)
    except (re.error, OverflowError, RecursionError, ValueError, TypeError):
        return None
    linter = _Linter(source, dotall)
    return linter.sequence(list(tree)) or (linter.stacked(list(tree)) if stacked else None)


def _unique_names(source: str) -> str:
    """``source`` with a group name that appears again renamed: the ``regex`` module lets
    alternatives fill one column (``(?:Some\\((?P<instance>...)\\)|(?P<instance>\\S+))``),
    Python's parser refuses that, and the regex would go unchecked."""
    seen: dict[str, int] = {}

    def rename(m: "re.Match[str]") -> str:
        seen[m.group(1)] = seen.get(m.group(1), 0) + 1
        return m.group(0) if seen[m.group(1)] == 1 else f"(?P<{m.group(1)}__{seen[m.group(1)]}>"
    return re.sub(r"(?<!\\)\(\?P<(\w+)>", rename, source)


class _Linter:
    def __init__(self, source: str, dotall: bool):
        self.source = source
        self.dotall = dotall
        self.same_only = True  # adjacent repeats: only of the same characters (else: overlapping)

    # -- what an item can match ------------------------------------------------------------
    def chars(self, item) -> frozenset[str] | None:
        """The alphabet characters a single-character item matches; None for anything longer."""
        op, arg = item
        if op is _c.LITERAL:
            return frozenset({chr(arg)}) & ALPHABET or frozenset({chr(arg)})
        if op is _c.NOT_LITERAL:
            return ALPHABET - {chr(arg)}
        if op is _c.ANY:
            return ALPHABET if self.dotall else ALPHABET - {"\n"}
        if op is _c.IN:
            return self._set(arg)
        if op is _c.SUBPATTERN and len(arg[-1]) == 1:
            return self.chars(arg[-1][0])
        if op is _c.BRANCH:
            found: set[str] = set()
            for alternative in arg[1]:
                if len(alternative) != 1:
                    return None
                one = self.chars(alternative[0])
                if one is None:
                    return None
                found |= one
            return frozenset(found)
        return None

    def _set(self, items) -> frozenset[str]:
        negate = False
        found: set[str] = set()
        for op, arg in items:
            if op is _c.NEGATE:
                negate = True
            elif op is _c.LITERAL:
                found.add(chr(arg))
            elif op is _c.RANGE:
                found |= {ch for ch in ALPHABET if arg[0] <= ord(ch) <= arg[1]}
            elif op is _c.CATEGORY:
                rx = re.compile(_CATEGORIES.get(arg, r"[^\s\S]"))
                found |= {ch for ch in ALPHABET if rx.fullmatch(ch)}
        return frozenset(ALPHABET - found if negate else found & ALPHABET)

    def nullable(self, item) -> bool:
        op, arg = item
        if op in _REPEATS or op is _POSSESSIVE:
            return arg[0] == 0 or all(self.nullable(i) for i in arg[2])
        if op in (_c.AT, _c.ASSERT, _c.ASSERT_NOT):
            return True
        if op is _c.SUBPATTERN:
            return all(self.nullable(i) for i in arg[-1])
        if op is _ATOMIC:
            return all(self.nullable(i) for i in arg)
        if op is _c.BRANCH:
            return any(all(self.nullable(i) for i in alt) for alt in arg[1])
        return False

    def first(self, item) -> frozenset[str]:
        """The characters a non-empty match of the item can start with (all, when unknown)."""
        op, arg = item
        if op in (_c.AT, _c.ASSERT, _c.ASSERT_NOT):
            return frozenset()
        one = self.chars(item)
        if one is not None:
            return one
        if op in _REPEATS or op is _POSSESSIVE:
            return self.first_of(list(arg[2]))
        if op is _c.SUBPATTERN:
            return self.first_of(list(arg[-1]))
        if op is _ATOMIC:
            return self.first_of(list(arg))
        if op is _c.BRANCH:
            return frozenset().union(*(self.first_of(list(alt)) for alt in arg[1]))
        return ALPHABET

    def first_of(self, items: list) -> frozenset[str]:
        found: frozenset[str] = frozenset()
        for item in items:
            found |= self.first(item)
            if not self.nullable(item):
                break
        return found

    def run(self, item) -> frozenset[str] | None:
        """The characters of an unbounded, backtracking repeat of one character class."""
        op, arg = item
        if op in _REPEATS and arg[1] == _UNBOUNDED and len(arg[2]) == 1:
            return self.chars(arg[2][0])
        if op is _c.SUBPATTERN and len(arg[-1]) == 1:
            return self.run(arg[-1][0])
        return None

    def free(self, item) -> bool:
        """An unbounded, backtracking repeat of any character of a line."""
        run = self.run(item)
        return run is not None and run >= _ANY_IN_LINE

    def free_path(self, items: list, after: list) -> list[tuple[object, list]]:
        """The free repeats of one path through ``items`` (the branch alternative with the most),
        in order, each with what follows it (``after`` continues the sequence); atomic groups,
        possessive repeats and lookarounds are never backtracked into, so they hold none."""
        path: list[tuple[object, list]] = []
        for index, item in enumerate(items):
            op, arg = item
            rest = items[index + 1:] + after
            if self.free(item):
                path.append((item, rest))
            elif op is _c.SUBPATTERN:
                path += self.free_path(list(arg[-1]), rest)
            elif op is _c.BRANCH:
                path += max((self.free_path(list(alt), rest) for alt in arg[1]), key=len, default=[])
            elif op in _REPEATS and arg[1] == 1:  # an optional group: (?:...)?
                path += self.free_path(list(arg[2]), rest)
        return path

    def stacked(self, items: list) -> Finding | None:
        """Free repeats stacked on one path, a later one followed by an item that must match (see
        the module docstring); also inside each atomic group and lookaround, on their own."""
        path = self.free_path(items, [])
        for index, (item, rest) in enumerate(path[1:], 1):
            if any(not self.nullable(i) for i in rest):
                return Finding("stacked", self._text([path[0][0]]) + " ... " + self._text([item] + rest[:3]),
                               f"{len(path)} repeats of any character on one path, the last but one after "
                               f"another (a line of many records tries every split of it between them)")
        for op, arg in _walk(items):
            body = (list(arg) if op is _ATOMIC else list(arg[1]) if op in (_c.ASSERT, _c.ASSERT_NOT)
                    else list(arg[2]) if op is _POSSESSIVE else None)
            if body is not None:
                found = self.stacked(body)
                if found is not None:
                    return found
        return None

    # -- the shapes ------------------------------------------------------------------------
    def sequence(self, items: list) -> Finding | None:
        for index, item in enumerate(items):
            found = self.item(item)
            if found is not None:
                return found
            first = self.run(item)
            if not first:
                continue
            for later in items[index + 1:]:
                second = self.run(later)
                if second and (first == second if self.same_only else first & second):
                    return Finding("adjacent", self._text(items[index:items.index(later) + 1]),
                                   f"two repeats of {_show(first)} with only optional items between "
                                   f"(one repeat does the same)")
                if not self.nullable(later) or self.first(later) & first:
                    break  # a mandatory item ends the run; one that shares its characters is
                    # an overlap, which the timeout bounds (see the module docstring)
        return None

    def item(self, item) -> Finding | None:
        op, arg = item
        if op is _ATOMIC or op is _POSSESSIVE:
            return None  # never backtracks into
        if op is _c.SUBPATTERN:
            return self.sequence(list(arg[-1]))
        if op is _c.BRANCH:
            for alternative in arg[1]:
                found = self.sequence(list(alternative))
                if found is not None:
                    return found
            return None
        if op in (_c.ASSERT, _c.ASSERT_NOT):
            return self.sequence(list(arg[1]))
        if op in _REPEATS:
            body = list(arg[2])
            inner = self.sequence(body)
            if inner is not None:
                return inner
            if arg[1] > 1 or arg[1] == _UNBOUNDED:
                return self.nested(item, body)
        return None

    def nested(self, outer, body: list) -> Finding | None:
        """A repeated group whose mandatory part is one unbounded repeat: a run can be cut into
        iterations in exponentially many ways."""
        required = [i for i in body if not self.nullable(i)]
        candidates = [i for i in body if self.run(i)] if not required else required
        if len(candidates) == 1 and self.run(candidates[0]) and (
                not required or required == candidates):
            return Finding("nested", self._text([outer]),
                           f"a repeated group around a repeat of {_show(self.run(candidates[0]))}")
        while len(body) == 1 and body[0][0] is _c.SUBPATTERN:
            body = list(body[0][1][-1])
        if len(body) == 1 and body[0][0] in _REPEATS and body[0][1][1] == _UNBOUNDED:
            return Finding("nested", self._text([outer]), "a repeat of a repeat")
        return None

    def _text(self, items) -> str:
        return _render(items)[:80]


def _walk(items):
    """Every item of a parsed regex, depth first (atomic groups and lookarounds included)."""
    for item in items:
        yield item
        op, arg = item
        if op is _c.SUBPATTERN:
            yield from _walk(arg[-1])
        elif op is _c.BRANCH:
            for alternative in arg[1]:
                yield from _walk(alternative)
        elif op in _REPEATS or op is _POSSESSIVE:
            yield from _walk(arg[2])
        elif op in (_c.ASSERT, _c.ASSERT_NOT):
            yield from _walk(arg[1])
        elif op is _ATOMIC:
            yield from _walk(arg)


def _show(chars: frozenset[str]) -> str:
    if chars == ALPHABET or len(chars) > 20:
        return "any character" if "\n" in chars else "almost any character"
    return "".join(sorted(chars)).replace("\n", "\\n").replace("\t", "\\t") or "nothing"


def _render(items) -> str:
    """A rough rendering of parsed items, for messages."""
    out = []
    for op, arg in items:
        if op is _c.LITERAL:
            out.append(re.escape(chr(arg)))
        elif op in _REPEATS:
            body = _render(arg[2])
            body = body if len(arg[2]) == 1 else f"(?:{body})"
            low, high = arg[0], arg[1]
            mark = {(0, _UNBOUNDED): "*", (1, _UNBOUNDED): "+", (0, 1): "?"}.get((low, high), f"{{{low},{high}}}")
            out.append(body + mark + ("?" if op is _c.MIN_REPEAT else ""))
        elif op is _c.SUBPATTERN:
            out.append(f"({_render(arg[-1])})")
        elif op is _c.IN:
            out.append("[...]")
        elif op is _c.ANY:
            out.append(".")
        elif op is _c.NOT_LITERAL:
            out.append(f"[^{re.escape(chr(arg))}]")
        else:
            out.append("...")
    return "".join(out)

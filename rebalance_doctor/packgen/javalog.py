"""Kafka's log calls, read from one Java or Scala source file: each call's level, the line it starts
on, its message as a template with ``{}`` placeholders and the source expressions that fill them.

A small tokenizer (string literals, text blocks, Scala ``s"..."`` interpolations, comments, nesting)
finds every ``log.info(...)`` / ``logger.x(...)`` / ``LOG.x(...)`` call (Java) and every
``kafka.utils.Logging`` ``info(...)`` call (Scala), and evaluates the message argument:

* string literals are unescaped and adjacent ``"a" + "b"`` joined;
* a concatenated expression becomes ``{}`` (its expression is a param);
* ``String.format("%s ...", ...)`` and Scala ``"...".format(...)`` placeholders become ``{}``;
* Scala ``$x`` / ``${x.y}`` interpolations become ``{}``;
* a bare ``String`` variable passed as the message is resolved to its nearest preceding assignment;
* a ``(cond ? "a" : "b")`` of two literals is kept as ``{}`` and spelled out in both forms (variants).
"""

from __future__ import annotations

import regex
from dataclasses import dataclass, field

LEVELS = ("trace", "debug", "info", "warn", "error")


@dataclass
class Call:
    line: int
    level: str
    template: str
    params: list[str]
    notes: list[str] = field(default_factory=list)
    variants: list[tuple[str, list[str], str]] = field(default_factory=list)  # (template, params, note)
    ternaries: list[tuple[int, str, str, str]] = field(default_factory=list)  # (placeholder, cond, a, b)


# ---------------------------------------------------------------------------------------------
# tokenizing


def _skip_string(text: str, i: int) -> int:
    """Index after the string/char literal starting at text[i] (a quote, or s/f/raw prefix handled
    by the caller)."""
    if text.startswith('"""', i):
        end = text.find('"""', i + 3)
        end = len(text) if end < 0 else end + 3
        while end < len(text) and text[end] == '"':    # Scala """...""""" closes on the last quotes
            end += 1
        return end
    quote = text[i]
    j = i + 1
    interpolated = quote == '"' and i > 0 and text[i - 1] in "sf" and (i < 2 or not text[i - 2].isalnum())
    while j < len(text):
        c = text[j]
        if interpolated and c == "$" and text[j + 1:j + 2] == "{":
            depth = 0
            while j < len(text):
                if text[j] == '"':
                    j = _skip_string(text, j)
                    continue
                if text[j] == "{":
                    depth += 1
                elif text[j] == "}":
                    depth -= 1
                    if depth == 0:
                        break
                j += 1
            j += 1
            continue
        if c == "\\":
            j += 2
            continue
        if c == quote or c == "\n":
            return j + 1
        j += 1
    return j


def _skip_comment(text: str, i: int) -> int:
    if text.startswith("//", i):
        end = text.find("\n", i)
        return len(text) if end < 0 else end
    end = text.find("*/", i + 2)
    return len(text) if end < 0 else end + 2


def _is_char_literal(text: str, i: int) -> bool:
    # Scala symbols ('foo) and type params are not literals; a Java/Scala char literal is 'x' or '\x'.
    return text[i] == "'" and (text[i + 2:i + 3] == "'" or (text[i + 1:i + 2] == "\\" and "'" in text[i + 3:i + 8]))


def split_args(text: str, start: int) -> tuple[list[tuple[int, str]], int]:
    """Top-level comma-separated arguments of the call whose '(' is at text[start]: (offset, text)
    pairs, and the index after the closing ')'."""
    depth = 0
    args = []
    i = start
    arg_start = start + 1
    while i < len(text):
        c = text[i]
        if c in "\"" or (c == "'" and _is_char_literal(text, i)):
            i = _skip_string(text, i)
            continue
        if text.startswith("//", i) or text.startswith("/*", i):
            i = _skip_comment(text, i)
            continue
        if c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
            if depth == 0:
                args.append((arg_start, text[arg_start:i]))
                return [(o, a) for o, a in args if a.strip()], i + 1
        elif c == "," and depth == 1:
            args.append((arg_start, text[arg_start:i]))
            arg_start = i + 1
        i += 1
    return [], len(text)


def _split_top(expr: str, sep: str) -> list[str]:
    """expr split on top-level ``sep`` (a one-character operator outside strings and brackets)."""
    parts, depth, i, begin = [], 0, 0, 0
    while i < len(expr):
        c = expr[i]
        if c == '"' or (c == "'" and _is_char_literal(expr, i)):
            i = _skip_string(expr, i)
            continue
        if expr.startswith("//", i) or expr.startswith("/*", i):
            i = _skip_comment(expr, i)
            continue
        if c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
        elif c == sep and depth == 0:
            parts.append(expr[begin:i])
            begin = i + 1
        i += 1
    parts.append(expr[begin:])
    return parts


def strip_comments(expr: str) -> str:
    out, i = [], 0
    while i < len(expr):
        c = expr[i]
        if c == '"' or (c == "'" and _is_char_literal(expr, i)):
            j = _skip_string(expr, i)
            out.append(expr[i:j])
            i = j
            continue
        if expr.startswith("//", i) or expr.startswith("/*", i):
            i = _skip_comment(expr, i)
            out.append(" ")
            continue
        out.append(c)
        i += 1
    return "".join(out)


def normalize(expr: str) -> str:
    """A source expression as the inventory's params spell it: comments dropped, whitespace folded."""
    return regex.sub(r"\s+", " ", strip_comments(expr)).strip()


# ---------------------------------------------------------------------------------------------
# literals

_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "b": "\b", "f": "\f", "0": "\0", "s": " ",
            '"': '"', "'": "'", "\\": "\\"}


def unescape(body: str) -> str:
    out, i = [], 0
    while i < len(body):
        c = body[i]
        if c == "\\" and i + 1 < len(body):
            n = body[i + 1]
            if n == "u" and regex.match(r"[0-9a-fA-F]{4}", body[i + 2:i + 6]):
                out.append(chr(int(body[i + 2:i + 6], 16)))
                i += 6
                continue
            out.append(_ESCAPES.get(n, n))
            i += 2
            continue
        out.append(c)
        i += 1
    return "".join(out)


def _text_block(body: str) -> str:
    """A Java text block's value: the incidental indentation stripped, as javac does."""
    lines = body.split("\n")[1:]
    indents = [len(l) - len(l.lstrip()) for l in lines if l.strip()]
    if lines and not lines[-1].strip():
        indents.append(len(lines[-1]))
    cut = min(indents) if indents else 0
    text = "\n".join(l[cut:].rstrip() for l in lines)
    text = regex.sub(r"\\\n", "", text)
    return unescape(text)


_LITERAL = regex.compile(r'(?s)^(?P<prefix>[sf]?)(?P<q>"""|")(?P<body>.*)(?P=q)$')


def literal(expr: str, scala: bool) -> tuple[str, list[str]] | None:
    """(text, params) of a string literal expression, or None. Scala interpolations become {}."""
    m = _LITERAL.match(expr)
    if not m or _skip_string(expr, len(m["prefix"])) != len(expr):
        return None
    body, prefix = m["body"], m["prefix"]
    if m["q"] == '"""':
        text = _text_block(body) if not scala else body
        if scala and prefix == "s":
            return _interpolate(text, raw=True)
        return (text if not scala else body), []
    if prefix == "s":
        return _interpolate(body, raw=False)
    return unescape(body), []


def _interpolate(body: str, raw: bool) -> tuple[str, list[str]]:
    out, params, i = [], [], 0
    while i < len(body):
        c = body[i]
        if c == "$" and body[i + 1:i + 2] == "$":
            out.append("$")
            i += 2
            continue
        if c == "$" and body[i + 1:i + 2] == "{":
            depth, j = 0, i + 1
            while j < len(body):
                if body[j] == "{":
                    depth += 1
                elif body[j] == "}":
                    depth -= 1
                    if depth == 0:
                        break
                j += 1
            params.append(normalize(body[i + 2:j]))
            out.append("{}")
            i = j + 1
            continue
        if c == "$":
            m = regex.match(r"[A-Za-z_]\w*", body[i + 1:])
            if m:
                params.append(m.group(0))
                out.append("{}")
                i += 1 + m.end()
                continue
        out.append(c)
        i += 1
    text = "".join(out)
    return (text if raw else unescape(text)), params


_FORMAT_SPEC = regex.compile(r"%(?:\d+\$)?[-#+ 0,(]*\d*(?:\.\d+)?([a-zA-Z%])")


def _format_to_braces(text: str) -> str:
    return _FORMAT_SPEC.sub(lambda m: "%" if m.group(1) == "%" else ("\n" if m.group(1) == "n" else "{}"), text)


# ---------------------------------------------------------------------------------------------
# message evaluation


@dataclass
class Message:
    template: str
    params: list[str]          # the expressions of {} made by evaluation (concatenation, format)
    notes: list[str]
    ternaries: list[tuple[int, str, str, str]]   # (placeholder index, cond, a, b)
    own_params: bool = False   # params already fill every {} (format/concatenation of all values)


_TERNARY = regex.compile(r'(?s)^\(?\s*(?P<cond>[^?]+?)\s*\?\s*(?P<a>"(?:[^"\\]|\\.)*")\s*:\s*(?P<b>"(?:[^"\\]|\\.)*")\s*\)?$')
_STRING_FORMAT = regex.compile(r"(?s)^String\.format\s*\(")
_SCALA_FORMAT = regex.compile(r'(?s)^(?P<lit>"(?:[^"\\]|\\.)*"|"""[\s\S]*?""")\s*\.format\s*\(')


def evaluate(expr: str, scala: bool, resolve) -> Message | None:
    """The template of a message expression, or None when it has no literal text at all."""
    expr = strip_comments(expr).strip()
    parts = [p.strip() for p in _split_top(expr, "+")]
    if len(parts) == 1:
        return _evaluate_single(parts[0], scala, resolve)
    template, params, notes, ternaries, literal_seen = [], [], [], [], False
    for part in parts:
        inner = part
        while inner.startswith("(") and inner.endswith(")") and split_args(inner, 0)[1] == len(inner):
            inner = inner[1:-1].strip()
        lit = literal(inner, scala)
        if lit is not None:
            template.append(lit[0])
            params.extend(lit[1])
            literal_seen = True
            continue
        t = _TERNARY.match(part)
        if t:
            ternaries.append((sum(x.count("{}") for x in template), normalize(t["cond"]),
                              unescape(t["a"][1:-1]), unescape(t["b"][1:-1])))
        template.append("{}")
        params.append(normalize(part))
    if not literal_seen:
        return None
    # only literals joined: the {} in them are filled by the call's other arguments
    valued = len(params) > 0
    if valued:
        notes.append("message built by string concatenation; concatenated values shown as {}")
    return Message("".join(template), params, notes, ternaries, own_params=valued)


def _evaluate_single(expr: str, scala: bool, resolve) -> Message | None:
    lit = literal(expr, scala)
    if lit is not None:
        notes = ["Scala s-interpolation converted to {}"] if lit[1] else []
        return Message(lit[0], lit[1], notes, [], own_params=bool(lit[1]))
    if _STRING_FORMAT.match(expr):
        args, _ = split_args(expr, expr.index("("))
        inner = evaluate(args[0][1], scala, resolve) if args else None
        if inner is None:
            return None
        return Message(_format_to_braces(inner.template), inner.params + [normalize(a) for _, a in args[1:]],
                       inner.notes + ["String.format placeholders shown as {}"], inner.ternaries, own_params=True)
    m = _SCALA_FORMAT.match(expr)
    if m:
        args, _ = split_args(expr, m.end() - 1)
        text = literal(m["lit"], scala)[0]
        return Message(_format_to_braces(text), [normalize(a) for _, a in args],
                       ["Scala format placeholders shown as {}"], [], own_params=True)
    if regex.fullmatch(r"[A-Za-z_]\w*", expr) and resolve is not None:
        value = resolve(expr)
        if value is not None:
            inner = evaluate(value, scala, None)
            if inner is not None:
                inner.notes.append(f"message variable {expr} resolved to its nearest preceding assignment")
                return inner
    return None


# ---------------------------------------------------------------------------------------------
# calls


_JAVA_CALL = regex.compile(r"(?<![\w.])(?:this\.)?(?:log|LOG|logger|LOGGER|log\(\)|logger\(\))\s*\.\s*(trace|debug|info|warn|error)\s*\(")
_SCALA_CALL = regex.compile(r"(?<![\w.])(?:(?:log|logger)\s*\.\s*)?(trace|debug|info|warn|error)\s*\(")


def _line_of(text: str, offset: int, starts: list[int]) -> int:
    import bisect
    return bisect.bisect_right(starts, offset)


def _code_mask(text: str) -> list[tuple[int, int]]:
    """Spans of comments and string literals, where a call is never looked for."""
    spans, i = [], 0
    while i < len(text):
        c = text[i]
        if c == '"' or (c == "'" and _is_char_literal(text, i)):
            j = _skip_string(text, i)
            spans.append((i, j))
            i = j
            continue
        if text.startswith("//", i) or text.startswith("/*", i):
            j = _skip_comment(text, i)
            spans.append((i, j))
            i = j
            continue
        i += 1
    return spans


def calls(text: str, scala: bool) -> list[Call]:
    import bisect
    starts = [0] + [i + 1 for i, c in enumerate(text) if c == "\n"]
    mask = _code_mask(text)
    mask_starts = [s for s, _ in mask]
    out = []
    for m in (_SCALA_CALL if scala else _JAVA_CALL).finditer(text):
        k = bisect.bisect_right(mask_starts, m.start()) - 1
        if k >= 0 and mask[k][0] <= m.start() < mask[k][1]:
            continue
        if scala:
            before = text[max(0, m.start() - 5):m.start()]
            if regex.search(r"def\s*$", before):
                continue
        args, _ = split_args(text, m.end() - 1)
        if not args:
            continue
        line = bisect.bisect_right(starts, m.start())
        first = args[0][1]

        def resolve(name: str, at=m.start()) -> str | None:
            window = text[max(0, at - 6000):at]
            found = None
            for a in regex.finditer(rf"(?<![\w.]){regex.escape(name)}\s*(?<![=!<>])=(?!=)\s*", window):
                found = a
            if found is None:
                return None
            rest = text[max(0, at - 6000) + found.end():]
            end = _statement_end(rest)
            return rest[:end]

        msg = evaluate(first, scala, resolve)
        if msg is None:
            continue
        rest = [normalize(a) for _, a in args[1:]]
        n = msg.template.count("{}")
        notes = list(msg.notes)
        if msg.own_params:
            params = msg.params
            extra = rest
        else:
            params = rest[:n]
            extra = rest[n:]
        if extra:
            notes.append("trailing Throwable argument: " + ", ".join(extra))
        call = Call(line, m.group(1).upper(), msg.template, params, notes)
        ternaries = list(msg.ternaries)
        if not msg.own_params:
            for index, p in enumerate(params):
                t = _TERNARY.match(p)
                if t and "(" not in t["cond"]:
                    ternaries.append((index, normalize(t["cond"]), unescape(t["a"][1:-1]), unescape(t["b"][1:-1])))
        call.ternaries = ternaries
        for index, cond, a, b in ternaries:
            for value in (a, b):
                call.variants.append((_fill(msg.template, index, value),
                                      [p for i, p in enumerate(params) if i != index],
                                      f"variant: placeholder #{index + 1} is the ternary ({cond} ? "
                                      f"{_quote(a)} : {_quote(b)}) -> rendered as {_quote(value)}"))
        out.append(call)
    return out


def _quote(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def _fill(template: str, index: int, value: str) -> str:
    pieces = template.split("{}")
    return "".join(p + ("{}" if i != index else value) for i, p in enumerate(pieces[:-1])) + pieces[-1]


def _statement_end(rest: str) -> int:
    depth, i = 0, 0
    while i < len(rest):
        c = rest[i]
        if c == '"':
            i = _skip_string(rest, i)
            continue
        if c in "([{":
            depth += 1
        elif c in ")]}":
            if depth == 0:
                return i
            depth -= 1
        elif c == ";" and depth == 0:
            return i
        elif c == "\n" and depth == 0 and not rest[i + 1:].lstrip().startswith(("+", ".")) \
                and not rest[:i].rstrip().endswith(("+", "(", ",", "=")):
            return i
        i += 1
    return i


def method_calls(text: str, scala: bool, name: str) -> list[tuple[int, list[str], object]]:
    """Each call of method ``name`` (not its definition): (line, argument texts, resolver of a bare
    variable at the call)."""
    import bisect
    starts = [0] + [i + 1 for i, c in enumerate(text) if c == "\n"]
    mask = _code_mask(text)
    mask_starts = [s for s, _ in mask]
    out = []
    for m in regex.finditer(rf"(?<![\w$]){regex.escape(name)}\s*\(", text):
        k = bisect.bisect_right(mask_starts, m.start()) - 1
        if k >= 0 and mask[k][0] <= m.start() < mask[k][1]:
            continue
        before = text[max(0, m.start() - 120):m.start()]
        # a type before the name is a definition; a Scala case arrow (=>) or lambda before it is a call
        if regex.search(r"(?:\bdef|\bvoid|\bboolean|\bString|[>\w]\s)\s*$", before) and \
                not regex.search(r"(?:\breturn|\bnew|=>?|\(|,|\.|->|;|\{|\}|\belse|\bthen)\s*$", before):
            continue
        args, _ = split_args(text, m.end() - 1)
        line = bisect.bisect_right(starts, m.start())

        def resolve(var: str, at=m.start()) -> str | None:
            window = text[max(0, at - 6000):at]
            found = None
            for a in regex.finditer(rf"(?<![\w.]){regex.escape(var)}\s*(?<![=!<>])=(?!=)\s*", window):
                found = a
            if found is None:
                return None
            rest = text[max(0, at - 6000) + found.end():]
            return rest[:_statement_end(rest)]

        out.append((line, [a for _, a in args], resolve))
    return out

"""Build the non-Java client template inventories (``patterns/clients/<client>.jsonl``) from the
clients' sources, as ``patterns/kafka/templates.jsonl`` is built from Kafka's (packgen.sources).

    python -m rebalance_doctor.packgen.client_sources --mirrors /work/.mirror [--client librdkafka]

For each client and release listed in ``client_sources.toml``, every log call of its
group-membership code is found and its format string turned into a template with ``{}``
placeholders (printf ``%d``/``%.*s``, Python ``%s``/f-strings, Go verbs, Erlang ``~p``, Ruby
``#{}``, JavaScript `${}`), with the level, the facility (librdkafka) or logger, the source
expressions that fill the placeholders and what kind of value each is. Only templates and
their metadata are kept, never code. The sources are read from local git mirrors
(``<mirrors>/<owner>+<name>/repo``, e.g. made by the search tool's ``fetch``); CI never needs them:
the inventories are data in the project.
"""

from __future__ import annotations

import argparse
import ast
import fnmatch
import json
import subprocess
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path

import regex

from ..core.paths import patterns_dir
from ..core.toml import load_toml

CONFIG = Path(__file__).with_name("client_sources.toml")


@dataclass
class Row:
    client: str
    version: str
    file: str
    line: int
    level: str
    template: str
    facility: str | None = None
    logger: str | None = None
    params: list[str] = field(default_factory=list)
    types: list[str] = field(default_factory=list)   # int | text | float | hex: what fills each {}
    keys: list[str] = field(default_factory=list)     # structured-logging keys (KafkaJS, franz-go)
    notes: str = ""
    kind: str = "log"                                  # log | composed (a generic line spelled out)
    commit: str = ""


# ---------------------------------------------------------------------------------------------
# git access


class Repo:
    def __init__(self, path: Path):
        self.path = path

    def git(self, *args: str) -> str:
        return subprocess.run(["git", "-C", str(self.path), *args], check=True, capture_output=True,
                              text=True, errors="replace").stdout

    def commit(self, tag: str) -> str:
        return self.git("rev-parse", f"{tag}^{{commit}}").strip()

    def files(self, tag: str) -> list[str]:
        return self.git("ls-tree", "-r", "--name-only", tag).splitlines()

    def read(self, tag: str, path: str) -> str:
        return self.git("show", f"{tag}:{path}")


# ---------------------------------------------------------------------------------------------
# shared lexing helpers


def strip_c_comments(text: str, line_comment: str = "//", block: bool = True,
                     quotes: str = "\"'") -> str:
    """The text with comments blanked (newlines kept, so line numbers hold); strings untouched."""
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c in quotes:
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == "\\" else 1
            out.append(text[i:j + 1])
            i = j + 1
        elif text.startswith(line_comment, i):
            j = text.find("\n", i)
            j = n if j == -1 else j
            i = j
        elif block and text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j == -1 else j + 2
            out.append("".join("\n" if ch == "\n" else " " for ch in text[i:j]))
            i = j
        else:
            out.append(c)
            i += 1
    return "".join(out)


_OPEN, _CLOSE = "([{", ")]}"


def split_args(text: str, start: int, quotes: str = "\"'`") -> tuple[list[str], int]:
    """Top-level comma-separated arguments of the call whose '(' is at ``start``; and the end."""
    depth = 0
    args, current = [], []
    i, n = start + 1, len(text)
    while i < n:
        c = text[i]
        if c in quotes:
            j = i + 1
            while j < n and text[j] != c:
                if text[j] == "\\":
                    j += 2
                    continue
                if c == "`" and text.startswith("${", j):  # JS template literal: skip ${...}
                    d, j = 1, j + 2
                    while j < n and d:
                        d += {"{": 1, "}": -1}.get(text[j], 0)
                        j += 1
                    continue
                j += 1
            current.append(text[i:j + 1])
            i = j + 1
            continue
        if c in _OPEN:
            depth += 1
        elif c in _CLOSE:
            if depth == 0:
                args.append("".join(current).strip())
                return [a for a in args if a != ""] if args != [""] else [], i
            depth -= 1
        elif c == "," and depth == 0:
            args.append("".join(current).strip())
            current = []
            i += 1
            continue
        current.append(c)
        i += 1
    return args, n


def line_of(text: str, pos: int) -> int:
    return text.count("\n", 0, pos) + 1


_C_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "\\": "\\", '"': '"', "'": "'", "0": "\0", "a": "\a"}


def unescape(body: str) -> str:
    return regex.sub(r"\\(x[0-9a-fA-F]{2}|.)", lambda m: _C_ESCAPES.get(m[1], chr(int(m[1][1:], 16))
                                                                     if m[1].startswith("x") else m[1]), body)


# ---------------------------------------------------------------------------------------------
# printf-style formats (C, Go, Python %, Erlang ~)

_C_FORMAT = regex.compile(r"%(?P<flags>[-+ #0']*)(?P<width>\*|\d+)?(?:\.(?P<prec>\*|\d+))?"
                          r"(?P<len>hh|h|ll|l|z|j|t|L|q)?(?P<conv>[diouxXeEfgGcspn%])")
_PRI = {"PRId32": "d", "PRId64": "d", "PRIi32": "d", "PRIi64": "d", "PRId16": "d", "PRIu32": "u",
        "PRIu64": "u", "PRIu16": "u", "PRIusz": "zu", "PRIdsz": "zd", "PRIx32": "x", "PRIx64": "x",
        "PRIu8": "u", "PRId8": "d", "PRIx16": "x", "PRIX32": "X", "PRIX64": "X"}
_TWO_VALUE_MACROS = regex.compile(r"^RD_KAFKAP_(?:STR|BYTES)_PR\b|^RD_KAFKA_[A-Z_]*_PR\b")


def c_type(conv: str) -> str:
    return {"d": "int", "i": "int", "u": "int", "o": "int", "x": "hex", "X": "hex", "p": "hex",
            "e": "float", "E": "float", "f": "float", "g": "float", "G": "float", "c": "text",
            "s": "text"}.get(conv, "text")


def c_format(fmt: str, args: list[str]) -> tuple[str, list[str], list[str]]:
    """A C printf format into a {} template, the expressions filling each {} and their kinds."""
    out, params, types = [], [], []
    pos, arg = 0, 0
    for m in _C_FORMAT.finditer(fmt):
        out.append(fmt[pos:m.start()].replace("{", "{{").replace("}", "}}"))
        pos = m.end()
        if m["conv"] == "%":
            out.append("%")
            continue
        stars = (m["width"] == "*") + (m["prec"] == "*")
        if stars and arg < len(args) and _TWO_VALUE_MACROS.match(args[arg]):
            stars = 0  # RD_KAFKAP_STR_PR(x) expands to the length and the pointer
        arg += stars
        params.append(args[arg] if arg < len(args) else "")
        arg += 1
        types.append(c_type(m["conv"]))
        out.append("{}")
    out.append(fmt[pos:].replace("{", "{{").replace("}", "}}"))
    return _unbrace("".join(out)), params, types


def _unbrace(text: str) -> str:
    """Literal braces were doubled while placeholders were written: a template's literal '{' and
    '}' stay single where they cannot be taken for a placeholder (only '{}' is one)."""
    return text.replace("{{}}", "\x00").replace("{{", "{").replace("}}", "}").replace("\x00", "{{}}")


_PY_FORMAT = regex.compile(r"%(?:\((?P<name>\w+)\))?[-+ #0]*(?:\*|\d+)?(?:\.(?:\*|\d+))?[hlL]?(?P<conv>[diouxXeEfFgGcrsa%])")


def py_percent(fmt: str, args: list[str]) -> tuple[str, list[str], list[str]]:
    out, params, types = [], [], []
    pos, arg = 0, 0
    for m in _PY_FORMAT.finditer(fmt):
        out.append(fmt[pos:m.start()])
        pos = m.end()
        if m["conv"] == "%":
            out.append("%")
            continue
        if m["name"]:
            params.append(m["name"])
        else:
            params.append(args[arg] if arg < len(args) else "")
            arg += 1
        types.append("int" if m["conv"] in "diu" else "float" if m["conv"] in "eEfFgG" else "text")
        out.append("{}")
    out.append(fmt[pos:])
    return "".join(out), params, types


_GO_VERB = regex.compile(r"%[-+# 0]*(?:\[\d+\])?(?:\*|\d+)?(?:\.(?:\*|\d+))?(?P<verb>[vTtbcdoOqxXUeEfFgGspw%])")


def go_format(fmt: str, args: list[str]) -> tuple[str, list[str], list[str]]:
    out, params, types = [], [], []
    pos, arg = 0, 0
    for m in _GO_VERB.finditer(fmt):
        out.append(fmt[pos:m.start()])
        pos = m.end()
        if m["verb"] == "%":
            out.append("%")
            continue
        params.append(args[arg] if arg < len(args) else "")
        arg += 1
        types.append("int" if m["verb"] in "dbo" else "float" if m["verb"] in "eEfFgG"
                     else "quoted" if m["verb"] == "q" else "text")
        out.append("{}")
    out.append(fmt[pos:])
    return "".join(out), params, types


_ERL_DIRECTIVE = regex.compile(r"~(?:[-\d*]*(?:\.[-\d*]*){0,2})?(?:t|l|\+)*(?P<c>[cfegswpWPBX#bxi+n~])")


def erl_format(fmt: str, args: list[str]) -> tuple[str, list[str], list[str]]:
    out, params, types = [], [], []
    pos, arg = 0, 0
    for m in _ERL_DIRECTIVE.finditer(fmt):
        out.append(fmt[pos:m.start()])
        pos = m.end()
        c = m["c"]
        if c == "n":
            out.append("\n")
            continue
        if c == "~":
            out.append("~")
            continue
        params.append(args[arg] if arg < len(args) else "")
        arg += 1 + (c in "PW")
        types.append("int" if c in "bB#" else "float" if c in "feg" else "term" if c in "pPwW" else "text")
        out.append("{}")
    out.append(fmt[pos:])
    return "".join(out), params, types


# ---------------------------------------------------------------------------------------------
# C: librdkafka

_C_CALLS = {  # name -> (level arg index or None for debug, facility arg, format arg, broker prefix)
    "rd_kafka_dbg": (None, 2, 3, False),
    "rd_kafka_dbg0": (None, 2, 3, False),
    "rd_rkb_dbg": (None, 2, 3, True),
    "rd_kafka_log": (1, 2, 3, False),
    "rd_rkb_log": (1, 2, 3, True),
    "rd_rkb_log0": (1, 3, 4, True),
}
_C_CALL = regex.compile(r"(?<![\w#])(" + "|".join(_C_CALLS) + r")\s*\(")
_C_LITERAL = regex.compile(r'\s*"((?:[^"\\]|\\.)*)"|\s*(PRI\w+)|\s*$', regex.DOTALL)
SYSLOG = {"LOG_EMERG": 0, "LOG_ALERT": 1, "LOG_CRIT": 2, "LOG_ERR": 3, "LOG_WARNING": 4, "LOG_NOTICE": 5,
          "LOG_INFO": 6, "LOG_DEBUG": 7}
SYSLOG_NAMES = {0: "EMERG", 1: "ALERT", 2: "CRIT", 3: "ERROR", 4: "WARNING", 5: "NOTICE", 6: "INFO", 7: "DEBUG"}
_C_FUNCTION = regex.compile(r"^(?:static\s+|RD_\w+\s+)*[\w\s\*]*?\b(\w+)\s*\(", regex.MULTILINE)


def c_literal(expr: str) -> str | None:
    """The string a C expression of adjacent literals and PRI macros stands for, or None."""
    out, pos = [], 0
    expr = expr.strip()
    if not expr.startswith('"'):
        return None
    while pos < len(expr):
        m = _C_LITERAL.match(expr, pos)
        if m is None or m.end() == pos:
            return None
        if m[1] is not None:
            out.append(unescape(m[1]))
        elif m[2] is not None:
            if m[2] not in _PRI:
                return None
            out.append(_PRI[m[2]])
        pos = m.end()
    return "".join(out)


def extract_c(client: str, version: str, path: str, text: str, keep: str | None) -> list[Row]:
    code = strip_c_comments(text)
    functions = [(m.start(), m[1]) for m in _C_FUNCTION.finditer(code) if not code[m.start():m.end()].startswith(
        ("if", "while", "for", "switch", "return"))]
    rows = []
    for m in _C_CALL.finditer(code):
        name = m[1]
        line_start = code.rfind("\n", 0, m.start()) + 1
        if code[line_start:m.start()].lstrip().startswith("#"):
            continue  # a macro definition
        args, _ = split_args(code, m.end() - 1, quotes="\"'")
        level_at, fac_at, fmt_at, broker = _C_CALLS[name]
        if len(args) <= fmt_at:
            continue
        fmt = c_literal(args[fmt_at])
        if fmt is None:
            continue
        facility = c_literal(args[fac_at]) if args[fac_at].startswith('"') else None
        levels = [7] if level_at is None else [SYSLOG[w] for w in regex.findall(r"LOG_[A-Z]+", args[level_at])
                                               if w in SYSLOG]
        if not levels:
            levels = [6]
        template, params, types = c_format(fmt, args[fmt_at + 1:])
        template, params, types, expanded = _expand_buffers(code, m.start(), template, params, types)
        function = next((f for at, f in reversed(functions) if at < m.start()), "")
        if keep and not regex.search(keep, template + " " + (facility or "") + " " + function):
            continue
        notes = ["prefix: [thrd:<thread>]: " + ("<broker>: " if broker else "")]
        if expanded:
            notes.append(f"the buffer {expanded} is resolved to the rd_snprintf that fills it before the call")
        if level_at is not None and len(levels) > 1:
            notes.append(f"level chosen at run time: {args[level_at].strip()}")
        if level_at is None:
            notes.append(f"debug context {args[1].strip()}")
        for level in dict.fromkeys(levels):
            rows.append(Row(client, version, path, line_of(code, m.start()), SYSLOG_NAMES[level], template,
                            facility=facility, params=params, types=types, notes="; ".join(notes)))
    return rows


_SNPRINTF = r"rd_snprintf\(\s*{name}\s*,\s*sizeof\(\s*{name}\s*\)\s*,"


def _expand_buffers(code: str, at: int, template: str, params: list[str], types: list[str]):
    """A placeholder filled by a local buffer (``buf``) that an ``rd_snprintf(buf, sizeof(buf),
    "...")`` shortly before the call fills: the buffer's own format takes its place (librdkafka
    builds SESSTMOUT's message that way)."""
    for index, param in enumerate(params):
        if not regex.fullmatch(r"[a-z_]\w*", param or ""):
            continue
        found = list(regex.finditer(_SNPRINTF.format(name=regex.escape(param)), code[max(0, at - 3000):at]))
        if not found:
            continue
        start = max(0, at - 3000) + found[-1].start() + found[-1].group().index("(")
        args, _ = split_args(code, start, quotes="\"'")
        inner = c_literal(args[2]) if len(args) > 2 else None
        if inner is None:
            continue
        inner_template, inner_params, inner_types = c_format(inner, args[3:])
        pieces = template.split("{}")
        if len(pieces) != len(params) + 1:
            return template, params, types, None
        template = "{}".join(pieces[:index + 1]) + inner_template + "{}".join(pieces[index + 1:])
        return (template, params[:index] + inner_params + params[index + 1:],
                types[:index] + inner_types + types[index + 1:], param)
    return template, params, types, None


def compose_requests(client: str, version: str, path: str, text: str, names: list[str],
                     facilities: list[str]) -> list[Row]:
    """The broker thread's generic 'Sent %sRequest' / 'Received %sResponse' lines, spelled out for
    the group APIs (the name is a table lookup at run time)."""
    rows = []
    for row in extract_c(client, version, path, text, keep=None):
        if row.facility not in facilities or not regex.search(r"\{\}(?:Request|Response)\b", row.template):
            continue
        for api in names:
            template = regex.sub(r"\{\}(Request|Response)\b", api + r"\1", row.template, count=1)
            i = row.template.index("{}")
            index = row.template[:i].count("{}")
            rows.append(Row(client, version, path, row.line, row.level, template, facility=row.facility,
                            params=row.params[:index] + row.params[index + 1:],
                            types=row.types[:index] + row.types[index + 1:],
                            notes=row.notes + f"; composed: the API name {api} filled in",
                            kind="composed"))
    return rows


# ---------------------------------------------------------------------------------------------
# Python: kafka-python, aiokafka, faust

_PY_LEVELS = {"debug": "DEBUG", "info": "INFO", "warning": "WARNING", "warn": "WARNING", "error": "ERROR",
              "exception": "ERROR", "critical": "CRITICAL", "dev": "DEBUG"}


def _module_name(path: str) -> str:
    return path.removesuffix(".py").removesuffix("/__init__").replace("/", ".")


def extract_python(client: str, version: str, path: str, text: str, keep: str | None) -> list[Row]:
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return []
    loggers: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call):
            func = ast.unparse(node.value.func)
            if func.endswith(("getLogger", "get_logger")) and node.value.args:
                arg = node.value.args[0]
                name = (_module_name(path) if isinstance(arg, ast.Name) and arg.id == "__name__"
                        else arg.value if isinstance(arg, ast.Constant) else None)
                for target in node.targets:
                    if isinstance(target, ast.Name) and name:
                        loggers[target.id] = name
    module_logger = next(iter(loggers.values()), _module_name(path))
    rows = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        found = _py_log_call(node, loggers, module_logger)
        if found is None:
            continue
        level, logger, message, args, prefixed = found
        template, params, types = _py_template(message, args)
        if template is None:
            continue
        if keep and not regex.search(keep, template):
            continue
        notes = "prefix: [^-<service>]: (mode's service logger)" if prefixed else "prefix: none"
        rows.append(Row(client, version, path, node.lineno, level, template, logger=logger, params=params,
                        types=types, notes=notes))
    return rows


def _py_log_call(node: ast.Call, loggers: dict[str, str], module_logger: str):
    func = node.func
    # future.add_errback(log.error, "LeaveGroup request failed: %s"): a log call by callback.
    if (isinstance(func, ast.Attribute) and func.attr in ("add_errback", "add_callback") and len(node.args) >= 2
            and isinstance(node.args[0], ast.Attribute) and node.args[0].attr in _PY_LEVELS
            and isinstance(node.args[0].value, ast.Name) and node.args[0].value.id in loggers):
        return (_PY_LEVELS[node.args[0].attr], loggers[node.args[0].value.id], node.args[1], ["<error>"], False)
    if not isinstance(func, ast.Attribute) or func.attr not in _PY_LEVELS or not node.args:
        return None
    owner = func.value
    if isinstance(owner, ast.Name) and owner.id in loggers:
        return (_PY_LEVELS[func.attr], loggers[owner.id], node.args[0], node.args[1:], False)
    if isinstance(owner, ast.Attribute) and owner.attr in ("log", "logger", "_logger") and \
            isinstance(owner.value, ast.Name) and owner.value.id in ("self", "cls"):
        return (_PY_LEVELS[func.attr], module_logger, node.args[0], node.args[1:], owner.attr == "log")
    return None


def _py_template(message, args) -> tuple[str | None, list[str], list[str]]:
    arg_sources = [a if isinstance(a, str) else ast.unparse(a) for a in args
                   if not isinstance(a, ast.Starred)]
    if isinstance(message, ast.Constant) and isinstance(message.value, str):
        if not arg_sources:
            return message.value, [], []
        return py_percent(message.value, arg_sources)
    if isinstance(message, ast.JoinedStr):
        out, params = [], []
        for part in message.values:
            if isinstance(part, ast.Constant):
                out.append(str(part.value))
            else:
                out.append("{}")
                params.append(ast.unparse(part.value))
        text = "".join(out)
        if arg_sources:
            text, more, _ = py_percent(text, arg_sources)
            params += more
        return text, params, ["text"] * len(params)
    if isinstance(message, ast.BinOp) and isinstance(message.op, ast.Mod) and isinstance(message.left, ast.Constant):
        right = message.right
        values = [ast.unparse(e) for e in right.elts] if isinstance(right, ast.Tuple) else [ast.unparse(right)]
        return py_percent(message.left.value, values)
    if (isinstance(message, ast.Call) and isinstance(message.func, ast.Attribute) and message.func.attr == "format"
            and isinstance(message.func.value, ast.Constant)):
        text = regex.sub(r"\{[^{}]*\}", "{}", message.func.value.value)
        return text, [ast.unparse(a) for a in message.args], ["text"] * text.count("{}")
    return None, [], []


# ---------------------------------------------------------------------------------------------
# Go: franz-go, sarama, kafka-go

_GO_STRING = regex.compile(r'"((?:[^"\\\n]|\\.)*)"|`([^`]*)`')


def go_literal(expr: str) -> tuple[str, list[str]] | None:
    """A Go string expression: literals joined by +, other operands as {} (with their sources)."""
    parts = [p.strip() for p in _split_plus(expr)]
    out, holes = [], []
    for part in parts:
        m = _GO_STRING.fullmatch(part)
        if m:
            out.append(unescape(m[1]) if m[1] is not None else m[2])
        else:
            if not out and not holes:
                return None
            out.append("\x01")
            holes.append(part)
    if not any(_GO_STRING.fullmatch(p) for p in parts):
        return None
    return "".join(out), holes


def _split_plus(expr: str) -> list[str]:
    parts, depth, current, i = [], 0, [], 0
    while i < len(expr):
        c = expr[i]
        if c in "\"`":
            j = expr.find(c, i + 1) if c == "`" else i + 1
            if c == '"':
                while j < len(expr) and expr[j] != '"':
                    j += 2 if expr[j] == "\\" else 1
            current.append(expr[i:j + 1])
            i = j + 1
            continue
        if c in _OPEN:
            depth += 1
        elif c in _CLOSE:
            depth -= 1
        if c == "+" and depth == 0:
            parts.append("".join(current))
            current = []
        else:
            current.append(c)
        i += 1
    parts.append("".join(current))
    return parts


_GO_LEVELS = {"LogLevelDebug": "DEBUG", "LogLevelInfo": "INFO", "LogLevelWarn": "WARN", "LogLevelError": "ERROR"}
_FRANZ_CALL = regex.compile(r"\blogger\.Log\(")
_SARAMA_CALL = regex.compile(r"\b(Logger|DebugLogger)\.(Printf|Println|Print)\(")
_KAFKAGO_CALL = regex.compile(r"\b(\w+)\.(Printf|Println|Print)\(")
_KAFKAGO_SCOPE = regex.compile(r"\b(withLogger|withErrorLogger|log|logError)\(func\((\w+) \*?(?:log\.)?Logger\)")


def extract_go(client: str, version: str, path: str, text: str, keep: str | None) -> list[Row]:
    code = strip_c_comments(text, quotes="\"`")
    rows: list[Row] = []
    if client == "franz-go":
        for m in _FRANZ_CALL.finditer(code):
            args, _ = split_args(code, m.end() - 1, quotes="\"`'")
            if len(args) < 2 or args[0] not in _GO_LEVELS:
                continue
            lit = go_literal(args[1])
            if lit is None:
                continue
            message, holes = lit
            keys, values = [], []
            for k, v in zip(args[2::2], args[3::2]):
                key = _GO_STRING.fullmatch(k.strip())
                keys.append(key[1] if key and key[1] is not None else k.strip())
                values.append(v.strip())
            # kgo.BasicLogger's rendering: "[LEVEL] msg; key: value, key: value".
            template = message.replace("\x01", "{}") + ("; " + ", ".join(f"{k}: {{}}" for k in keys) if keys else "")
            if keep and not regex.search(keep, template):
                continue
            rows.append(Row(client, version, path, line_of(code, m.start()), _GO_LEVELS[args[0]], template,
                            logger="kgo", params=holes + values, types=["text"] * (len(holes) + len(values)),
                            keys=keys, notes="prefix: none; as kgo.BasicLogger prints it: [LEVEL] msg; key: value, ..."))
        return rows
    calls = _SARAMA_CALL if client == "sarama" else _KAFKAGO_CALL
    scopes = [(s.start(), s[1], s[2]) for s in _KAFKAGO_SCOPE.finditer(code)]
    for m in calls.finditer(code):
        if client == "kafka-go":
            scope = next(((at, kind) for at, kind, var in reversed(scopes) if at < m.start() and var == m[1]
                          and m.start() - at < 600), None)
            if scope is None:
                continue
            level = "ERROR" if scope[1] in ("withErrorLogger", "logError") else "INFO"
            logger = "ErrorLogger" if level == "ERROR" else "Logger"
        else:
            level = "DEBUG" if m[1] == "DebugLogger" else "INFO"
            logger = m[1]
        args, _ = split_args(code, m.end() - 1, quotes="\"`'")
        if not args:
            continue
        lit = go_literal(args[0])
        if lit is None:
            continue
        message, holes = lit
        if m[2] == "Printf":
            template, params, types = go_format(message.replace("\x01", "{}"), args[1:])
            params = holes + params
            types = ["text"] * len(holes) + types
        else:
            template = " ".join([message.replace("\x01", "{}")] + ["{}"] * (len(args) - 1))
            params, types = holes + args[1:], ["text"] * (len(holes) + len(args) - 1)
        template = template.rstrip("\n")
        if keep and not regex.search(keep, template):
            continue
        prefix = "[Sarama] <date> <time> (log.LstdFlags)" if client == "sarama" else "whatever the Logger given adds"
        rows.append(Row(client, version, path, line_of(code, m.start()), level, template, logger=logger,
                        params=params, types=types, notes=f"prefix: {prefix}; {m[2]}"))
    return rows


_GO_ERROR_METHOD = regex.compile(r"func \((\w+) \*?(\w+)\) Error\(\) string \{\s*return fmt\.Sprintf\(")


def extract_go_errors(client: str, version: str, path: str, text: str, logged_by: str,
                      constants: list[str] = ()) -> list[Row]:
    """The lines a Go client writes when it logs an error value whole (sarama's consumerGroup.handleError:
    ``Logger.Println(err)`` when Consumer.Return.Errors is false, the default; kafka-go's Reader: its ErrorLogger's
    ``Printf("%v", err)``): the formats of the Error() methods of the error types in ``path`` (``kafka: error while
    consuming %s/%d: %s``), as composed rows. An error type that is a protocol error code whose Error() spells
    its own Title() and Description() (kafka-go's ``[%d] %s: %s``) is composed for each of ``constants``, from the
    code and the literals those methods return for it (``[25] Unknown Member ID: the member id is not in ...``)."""
    code = strip_c_comments(text, quotes="\"`")
    rows: list[Row] = []
    prefix = "[Sarama] <date> <time> (log.LstdFlags)" if client == "sarama" else "whatever the Logger given adds"
    for m in _GO_ERROR_METHOD.finditer(code):
        args, _ = split_args(code, m.end() - 1, quotes="\"`'")
        lit = go_literal(args[0]) if args else None
        if lit is None or lit[1]:
            continue
        notes = f"prefix: {prefix}; the {m[2]} logged whole: {logged_by}"
        own = [a.strip() for a in args[1:]]
        if constants and own and own[0] == m[1] and all(regex.fullmatch(rf"{m[1]}\.\w+\(\)", a) for a in own[1:]):
            for name in constants:
                value = regex.search(rf"\b{name}\s+{m[2]}\s*=\s*(-?\d+)", code)
                said = [_go_case(code, m[2], a.split(".")[1].rstrip("()"), name) for a in own[1:]]
                if value is None or None in said:
                    continue
                parts = iter([value[1], *said])
                template = regex.sub(r"%[-+# 0-9.]*[a-zA-Z]", lambda _: next(parts), lit[0])
                rows.append(Row(client, version, path, line_of(code, value.start()), "INFO", template,
                                logger="ErrorLogger" if client == "kafka-go" else "Logger", kind="composed",
                                notes=f"{notes} ({name})"))
            continue
        template, params, types = go_format(lit[0], args[1:])
        rows.append(Row(client, version, path, line_of(code, m.start()), "INFO", template, logger="Logger",
                        params=params, types=types, kind="composed", notes=notes))
    return rows


def _go_case(code: str, type_name: str, method: str, constant: str) -> str | None:
    """The literal ``func (e T) method() string`` returns for ``case constant:``."""
    start = regex.search(rf"func \(\w+ \*?{type_name}\) {method}\(\) string \{{", code)
    if start is None:
        return None
    found = regex.compile(rf"case {constant}:\s*return \"((?:[^\"\\]|\\.)*)\"").search(code, start.end())
    return unescape(found[1]) if found else None


# ---------------------------------------------------------------------------------------------
# JavaScript: KafkaJS

_JS_CALL = regex.compile(r"\blogger\.(info|warn|error|debug)\(")
_JS_NAMESPACE = regex.compile(r"\.namespace\(\s*['\"](\w+)['\"]")
_JS_STRING = regex.compile(r"'((?:[^'\\]|\\.)*)'|\"((?:[^\"\\]|\\.)*)\"|`((?:[^`\\]|\\.)*)`", regex.DOTALL)


def extract_js(client: str, version: str, path: str, text: str, keep: str | None) -> list[Row]:
    code = strip_c_comments(text, quotes="\"'`")
    namespace = _JS_NAMESPACE.search(code)
    prefix = f"[{namespace[1]}] " if namespace else ""
    rows = []
    for m in _JS_CALL.finditer(code):
        args, _ = split_args(code, m.end() - 1)
        if not args:
            continue
        lit = _JS_STRING.fullmatch(args[0].strip())
        if lit is None:
            continue
        params: list[str] = []
        if lit[3] is not None:
            body = lit[3]
            params = regex.findall(r"\$\{([^}]*)\}", body)
            message = regex.sub(r"\$\{[^}]*\}", "{}", body)
        else:
            message = unescape(lit[1] if lit[1] is not None else lit[2])
        keys = _js_object_keys(args[1]) if len(args) > 1 else []
        template = prefix + message
        if keep and not regex.search(keep, template + " " + " ".join(keys)):
            continue
        rows.append(Row(client, version, path, line_of(code, m.start()), m[1].upper(), template, logger="kafkajs",
                        params=params, types=["text"] * len(params), keys=keys,
                        notes=f"prefix: {prefix or 'none'}; JSON line: the keys are extra fields beside message"))
    return rows


def _js_object_keys(expr: str) -> list[str]:
    expr = expr.strip()
    if not expr.startswith("{"):
        return [f"...{expr}"]
    entries, _ = split_args("(" + expr[1:].rstrip()[:-1] + ")", 0)
    keys = []
    for entry in entries:
        entry = entry.strip()
        if entry.startswith("..."):
            keys.append(entry)
        else:
            keys.append(regex.split(r"\s*:", entry, maxsplit=1)[0].strip().strip("'\""))
    return keys


# ---------------------------------------------------------------------------------------------
# Erlang: brod

_ERL_LEVEL = {"info": "INFO", "warning": "WARNING", "error": "ERROR", "debug": "DEBUG", "notice": "NOTICE"}
_ERL_CALL = regex.compile(r"(?:\?BROD_LOG_(INFO|WARNING|ERROR|DEBUG)|\?BROD_LOG|brod_utils:log|error_logger:(info|warning|error)_msg"
                          r"|logger:(info|warning|error|debug|notice)|\blog)\(")
_ERL_STRING = regex.compile(r'"((?:[^"\\]|\\.)*)"', regex.DOTALL)
_ERL_HEADER = regex.compile(r"^log\(#state\{.*?->\s*(?:\?BROD_LOG|brod_utils:log)\(\s*\w+,\s*((?:\"(?:[^\"\\]|\\.)*\"\s*)+)\+\+\s*Fmt",
                            regex.DOTALL | regex.MULTILINE)


def erl_strings(expr: str) -> str | None:
    expr = expr.strip()
    if not expr.startswith('"'):
        return None
    parts = _ERL_STRING.findall(expr)
    rest = _ERL_STRING.sub("", expr).strip()
    if rest:
        return None
    return "".join(unescape(p) for p in parts)


def extract_erlang(client: str, version: str, path: str, text: str, keep: str | None) -> list[Row]:
    code = regex.sub(r"%[^\n]*", lambda m: " " * len(m.group()), _blank_erl_strings_percent(text))
    header_m = _ERL_HEADER.search(code)
    header = erl_strings(header_m[1]) if header_m else None
    rows = []
    for m in _ERL_CALL.finditer(code):
        args, _ = split_args(code, m.end() - 1, quotes='"')
        level = None
        fmt_at = 0
        composed = False
        if m[1]:
            level = _ERL_LEVEL[m[1].lower()]
        elif m.group().startswith(("?BROD_LOG(", "brod_utils:log(")):
            if not args or args[0].strip() not in _ERL_LEVEL:
                continue
            level, fmt_at = _ERL_LEVEL[args[0].strip()], 1
        elif m[2] or m[3]:
            level = _ERL_LEVEL[m[2] or m[3]]
        else:  # log(State, Level, Fmt, Args): brod_group_coordinator's own helper
            if header is None or len(args) < 4 or args[1].strip() not in _ERL_LEVEL:
                continue
            level, fmt_at, composed = _ERL_LEVEL[args[1].strip()], 2, True
        if len(args) <= fmt_at:
            continue
        fmt = erl_strings(args[fmt_at])
        if fmt is None:
            continue
        values = _erl_list(args[fmt_at + 1]) if len(args) > fmt_at + 1 else []
        if composed:
            fmt = header + fmt
            values = ["GroupId", "self()", "MemberPid", "GenerationId"] + values
        template, params, types = erl_format(fmt, values)
        if keep and not regex.search(keep, template):
            continue
        notes = "prefix: none; the logger's header line comes before the message (lager/logger)"
        if composed:
            notes += "; composed: log/4 puts 'Group member (...)' in front of the format"
        rows.append(Row(client, version, path, line_of(code, m.start()), level, template.rstrip("\n"),
                        logger=Path(path).stem, params=params, types=types, notes=notes))
    return rows


def _blank_erl_strings_percent(text: str) -> str:
    """'%' inside Erlang strings is not a comment: hide it from the comment stripper."""
    return _ERL_STRING.sub(lambda m: m.group().replace("%", "\x02"), text)


def _erl_list(expr: str) -> list[str]:
    expr = expr.strip()
    if expr.startswith("[") and expr.endswith("]"):
        inner, _ = split_args("(" + expr[1:-1] + ")", 0, quotes='"')
        return inner
    return [expr]


# ---------------------------------------------------------------------------------------------
# Ruby: ruby-kafka

_RB_CALL = regex.compile(r"@?logger\.(debug|info|warn|error|fatal)\b\s*\(?\s*(?=[\"'])")


def _ruby_string(code: str, start: int) -> tuple[str, list[str], int] | None:
    quote = code[start]
    out, params = [], []
    i = start + 1
    while i < len(code):
        c = code[i]
        if c == "\\":
            out.append(unescape(code[i:i + 2]) if quote == '"' else code[i + 1])
            i += 2
            continue
        if c == quote:
            return "".join(out), params, i + 1
        if quote == '"' and code.startswith("#{", i):
            depth, j = 1, i + 2
            while j < len(code) and depth:
                depth += {"{": 1, "}": -1}.get(code[j], 0)
                j += 1
            params.append(code[i + 2:j - 1])
            out.append("{}")
            i = j
            continue
        out.append(c)
        i += 1
    return None


def extract_ruby(client: str, version: str, path: str, text: str, keep: str | None) -> list[Row]:
    rows = []
    for m in _RB_CALL.finditer(text):
        found = _ruby_string(text, m.end())
        if found is None:
            continue
        template, params, _ = found
        if keep and not regex.search(keep, template):
            continue
        notes = "prefix: the TaggedLogger's tags, e.g. [[<group>] {<partitions>}:] [<api>] "
        rows.append(Row(client, version, path, line_of(text, m.start()), m[1].upper().replace("WARN", "WARN"),
                        template, logger=None, params=params, types=["text"] * len(params), notes=notes))
    return rows


EXTRACTORS = {"c": extract_c, "python": extract_python, "go": extract_go, "javascript": extract_js,
              "erlang": extract_erlang, "ruby": extract_ruby}


# ---------------------------------------------------------------------------------------------


def extract_client(name: str, spec: dict, mirrors: Path) -> list[Row]:
    owner, repo_name = spec["repo"].split("/")
    repo = Repo(mirrors / f"{owner}+{repo_name}" / "repo")
    extractor = EXTRACTORS[spec["language"]]
    rows: list[Row] = []
    for tag in spec["versions"]:
        commit = repo.commit(tag)
        version = tag.removeprefix("v")
        listed = repo.files(tag)
        for path in sorted(p for p in listed if any(fnmatch.fnmatchcase(p, g) for g in spec.get("error_types", []))):
            for row in extract_go_errors(name, version, path, repo.read(tag, path), spec.get("error_logged_by", ""),
                                         spec.get("compose_errors", [])):
                row.commit = commit
                rows.append(row)
        for globs, keep in ((spec.get("files", []), None), (spec.get("filtered", []), spec.get("keep") or None)):
            for path in sorted(p for p in listed if any(fnmatch.fnmatchcase(p, g) for g in globs)):
                text = repo.read(tag, path)
                found = extractor(name, version, path, text, keep)
                if path in spec.get("compose_files", []) and spec.get("compose_request_names"):
                    found += compose_requests(name, version, path, text, spec["compose_request_names"],
                                              spec.get("compose_facilities", []))
                for row in found:
                    row.commit = commit
                rows.extend(found)
    return _dedupe(rows)


def _dedupe(rows: list[Row]) -> list[Row]:
    """One row per (version, file, level, facility, logger, template, kind); the first line kept."""
    seen: dict[tuple, Row] = {}
    for row in rows:
        key = (row.version, row.file, row.level, row.facility, row.logger, row.template, row.kind)
        if key not in seen:
            seen[key] = row
    return sorted(seen.values(), key=lambda r: (_version_key(r.version), r.file, r.line, r.template, r.level))


def _version_key(version: str) -> tuple[int, ...]:
    return tuple(int(p) for p in regex.findall(r"\d+", version))


_ERR_DESC = regex.compile(r'_ERR_DESC\(\s*RD_KAFKA_RESP_ERR_(\w+)\s*,\s*((?:"(?:[^"\\]|\\.)*"\s*)+)\)')
_ERR_CODE = regex.compile(r"RD_KAFKA_RESP_ERR_(\w+)\s*=\s*(-?\d+)")


def error_names(mirrors: Path) -> dict[str, dict[str, str]]:
    """How each client writes Kafka's protocol errors, to their Kafka names (UNKNOWN_MEMBER_ID):
    librdkafka's error strings ("Broker: Unknown member", rd_kafka_err_descs in rdkafka.c), the
    protocol error codes (rdkafka.h's enum: "[25]" in kafka-go's errors, "[Error 25]" in
    kafka-python's), and kafka-python's error classes (kafka/errors.py: UnknownMemberIdError)."""
    config = load_toml(CONFIG)["client"]
    rd = Repo(mirrors / "confluentinc+librdkafka" / "repo")
    tag = config["librdkafka"]["versions"][-1]
    names: dict[str, str] = {}
    for m in _ERR_DESC.finditer(rd.read(tag, "src/rdkafka.c")):
        if not m[1].startswith("_"):   # "_"-prefixed: librdkafka's local errors, no protocol error
            names[c_literal(m[2])] = m[1]
    codes = {m[2]: m[1] for m in _ERR_CODE.finditer(rd.read(tag, "src/rdkafka.h"))
             if not m[1].startswith("_") and int(m[2]) > 0}
    kp = Repo(mirrors / "dpkp+kafka-python" / "repo")
    classes: dict[str, str] = {}
    tree = ast.parse(kp.read(config["kafka-python"]["versions"][-1], "kafka/errors.py"))
    for node in tree.body:
        if isinstance(node, ast.ClassDef):
            values = {t.id: v.value for n in node.body if isinstance(n, ast.Assign)
                      for t in n.targets if isinstance(t, ast.Name) and isinstance(n.value, ast.Constant)
                      for v in [n.value]}
            if isinstance(values.get("message"), str) and regex.fullmatch(r"[A-Z_]+", values["message"]):
                classes[node.name] = values["message"]
    return {"descriptions": dict(sorted(names.items())), "codes": dict(sorted(codes.items(), key=lambda kv: int(kv[0]))),
            "classes": dict(sorted(classes.items()))}


def write_errors(tables: dict[str, dict[str, str]]) -> Path:
    """patterns/clients/errors.toml (TOML: shipped with the packs to wherever the core runs)."""
    path = patterns_dir() / "clients" / "errors.toml"
    out = ["# GENERATED by `python -m rebalance_doctor.packgen.client_sources`: Kafka's protocol errors as the",
           "# clients write them (core/errors.py reads this)."]
    for table, entries in tables.items():
        out.append(f"\n[{table}]")
        out += [f"{json.dumps(key, ensure_ascii=False)} = {json.dumps(value)}" for key, value in entries.items()]
    path.write_text("\n".join(out) + "\n", encoding="utf-8")
    return path


def inventory_path(client: str) -> Path:
    return patterns_dir() / "clients" / f"{client}.jsonl"


def write(client: str, rows: list[Row]) -> Path:
    path = inventory_path(client)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8") as handle:
        for row in rows:
            handle.write(json.dumps(asdict(row), ensure_ascii=False) + "\n")
    return path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mirrors", type=Path, required=True, help="directory of <owner>+<name>/repo git mirrors")
    parser.add_argument("--client", action="append", help="only this client (repeatable)")
    args = parser.parse_args(argv)
    config = load_toml(CONFIG)["client"]
    write_errors(error_names(args.mirrors))
    for name, spec in config.items():
        if args.client and name not in args.client:
            continue
        rows = extract_client(name, spec, args.mirrors)
        path = write(name, rows)
        versions = sorted({r.version for r in rows}, key=_version_key)
        print(f"{name}: {len(rows)} rows, {len({r.template for r in rows})} templates, versions {', '.join(versions)}"
              f" -> {path}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

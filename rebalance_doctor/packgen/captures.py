"""How a generated pattern reads one placeholder: a sub-regex per kind, wrapped per Java/Scala type.

The placeholder's kind (``params.py``) says what the value holds and which column it fills; its type
(``argtypes.py``) says how it is printed: ``Some(x)`` / ``Optional[x]`` around it, a
``MemberMetadata(...)`` whose parts fill member, client, client host and instance, a Scala
``Set(...)`` instead of Java's ``[...]``. Captures are lazy: the literal text after a placeholder
ends it. Where the releases of one template print a placeholder with different types, the capture
is the alternation of each type's.
"""

from __future__ import annotations

import regex

from ..core.schema import LIST_COLUMNS
from .params import KINDS, Slot
from .values import (DEFAULT_TYPES, JAVA_COLLECTIONS, JAVA_MAPS, SCALA_MAPS, SCALA_SEQS, SCALA_SETS, TypeRef,
                     parse_type)

OBJECT_TOKENS = {"TaskId", "TopicPartition", "Uuid", "UUID", "ProcessId", "ConnectorTaskId", "String"}

# A member id. A Java client's is its client.id (a static member's: its group.instance.id), "-" and a
# UUID, and client.id may hold any character (ConsumerConfig puts no validator on it): spaces, quotes,
# brackets, pipes, commas. Such an id is read up to the first UUID that ends it (no word character or
# hyphen after it), never beyond (an atomic group: a failing line tries no other split); ``temper_ids`` then keeps it from running over the template's text that follows it,
# so a later id in the line is never reached. Otherwise: a token, or a non-Java client's id with a space
# and parentheses in it ("main@host (github.com/segmentio/kafka-go)-<uuid>").
UUID = r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"
SPELLED_ID = r"(?>\S[^\n]*?-" + UUID + r"(?![\w-]))"   # atomic: the first UUID that ends it, no other
TOKEN_ID = r"[^\s(]\S*?(?: \([^()\s]*\)\S*?)?"
MEMBER_ID = f"(?:{SPELLED_ID}|{TOKEN_ID})"
# An instance id as every type prints it: Scala Some(x) / None, Java Optional[x] / Optional.empty, a
# nullable String ("null"), or a ".orElse(\"None\")".
INSTANCE = (r"(?:Some\((?P<instance>[^()]*)\)|Optional\[(?P<instance>[^\[\]]*)\]|None|null|Optional\.empty|"
            r"(?P<instance>\S+?))")
KIND_CAPTURES = {**{k: v[1] for k, v in KINDS.items()}, "id": MEMBER_ID,
                 "instance": INSTANCE}
GENERATION = ("(?:Generation\\{generationId=(?P<generation>-?\\d+), memberId=\\x27(?P<member>.*?)\\x27, "
              "protocol=\\x27(?P<protocol>[^\\x27]*)\\x27\\}|(?P<generation>-?\\d+)|.+?)")
# The Scala coordinator's MemberMetadata (2.x ends its protocol list with ", ") and the Java
# coordinator's ClassicGroupMember / GenericGroupMember: what they carry, named.
MEMBER_METADATA = (r"MemberMetadata\(memberId=(?P<member>.*?), groupInstanceId=(?:Some\((?P<instance>.*?)\)|None), "
                   r"clientId=(?P<client>.*?), clientHost=(?P<client_host>.*?), sessionTimeoutMs=(?P<session_timeout_ms>\d+), "
                   r"rebalanceTimeoutMs=(?P<rebalance_timeout_ms>\d+), supportedProtocols=List\((?P<protocols>[^()]*)\)(?:, )?\)")
CLASSIC_MEMBER = (r"(?:Classic|Generic)GroupMember\(memberId=\x27(?P<member>.*?)\x27, "
                  r"groupInstanceId=\x27(?:(?P<instance>[^\x27]+)|)\x27, clientId=\x27(?P<client>.*?)\x27, "
                  r"clientHost=\x27(?P<client_host>[^\x27]*)\x27, rebalanceTimeoutMs=(?P<rebalance_timeout_ms>\d+), "
                  r"sessionTimeoutMs=(?P<session_timeout_ms>\d+), protocolType=\x27[^\x27]*\x27, "
                  r"supportedProtocols=\[(?P<protocols>[^\]]*)\]\)")
_OPEN_KINDS = ("text", "error", "any", "joined")


def capture(slot: Slot | None, last: bool = False, member_elsewhere: bool = False) -> str:
    """The sub-regex of one placeholder (named after its field when it has one). ``member_elsewhere``:
    another placeholder states the member, so a Generation's member id is not read as it."""
    if slot is None:
        return ".*?"
    sub = _typed(parse_type(slot.type or DEFAULT_TYPES[slot.kind]), slot, last)
    if member_elsewhere and sub == GENERATION:
        sub = sub.replace("(?P<member>", "(?:")
    return sub


def union(variants: list[Slot], last: bool = False, member_elsewhere: bool = False) -> str:
    """One placeholder printed with several types across releases: any of their captures."""
    seen: list[str] = []
    for slot in variants:
        sub = capture(slot, last, member_elsewhere)
        if sub not in seen:
            seen.append(sub)
    if len(seen) == 1:
        return seen[0]
    # Wrapped forms first: a bare capture would take "Some(x)" whole.
    seen.sort(key=lambda s: s.startswith("(?P<"))
    return "(?:" + "|".join(seen) + ")"


def _typed(t: TypeRef, slot: Slot, last: bool) -> str:
    """The type's form, then the kind's plain one: a type read wrong from the source, or a wrapper
    some build prints otherwise, still reads (the typed form is tried first, so it extracts what
    an object carries)."""
    plain = _plain(slot, last)
    typed = _typed_form(t, slot, last)
    if typed is None or typed == plain or typed == GENERATION:
        return typed or plain
    return f"(?:{typed}|{plain})"


def _typed_form(t: TypeRef, slot: Slot, last: bool) -> str | None:
    name, kind = slot.field, slot.kind
    if name == "member" or kind == "id":
        if t.name == "MemberMetadata":
            return MEMBER_METADATA if name == "member" else _unnamed(MEMBER_METADATA)
        if t.name in ("ClassicGroupMember", "GenericGroupMember"):
            return CLASSIC_MEMBER if name == "member" else _unnamed(CLASSIC_MEMBER)
    if kind == "generation" and name == "generation" and t.name == "Generation":
        return GENERATION
    if t.name in ("Optional", "OptionalInt", "OptionalLong") or (t.scala and t.name == "Option"):
        inner = _plain(slot, last)
        if t.name == "Option":
            return f"(?:Some\\({inner}\\)|None)"
        return f"(?:{t.name}\\[{inner}\\]|{t.name}\\.empty)"
    if len(t.args) == 2 and (t.name in JAVA_MAPS or (t.scala and t.name in SCALA_MAPS)):
        # A map's text is no list of partitions or tasks: read it whole into an attr, or not at all.
        sub = r"Map\(.*?\)" if t.scala else r"\{.*?\}"
        if last:
            sub = r"Map\(.*\)" if t.scala else r"\{.*\}"
        return f"(?P<{name}>{sub})" if name and name not in LIST_COLUMNS else f"(?:{sub})"
    if kind in ("int", "count", "ms") and t.name in OBJECT_TOKENS:
        # An int-sounding expression that is an object (a TaskId "id", a Uuid): a token.
        return f"(?P<{name}>\\S+?)" if name else r"\S+?"
    if t.scala and t.args and (t.name in SCALA_SETS or t.name in SCALA_SEQS):
        head = r"(?:Hash)?Set" if t.name in SCALA_SETS else r"(?:List|ArrayBuffer|Vector)"
        inner = r"(?:[^()]|\([^()]*\))*"     # a member id may hold "(...)"
        return f"{head}\\((?P<{name}>{inner})\\)" if name else f"{head}\\({inner}\\)"
    if t.name in JAVA_COLLECTIONS and t.args and kind not in ("list", "tasks", "joined"):
        sub = r"\[[^\]]*\]"
        return f"(?P<{name}>{sub})" if name else sub
    return None


def _plain(slot: Slot, last: bool) -> str:
    sub = KIND_CAPTURES[slot.kind]
    if slot.kind in _OPEN_KINDS and last:
        sub = ".*"
    if slot.kind == "instance":
        return sub if slot.field == "instance" else _unnamed(sub)
    if slot.field is None:
        return f"(?:{sub})"
    return f"(?P<{slot.field}>{sub})"


def _unnamed(sub: str) -> str:
    return regex.sub(r"\(\?P<\w+>", "(?:", sub)



# A lazy run of non-space characters that whitespace or the text's end must follow ends where a
# greedy run ends, at the first whitespace: the same match, found in one step instead of by
# trying the rest of the regex after every character (~5x faster on a 60-character member id).
_LAZY_RUN = regex.compile(r"(?<!\\)\\S([+*])\?")
_CLOSING = ("))?", ")?", ")")   # groups that close after the run (not repeated ones)
_SPACE = (" ", "\\x20", "\\s", "\\n", "\\t")   # one whitespace character, unless a quantifier follows
_END = ("(?=\\s|$)", "\\s*(?:\\n[\\s\\S]*)?$", "$")
# A member id's first run is followed by its " (client)" suffix group, then by what follows the id.
_MEMBER_ID_HALF_GREEDY = TOKEN_ID.replace(r")\S*?)?", r")\S*)?")
_MEMBER_ID_GREEDY = _MEMBER_ID_HALF_GREEDY.replace(r"\S*?(?: ", r"\S*(?: ")


def _past_closings(source: str, rest: int) -> int:
    """Where ``source`` goes on after the group closings (unquantified) that begin at ``rest``."""
    while True:
        for closing in _CLOSING:
            if source.startswith(closing, rest) and not source.startswith(("*", "+", "{"), rest + len(closing)):
                rest += len(closing)
                break
        else:
            return rest


def greedy_runs(source: str) -> str:
    """``source`` with each lazy ``\\S+?`` / ``\\S*?`` that only whitespace or the end can follow
    made greedy (``\\S+`` / ``\\S*``): a regex that matches the same texts the same way, faster."""
    out, last = [], 0
    for m in _LAZY_RUN.finditer(source):
        rest = m.end()
        rest = _past_closings(source, rest)
        spaced = any(source.startswith(space, rest) and not source.startswith(("*", "?", "{"), rest + len(space))
                     for space in _SPACE)
        if spaced or source.startswith(_END, rest):
            out.append(source[last:m.start()] + "\\S" + m.group(1))
            last = m.end()
    return ("".join(out) + source[last:]).replace(_MEMBER_ID_HALF_GREEDY, _MEMBER_ID_GREEDY)


_SPELLED_RUN = r"\S[^\n]*?-" + UUID
_SPELLED_END = r"(?![\w-]))"
_TOKEN_FORMS = (TOKEN_ID, _MEMBER_ID_HALF_GREEDY, _MEMBER_ID_GREEDY)


def temper_ids(source: str) -> str:
    """``source`` with each spelled member id (``SPELLED_ID``) kept from running over the literal
    text that follows the id in the template (``Member X in group``: the id holds no " in group"), so
    a line naming two ids gives the first whole and never the text between them."""
    out, last, at = [], 0, source.find(_SPELLED_RUN)
    while at >= 0:
        rest = at + len(_SPELLED_RUN) + len(_SPELLED_END)
        for token in _TOKEN_FORMS:
            if source.startswith("|" + token + ")", rest):
                rest += len(token) + 2
                break
        rest = _past_closings(source, rest)
        literal = ""
        for piece in _LITERAL_RUN.finditer(source, rest):
            if piece.start() != rest + len(literal) or len(literal) >= 12:
                break
            literal += piece.group()
        # A literal of a character or two ("." at the end of a sentence) may be inside the id itself.
        plain = regex.sub(r"\\x[0-9a-fA-F]{2}|\\.", "_", literal)
        if len(plain.strip("_")) >= 3 and not source.startswith(("*", "+", "?", "{"), rest + len(literal)):
            out.append(source[last:at] + f"\\S(?:(?!{literal})[^\\n])*?-")
            last = at + len(r"\S[^\n]*?-")
        at = source.find(_SPELLED_RUN, at + 1)
    return "".join(out) + source[last:]


def seal_free_repeats(source: str) -> str:
    """``source`` with every free repeat but the last sealed with the literal text that ends it
    in an atomic group: ``(?:.*?) in state `` becomes ``(?>(?:.*?) in state )``, a value that
    runs to the first occurrence of what ends it. Two free repeats on one path try every split
    of a line between them when the regex fails at its end, and a line holding many records (an
    HTML report of an earlier run, a log that lost its line ends) has one split per record:
    ``patterns check`` rejects them (``regex_lint``, "stacked"). A free repeat that no literal
    text follows, or one in a lookahead, is left as it is."""
    tail = _TAIL if source.endswith(_TAIL) else ""
    source = source[:len(source) - len(tail)]   # what may follow the message: never sealed
    found = []   # (start of the seal, end of the repeat, end of the literal after it, in a lookahead)
    opened: list[int] = []   # where each group that is open at ``index`` opens
    index = 0
    while index < len(source):
        char = source[index]
        if char == "\\":
            index += 4 if source.startswith("x", index + 1) else 2
            continue
        if char == "[" and not source.startswith("[\\s\\S]", index):
            close = index + 1 + (source[index + 1] == "^")
            close += source[close] == "]"
            while source[close] != "]":
                close += 2 if source[close] == "\\" else 1
            index = close + 1
            continue
        m = _FREE_AT.match(source, index)
        if m is None:
            if char == "(":
                opened.append(index)
            elif char == ")" and opened:
                opened.pop()
            index += 1
            continue
        start, end, depth = m.start(), m.end(), len(opened)
        # A free repeat that ends its group (an alternative: "(?:\{...\}|(?P<x>.*?)), next"):
        # the seal takes in the group, up to the literal after it.
        while depth and source.startswith(")", end) and not source.startswith(("*", "+", "?", "{"), end + 1) \
                and not source.startswith(("(?=", "(?!", "(?>"), opened[depth - 1]):
            depth -= 1
            start, end = opened[depth], end + 1
        literal = []
        for piece in _LITERAL_RUN.finditer(source, end):
            if piece.start() != (literal[-1].end() if literal else end):
                break
            literal.append(piece)
        if literal and source.startswith(("*", "+", "?", "{"), literal[-1].end()):
            literal.pop()   # the last character is repeated: not a literal that ends the value
        inside = any(source.startswith(("(?=", "(?!", "(?>"), at) for at in opened[:depth] + [start - 3])
        found = [f for f in found if f[0] < start]   # a seal that takes in a group takes in its seals
        found.append((start, end, literal[-1].end() if literal else None, inside))
        index = m.end()
    sealable = [f for f in found[:-1] if f[2] is not None and not f[3]]
    out, last = [], 0
    for start, _, stop, _ in sealable:
        out.append(source[last:start] + "(?>" + source[start:stop] + ")")
        last = stop
    return "".join(out) + source[last:] + tail


_TAIL = r"\s*(?:\n[\s\S]*)?$"
_FREE_AT = regex.compile(r"\(\?(?:P<\w+>|:)(?:\.|\[\\s\\S\])[*+]\??\)|(?:\.|\[\\s\\S\])[*+]\??")
_LITERAL_RUN = regex.compile(r"\\x[0-9a-fA-F]{2}|\\[nt]|\\[^A-Za-z0-9]|[^\\.^$*+?{}\[\]|()]")

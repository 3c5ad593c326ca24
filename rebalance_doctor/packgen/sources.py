"""Build the Kafka log-template inventory (``patterns/kafka/templates.jsonl``) from the releases'
``-sources`` jars on Maven Central.

    python -m rebalance_doctor.packgen.sources --out patterns/kafka
    python -m rebalance_doctor.packgen.sources --compare ../shared/kafka-templates/templates.jsonl

``sources.toml`` lists the releases, the artifacts (``kafka_2.13``, ``kafka-clients``,
``kafka-streams``, ``connect-runtime``, ``kafka-group-coordinator``, ``kafka-coordinator-common``)
and the classes whose group-membership lines are read, with their logger and prefix. For each
release the jars are downloaded once into ``~/.cache/rebalance-doctor/sources``; every log call of
the listed classes is read (``javalog``), kept when it is about group membership (``scope.toml``),
and written as one row per (component, class, level, template, logger, kind), with the 1-based
line of the call, the source expressions that fill each ``{}`` (``params``), ``kind: variant`` rows
spelling out a ternary of two literals, and ``kind: composed`` rows filling a reason placeholder
with the literal reasons passed to the methods that log it (``reasons.jsonl``).

A release whose ``-sources`` jars are not published (4.4.0) is read from a git mirror at the
commit pinned in ``sources.toml``; each of its rows is then kept only when every literal piece of
its template is a string constant of the release's binary jar (the class file's constant pool).
"""

from __future__ import annotations

import argparse
import io
import json
import os
import subprocess
import sys
import urllib.request
import zipfile
from collections import defaultdict
from pathlib import Path

import regex

from ..core.toml import load_toml
from . import javalog
from .inventory import version_key

CONFIG = Path(__file__).with_name("sources.toml")
SCOPE = Path(__file__).with_name("scope.toml")
CACHE = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "rebalance-doctor" / "sources"
MIRRORS = Path("/work/.mirror")


def config() -> dict:
    return load_toml(CONFIG)


def _in(version: str, since: str | None, until: str | None) -> bool:
    v = version_key(version)
    return (since is None or version_key(since) <= v) and (until is None or v <= version_key(until))


# ---------------------------------------------------------------------------------------------
# fetching


def _download(url: str, dest: Path) -> Path | None:
    if dest.is_file():
        return dest
    dest.parent.mkdir(parents=True, exist_ok=True)
    try:
        with urllib.request.urlopen(url, timeout=120) as response:
            data = response.read()
    except urllib.error.HTTPError as error:
        if error.code == 404:
            return None
        raise
    tmp = dest.with_suffix(".part")
    tmp.write_bytes(data)
    tmp.replace(dest)
    return dest


def jar(artifact: str, version: str, classifier: str = "sources") -> Path | None:
    """The artifact's jar for a release (cached), or None when Maven Central does not serve it."""
    name = f"{artifact}-{version}{'-' + classifier if classifier else ''}.jar"
    url = f"{config()['maven']}/{artifact}/{version}/{name}"
    return _download(url, CACHE / artifact / version / name)


class Release:
    """The source files of one release: repository-relative path -> text."""

    def __init__(self, version: str):
        self.version = version
        cfg = config()
        self.mirror = cfg.get("mirror", {}).get(version)
        self.files: dict[str, str] = {}
        self.reasons: list[dict] = []
        if self.mirror:
            repo = MIRRORS / self.mirror["repo"].replace("/", "+") / "repo"
            probe = subprocess.run(["git", "-C", str(repo), "cat-file", "-e", f"{self.mirror['commit']}^{{commit}}"],
                                   capture_output=True, text=True)
            if probe.returncode != 0:
                # every read would come back empty: the release would leave the inventory silently
                raise SystemExit(f"error: Kafka {version} is read from the {self.mirror['repo']} mirror at "
                                 f"{self.mirror['commit'][:12]}, which {repo} does not hold: fetch "
                                 f"github:{self.mirror['repo']} first")
            return
        for art in cfg["artifact"]:
            if not _in(version, art.get("since"), art.get("until")):
                continue
            path = jar(art["name"], version)
            if path is None:
                continue
            with zipfile.ZipFile(path) as z:
                for entry in z.namelist():
                    ext = entry.rsplit(".", 1)[-1]
                    root = art["root"].get(ext)
                    if root and "/" in entry:
                        self.files[f"{root}/{entry}"] = None    # read on demand
            self._jars = getattr(self, "_jars", {})
            self._jars[art["root"]["java"] if "java" in art["root"] else ""] = path
        if not self.files:
            # a release nothing can be read of must not leave the inventory silently without it
            raise SystemExit(f"error: Maven Central serves no -sources jar of Kafka {version} and sources.toml names "
                             f"no [mirror.\"{version}\"]: add a mirror at a pinned commit, or leave the release out")
        self._art_of = {}
        for art in cfg["artifact"]:
            if _in(version, art.get("since"), art.get("until")):
                for root in art["root"].values():
                    self._art_of[root] = art["name"]

    def read(self, path: str) -> str | None:
        if self.mirror:
            repo = MIRRORS / self.mirror["repo"].replace("/", "+") / "repo"
            out = subprocess.run(["git", "-C", str(repo), "show", f"{self.mirror['commit']}:{path}"],
                                 capture_output=True, text=True)
            return out.stdout if out.returncode == 0 else None
        for root, artifact in self._art_of.items():
            if path.startswith(root + "/"):
                p = jar(artifact, self.version)
                if p is None:
                    return None
                with zipfile.ZipFile(p) as z:
                    try:
                        return z.read(path[len(root) + 1:]).decode("utf-8")
                    except KeyError:
                        return None
        return None

    def constants(self, path: str) -> set[str] | None:
        """The string constants of the binary classes compiled from ``path`` (mirrored releases)."""
        cfg = config()
        for art in cfg["artifact"]:
            if not _in(self.version, art.get("since"), art.get("until")):
                continue
            for ext, root in art["root"].items():
                if path.startswith(root + "/"):
                    p = jar(art["name"], self.version, classifier="")
                    if p is None:
                        return None
                    stem = path[len(root) + 1:].rsplit(".", 1)[0]
                    found = set()
                    with zipfile.ZipFile(p) as z:
                        for entry in z.namelist():
                            if entry == stem + ".class" or entry.startswith(stem + "$"):
                                found |= class_strings(z.read(entry))
                    return found
        return None


def class_strings(data: bytes) -> set[str]:
    """The CONSTANT_Utf8 entries of a class file's constant pool."""
    import struct
    count = struct.unpack(">H", data[8:10])[0]
    i, k, out = 10, 1, set()
    sizes = {3: 4, 4: 4, 5: 8, 6: 8, 7: 2, 8: 2, 9: 4, 10: 4, 11: 4, 12: 4, 15: 3, 16: 2, 17: 4, 18: 4, 19: 2, 20: 2}
    while k < count:
        tag = data[i]
        if tag == 1:
            n = struct.unpack(">H", data[i + 1:i + 3])[0]
            out.add(_mutf8(data[i + 3:i + 3 + n]))
            i += 3 + n
        else:
            i += 1 + sizes[tag]
        k += 2 if tag in (5, 6) else 1
    return out


def _mutf8(raw: bytes) -> str:
    return raw.replace(b"\xc0\x80", b"\x00").decode("utf-8", errors="surrogatepass")


# ---------------------------------------------------------------------------------------------
# extraction


def classes_for(version: str) -> list[dict]:
    return [c for c in config()["class"] if _in(version, c.get("since"), c.get("until"))]


def _scala_objects(text: str) -> list[tuple[int, int]]:
    """Spans of top-level Scala ``object`` bodies (their logger is the class name with ``$``)."""
    spans = []
    for m in regex.finditer(r"(?m)^(?:private(?:\[\w+\])?\s+)?object\s+\w+[^{\n]*\{", text):
        depth, i = 0, m.end() - 1
        while i < len(text):
            c = text[i]
            if c == '"':
                i = javalog._skip_string(text, i)
                continue
            if c == "{":
                depth += 1
            elif c == "}":
                depth -= 1
                if depth == 0:
                    break
            i += 1
        spans.append((m.start(), i))
    return spans


def extract(release: Release, scope: "Scope | None" = None) -> list[dict]:
    rows: dict[tuple, dict] = {}
    for cls in classes_for(release.version):
        if cls.get("composed_only"):
            continue
        text = release.read(cls["file"])
        if text is None:
            continue
        if "built" in cls:
            m = regex.search(cls["built"]["anchor"], text)
            if m:
                row = {"version": release.version, "component": cls["component"], "class": cls["class"],
                       "file": cls["file"], "line": text.count("\n", 0, m.start()) + 1, "level": "INFO",
                       "template": cls["built"]["template"], "logger": cls["logger"], "notes": cls["notes"],
                       "kind": "log", "params": list(cls["built"]["params"]), "_built": True}
                rows[(release.version, cls["component"], cls["class"], "INFO", row["template"], row["logger"],
                      "log")] = row
            continue
        scala = cls["file"].endswith(".scala")
        objects = _scala_objects(text) if scala else []
        starts = [0] + [i + 1 for i, c in enumerate(text) if c == "\n"]
        for call in javalog.calls(text, scala):
            logger = cls["logger"]
            offset = starts[call.line - 1]
            if any(a <= offset <= b for a, b in objects):
                logger += "$"
            if scope is not None and not scope.keeps(cls, call.level, call.template):
                continue
            base_notes = [cls["notes"]] if cls["notes"] else []
            entries = [(call.template, call.params, "log", call.notes, None)]
            for template, params, note in call.variants:
                entries.append((template, params, "variant", call.notes + [note], call.template))
            for template, params, kind, notes, variant_of in entries:
                ternaries = call.ternaries if kind == "log" else []
                key = (release.version, cls["component"], cls["class"], call.level, template, logger, kind)
                if key in rows:
                    rows[key].setdefault("lines", [rows[key]["line"]]).append(call.line)
                    continue
                row = {"version": release.version, "component": cls["component"], "class": cls["class"],
                       "file": cls["file"], "line": call.line, "level": call.level, "template": template,
                       "logger": logger, "notes": "; ".join(base_notes + notes), "kind": kind,
                       "params": params}
                if variant_of is not None:
                    row["variant_of"] = variant_of
                if ternaries:
                    row["_ternaries"] = ternaries
                rows[key] = row
    release.reasons = compose(release, rows)
    out = list(rows.values())
    if release.mirror:
        out = [r for r in out if _in_binary(release, r)]
        release.reasons = [r for r in release.reasons if _pieces_in(release, r["file"], r["reason_template"])]
    return out


def compose(release: Release, rows: dict[tuple, dict]) -> list[dict]:
    """Fill the reason placeholders of the [[compose]] templates with the literal reasons passed in
    (rows added to ``rows``); returns the reasons.jsonl rows."""
    classes = {(c["component"], c["class"]): c for c in classes_for(release.version)}
    by_class = {c["class"]: c for c in classes_for(release.version)}
    reasons = []
    for rule in config().get("compose", []):
        target = classes.get((rule["component"], rule["class"]))
        if target is None:
            continue
        base_component = rule.get("base_component", rule["component"])
        pattern = regex.compile(rule["base"])
        bases = [r for r in list(rows.values()) if r["version"] == release.version and r["class"] == rule["class"]
                 and r["component"] == base_component and r["kind"] == "log" and pattern.search(r["template"])]
        if not bases:
            continue
        found = []
        for source in rule["from"]:
            cls = by_class.get(source)
            text = release.read(cls["file"]) if cls else None
            if text is None:
                continue
            scala = cls["file"].endswith(".scala")
            for method, positions in rule["methods"].items():
                for line, args, resolve in javalog.method_calls(text, scala, method):
                    for pos in positions:
                        if pos >= len(args):
                            continue
                        msg = javalog.evaluate(args[pos], scala, resolve)
                        if msg is None:
                            continue
                        params = msg.params if msg.own_params else []
                        found.append((cls, line, method, pos, msg.template, params))
                        reasons.append({"version": release.version, "component": cls["component"],
                                        "class": cls["class"], "file": cls["file"], "line": line, "method": method,
                                        "arg": pos, "reason_template": msg.template, "params": params,
                                        "used_in": " | ".join(sorted({b["template"] for b in bases}))})
        kind = rule.get("kind", "composed")
        for base in bases:
            pieces = base["template"].split("{}")
            slot = 0 if rule.get("fill") == "first" else len(pieces) - 2
            for cls, line, method, pos, reason, rparams in found:
                template = "{}".join(pieces[:slot + 1]) + reason + "{}".join(pieces[slot + 1:]) \
                    if len(pieces) > 2 else pieces[0] + reason + pieces[1]
                params = base["params"][:slot] + rparams + base["params"][slot + 1:]
                logger = target["logger"]
                where = f"{cls['file']}:{line}"
                if kind == "log":
                    notes = base["notes"].split("; ")[:1] + [f"helper {method}(message, ...) -> {_q(base['template'])} "
                                                             f"at {base['file']}:{base['line']}; message at {where}"]
                    row = dict(base, line=line, template=template, params=params, logger=logger,
                               notes="; ".join(notes), kind="log",
                               _parts=[(base["file"], base["template"]), (cls["file"], reason)])
                else:
                    notes = [target["notes"]] if target["notes"] else []
                    notes.append(f"composed: base template at {base['file']}:{base['line']} with the literal reason "
                                 f"passed to {method}() at {where}")
                    row = dict(base, component=rule["component"], template=template, params=params, logger=logger,
                               notes="; ".join(notes), kind="composed",
                               composed_from={"base_template": base["template"], "reason_file": cls["file"],
                                              "reason_line": line, "reason_method": method,
                                              "reason_template": reason})
                row.pop("_ternaries", None)
                row.pop("lines", None)
                key = (release.version, row["component"], row["class"], row["level"], template, logger, row["kind"])
                if key not in rows:
                    rows[key] = row
                for index, cond, a, b in base.get("_ternaries", []):
                    if index == slot:
                        continue
                    at = index if index < slot else index + len(rparams) - 1
                    for value in (a, b):
                        vt = _fill(template, at, value)
                        vkey = key[:4] + (vt, logger, "variant")
                        if vkey not in rows:
                            rows[vkey] = dict(row, template=vt, kind="variant", variant_of=template,
                                              params=[p for i, p in enumerate(params) if i != at],
                                              notes=row["notes"] + f"; variant: placeholder #{at + 1} is the ternary "
                                              f"{cond} ? {_q(a)} : {_q(b)} -> rendered as {_q(value)}")
        if kind == "log":
            for base in bases:
                rows.pop((release.version, base["component"], base["class"], base["level"], base["template"],
                          base["logger"], "log"), None)
    return reasons


def _q(s: str) -> str:
    return json.dumps(s, ensure_ascii=False)


def _fill(template: str, index: int, value: str) -> str:
    pieces = template.split("{}")
    return "".join(p + ("{}" if i != index else value) for i, p in enumerate(pieces[:-1])) + pieces[-1]


_blobs: dict[tuple[str, str], str | None] = {}


def _in_binary(release: Release, row: dict) -> bool:
    """Whether every literal piece (3+ characters) of the row's template is in a string constant of
    the release's binary class files compiled from the row's source file (a mirrored release's row
    is kept only then: the mirror's commit is not the release's)."""
    if row.get("_built"):
        # spelt out in sources.toml (a StringBuilder's text, not one constant): its class must be there
        return _pieces_in(release, row["file"], "")
    if row.get("_parts"):
        # a helper's line: the helper's template and the message passed to it are constants of their own
        return all(_pieces_in(release, path, template) for path, template in row["_parts"])
    if row.get("composed_from"):        # a composed row, or a variant spelling out its base's ternary
        c = row["composed_from"]
        return _pieces_in(release, row["file"], c["base_template"]) and \
            _pieces_in(release, c["reason_file"], c["reason_template"])
    # a variant spells out a ternary: its pieces are checked in the template it comes from
    return _pieces_in(release, row["file"], row.get("variant_of", row["template"]))


def _pieces_in(release: Release, path: str, template: str) -> bool:
    key = (release.version, path)
    if key not in _blobs:
        constants = release.constants(path)
        _blobs[key] = None if constants is None else "\0".join(constants)
    blob = _blobs[key]
    if not blob:        # no binary class compiled from that file (moved, or not in the jar)
        return False
    pieces = [p for p in template.split("{}") if len(p.strip()) >= 3]
    return all(p in blob or all(line in blob for line in p.split("\n") if len(line.strip()) >= 3) for p in pieces)


def write(rows: list[dict], reasons: list[dict], out: Path) -> None:
    """templates.jsonl, sorted by release, component, class, line, kind and template: the same
    jars give the same bytes."""
    order = {"log": 0, "variant": 1, "composed": 2}
    rows = sorted(rows, key=lambda r: (version_key(r["version"]), r["component"], r["class"], r["line"],
                                       order[r["kind"]], r["level"], r["template"], r["logger"]))
    out.mkdir(parents=True, exist_ok=True)
    rows = [{k: v for k, v in r.items() if not k.startswith("_")} for r in rows]
    (out / "templates.jsonl").write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows),
                                         encoding="utf-8")
    reasons = sorted(reasons, key=lambda r: (version_key(r["version"]), r["component"], r["class"], r["line"],
                                             r["method"], r["arg"], r["reason_template"]))
    (out / "reasons.jsonl").write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in reasons),
                                       encoding="utf-8")


class Scope:
    """Which log calls are about group membership (scope.toml): per class, all of them, or those
    whose template matches ``keep`` and not ``drop``."""

    def __init__(self, path: Path = SCOPE):
        data = load_toml(path)
        self.default_keep = regex.compile(data["keep"])
        self.default_drop = regex.compile(data["drop"])
        self.by_class = {c["class"]: c for c in data.get("class", [])}

    def keeps(self, cls: dict, level: str, template: str) -> bool:
        rule = self.by_class.get(cls["class"], {})
        if rule.get("all"):
            drop = rule.get("drop")
            return not (drop and regex.search(drop, template))
        keep = regex.compile(rule["keep"]) if "keep" in rule else self.default_keep
        drop = rule.get("drop")
        if drop and regex.search(drop, template):
            return False
        if self.default_drop.search(template) and not rule.get("keep_default_drop"):
            return False
        return bool(keep.search(template))


# ---------------------------------------------------------------------------------------------
# comparison


def _key(r: dict) -> tuple:
    return (r["version"], r["component"], r["class"], r["level"], r["template"], r["logger"], r.get("kind", "log"))


def compare(ours: list[dict], theirs: list[dict], versions: list[str]) -> dict:
    a = {_key(r): r for r in ours if r["version"] in versions}
    b = {_key(r): r for r in theirs if r["version"] in versions}
    equal = a.keys() & b.keys()
    return {"equal": sorted(equal), "missing": sorted(b.keys() - a.keys()), "extra": sorted(a.keys() - b.keys()),
            "line_equal": sum(a[k]["line"] == b[k]["line"] for k in equal),
            "params_equal": sum(a[k]["params"] == b[k]["params"] for k in equal)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m rebalance_doctor.packgen.sources")
    ap.add_argument("--out", type=Path, help="write templates.jsonl and reasons.jsonl here")
    ap.add_argument("--version", action="append", help="only these releases")
    ap.add_argument("--compare", type=Path, help="a templates.jsonl to measure agreement with")
    ap.add_argument("--all-calls", action="store_true", help="no scope filter (to review the scope)")
    ap.add_argument("--dump", type=Path, help="write the rows here (any file name)")
    args = ap.parse_args(argv)
    if args.out and args.version:
        ap.error("--out rewrites the whole inventory: give no --version with it (use --dump for a few releases)")
    versions = args.version or config()["versions"]
    scope = None if args.all_calls else Scope()
    rows, reasons = [], []
    for version in versions:
        release = Release(version)
        rows.extend(extract(release, scope))
        reasons.extend(release.reasons)
    if args.out:
        write(rows, reasons, args.out)
    if args.dump:
        args.dump.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    if args.compare:
        theirs = [json.loads(l) for l in args.compare.read_text(encoding="utf-8").splitlines() if l.strip()]
        shared = sorted({r["version"] for r in theirs} & set(versions), key=version_key)
        result = compare(rows, theirs, shared)
        print(f"versions {', '.join(shared)}: equal {len(result['equal'])}, missing {len(result['missing'])}, "
              f"extra {len(result['extra'])}; of the equal, line equal {result['line_equal']}, "
              f"params equal {result['params_equal']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Open pages in the system's headless Chromium (Debian's `chromium` package) through playwright.

No browser is downloaded: playwright drives /usr/bin/chromium (or $CHROMIUM) by its executable
path, with a fresh profile directory and every background service off, so that the only
requests the browser makes are the page's own (which the tests record and expect to be none).

    python tests/browser.py screenshot report.html docs/img/report.png [--width 1280] [--group NAME]
        [--from CSS-SELECTOR] [--until CSS-SELECTOR] [--hover CSS-SELECTOR] [--below PIXELS]
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator

FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-default-apps",
         "--disable-extensions"]


def chromium_path() -> str | None:
    for candidate in (os.environ.get("CHROMIUM"), "/usr/bin/chromium", shutil.which("chromium"),
                      shutil.which("chromium-browser")):
        if candidate and Path(candidate).is_file():
            return candidate
    return None


def missing() -> str | None:
    """Why the browser tests cannot run here, or None."""
    if chromium_path() is None:
        return "no system Chromium (apt-get install chromium)"
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "the playwright package is not installed (pip install playwright)"
    return None


@dataclass
class Visit:
    """What loading a page did: console messages by type, page errors, every request made."""

    console: list[tuple[str, str]] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    requests: list[str] = field(default_factory=list)

    @property
    def console_errors(self) -> list[str]:
        return [text for kind, text in self.console if kind in ("error", "warning")] + self.errors


@contextlib.contextmanager
def browser(width: int = 1280, height: int = 900) -> Iterator[object]:
    """A playwright browser context of the system Chromium, with a fresh profile."""
    from playwright.sync_api import sync_playwright

    profile = tempfile.mkdtemp(prefix="rd-chromium-")
    try:
        with sync_playwright() as p:
            context = p.chromium.launch_persistent_context(
                profile, executable_path=chromium_path(), headless=True, args=FLAGS,
                viewport={"width": width, "height": height}, device_scale_factor=1)
            try:
                yield context
            finally:
                context.close()
    finally:
        shutil.rmtree(profile, ignore_errors=True)


def open_page(context, path: Path, visit: Visit):
    """Open a local file, recording console output, page errors and requests other than itself."""
    page = context.new_page()
    url = path.resolve().as_uri()
    page.on("console", lambda m: visit.console.append((m.type, m.text)))
    page.on("pageerror", lambda exc: visit.errors.append(str(exc)))
    page.on("request", lambda r: visit.requests.append(r.url) if r.url != url else None)
    page.goto(url, wait_until="load")
    return page


def screenshot(html: Path, out: Path, width: int = 1280, group: str | None = None, full_page: bool = False,
               clip_to: str | None = None, hover: str | None = None, below: int = 16,
               clip_from: str | None = None) -> Visit:
    visit = Visit()
    with browser(width=width) as context:
        page = open_page(context, html, visit)
        if group:
            page.select_option("#group-select", group)
        page.wait_for_timeout(200)
        out.parent.mkdir(parents=True, exist_ok=True)
        if clip_to:
            bottom = page.evaluate(f"document.querySelector({clip_to!r}).getBoundingClientRect().bottom + window.scrollY")
            page.set_viewport_size({"width": width, "height": int(bottom) + below})
            if hover:
                page.locator(hover).first.hover()
            top = 0
            if clip_from:
                top = int(page.evaluate(f"document.querySelector({clip_from!r}).getBoundingClientRect().top + window.scrollY")) - 8
            page.screenshot(path=str(out), full_page=False,
                            clip={"x": 0, "y": max(top, 0), "width": width, "height": int(bottom) + below - max(top, 0)})
        else:
            page.screenshot(path=str(out), full_page=full_page)
    return visit


def main(argv: list[str]) -> int:
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    shot = sub.add_parser("screenshot")
    shot.add_argument("html", type=Path)
    shot.add_argument("out", type=Path)
    shot.add_argument("--width", type=int, default=1280)
    shot.add_argument("--group")
    shot.add_argument("--full-page", action="store_true")
    shot.add_argument("--from", dest="clip_from", help="CSS selector: the shot starts above this element")
    shot.add_argument("--until", help="CSS selector: the shot ends below this element")
    shot.add_argument("--hover", help="CSS selector: hover the first such element (its tooltip shows)")
    shot.add_argument("--below", type=int, default=16, help="pixels kept below the --until element")
    args = parser.parse_args(argv)
    why = missing()
    if why:
        print(f"error: {why}", file=sys.stderr)
        return 5
    visit = screenshot(args.html, args.out, args.width, args.group, args.full_page, args.until, args.hover, args.below,
                       args.clip_from)
    for problem in visit.console_errors + [f"request: {r}" for r in visit.requests]:
        print(problem, file=sys.stderr)
    return 1 if visit.console_errors or visit.requests else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

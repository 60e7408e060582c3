"""How fast the web page is in a real browser: load, log in, ask (issue 27: interactive ≤ 1 s).

    python -m perf.page [--runs 10] [--warmup 1] [--url URL --key KEY] [--out page.json]

Starts ``almanac serve`` over Spider's concert_singer with an instant scripted model
(:mod:`perf.page_server`; ``--url``/``--key`` measure a running server with an analyst's key
instead), then drives Debian's Chromium headless with Playwright (the browser tests' launch
arguments). Each run has two loads:

- **cold**: a new browser context (empty cache, empty session storage): the page loads, the
  key is typed into the login form and sent, the ask view opens, the question is asked;
- **warm**: the same tab reloaded (assets revalidated from the cache, the key still in the
  session storage, so the page opens on the ask view at once), the question asked again.

Times are taken in the page itself (``performance.now()``, from the navigation's start) by a
script Playwright adds before the page's own (a MutationObserver, no polling, no sleeps):

- ``dcl``: DOMContentLoaded ended (Navigation Timing);
- ``login``: the login form usable (the key box focused, its button enabled) — cold only;
- ``ready``: the ask view interactive (the question box in the page and enabled, the Ask
  button enabled), measured from the login's submit (cold) or from the navigation (warm);
- ``answer``: from Enter in the question box to the answer card shown.

``--warmup`` runs (default 1) go first and are not counted: a fresh server's first answer
also pays for its own start (the first retrieval, the first connection to the target), which
is the server's figure (``perf.server_ask``), not the page's.

Bytes are what the network carried (response headers and bodies, Playwright's request
sizes), by kind: ``html``, ``js`` (the page's modules), ``css``, ``vendor`` (Chart.js) and
``api``; ``requests`` counts them all. Prints p50/p90 over the runs as a table; ``--out``
writes every run and the summary as JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from pathlib import Path
from typing import Any

from tqdm import tqdm

from bench.perf.store import percentile
from perf.page_server import PageServer, concert_server

QUESTION = "How many singers are there in each country?"
CHROMIUM_ARGS = (  # tests/browser/conftest.py launches it so too
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
)
TIMEOUT_MS = 30_000
KINDS = ("html", "js", "css", "vendor", "api", "other")
TIMES = ("dcl", "login", "ready", "answer")
MARKS = Path(__file__).with_name("page_marks.js")


def chromium_executable() -> str:
    """Debian's Chromium (``make setup`` installs it), or ``$ALMANAC_CHROMIUM``."""
    for candidate in (os.environ.get("ALMANAC_CHROMIUM"), "chromium", "chromium-browser"):
        found = candidate and shutil.which(candidate)
        if found:
            return found
    raise SystemExit("Chromium is not installed: run `make setup` (it installs Debian's chromium)")


def kind_of(url: str) -> str:
    """Which of :data:`KINDS` a request's URL is."""
    path = url.split("?", 1)[0]
    if "/ui/static/vendor/" in path:
        return "vendor"
    if path.endswith(".js"):
        return "js"
    if path.endswith(".css"):
        return "css"
    if path.endswith("/ui/") or path.endswith(".html"):
        return "html"
    if "/v1/" in path:
        return "api"
    return "other"


@contextmanager
def recorded(page: Any) -> Iterator[list[Any]]:
    """The requests ``page`` finished (or failed) while the block ran."""
    requests: list[Any] = []

    def keep(request: Any) -> None:
        requests.append(request)

    page.on("requestfinished", keep)
    page.on("requestfailed", keep)
    try:
        yield requests
    finally:
        page.remove_listener("requestfinished", keep)
        page.remove_listener("requestfailed", keep)


def transfer(requests: list[Any]) -> dict[str, int]:
    """Bytes carried per kind (response headers and body) and the number of requests."""
    sizes = dict.fromkeys(KINDS, 0)
    for request in requests:
        size = request.sizes()
        carried = max(0, size["responseHeadersSize"]) + max(0, size["responseBodySize"])
        sizes[kind_of(request.url)] += carried
    return {**sizes, "total": sum(sizes.values()), "requests": len(requests)}


def mark(page: Any, name: str) -> float:
    """Wait until the page's marks script recorded ``name``; its time in ms."""
    handle = page.wait_for_function(
        f"() => window.__pageMarks && window.__pageMarks[{json.dumps(name)}]",
        polling="raf",
        timeout=TIMEOUT_MS,
    )
    return float(handle.json_value())


def ask(page: Any) -> float:
    """Ask :data:`QUESTION` with Enter; ms from the key press to the answer card."""
    page.wait_for_function("() => window.__pageMarks && window.__pageMarks.ready")
    page.fill("[data-testid=question]", QUESTION)
    page.press("[data-testid=question]", "Enter")
    asked = mark(page, "asked")
    return mark(page, "answer") - asked


def cold(context: Any, url: str, key: str) -> tuple[Any, dict[str, Any]]:
    """Open the page in ``context`` (fresh), log in with ``key``, ask: the first load."""
    page = context.new_page()
    page.set_default_timeout(TIMEOUT_MS)
    with recorded(page) as requests:
        page.goto(f"{url}/ui/", wait_until="domcontentloaded")
        times = {"dcl": mark(page, "dcl"), "login": mark(page, "login")}
        page.fill("#api-key", key)
        page.press("#api-key", "Enter")
        times["ready"] = mark(page, "ready") - mark(page, "submitted")
        times["answer"] = ask(page)
    return page, {"times": times, "bytes": transfer(requests)}


def warm(page: Any) -> dict[str, Any]:
    """Reload ``page`` (the cache and the session's key kept) and ask again."""
    with recorded(page) as requests:
        page.reload(wait_until="domcontentloaded")
        times = {"dcl": mark(page, "dcl"), "login": None, "ready": mark(page, "ready")}
        times["answer"] = ask(page)
    return {"times": times, "bytes": transfer(requests)}


def one_run(browser: Any, server: PageServer) -> dict[str, Any]:
    """A cold load in a new context, then a warm reload of the same tab."""
    context = browser.new_context(viewport={"width": 1280, "height": 860})
    context.add_init_script(path=str(MARKS))
    errors: list[str] = []
    context.on("weberror", lambda error: errors.append(str(error.error)))
    try:
        page, first = cold(context, server.url, server.key)
        second = warm(page)
    finally:
        context.close()
    if errors:
        raise SystemExit(f"the page raised errors: {errors}")
    return {"cold": first, "warm": second}


def measure(server: PageServer, runs: int, warmup: int = 0) -> list[dict[str, Any]]:
    """``runs`` cold loads each followed by a warm one, in Debian's Chromium, after
    ``warmup`` such runs that are not returned."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=chromium_executable(), headless=True, args=list(CHROMIUM_ARGS)
        )
        try:
            results = [
                one_run(browser, server)
                for _ in tqdm(range(warmup + runs), desc="page loads", unit="run")
            ]
        finally:
            browser.close()
    return results[warmup:]


def summarise(results: list[dict[str, Any]]) -> dict[str, Any]:
    """p50/p90 of every time and byte count, per load (cold, warm)."""
    summary: dict[str, Any] = {}
    for load in ("cold", "warm"):
        values: dict[str, list[float]] = {}
        for run in results:
            for name, value in run[load]["times"].items():
                if value is not None:
                    values.setdefault(f"{name}_ms", []).append(value)
            for name, value in run[load]["bytes"].items():
                values.setdefault(name if name == "requests" else f"{name}_bytes", []).append(value)
        summary[load] = {
            name: {"p50": statistics.median(found), "p90": percentile(found, 0.9)}
            for name, found in values.items()
        }
    return summary


def table(summary: dict[str, Any]) -> str:
    """The summary as a plain text table: one line per figure, p50/p90 for cold and warm."""
    names = list(dict.fromkeys(n for load in summary.values() for n in load))
    lines = [f"{'figure':<16}{'cold p50':>12}{'cold p90':>12}{'warm p50':>12}{'warm p90':>12}"]
    for name in names:
        cells = []
        for load in ("cold", "warm"):
            found = summary[load].get(name)
            for q in ("p50", "p90"):
                cells.append("–" if found is None else f"{found[q]:,.1f}")
        lines.append(f"{name:<16}" + "".join(f"{c:>12}" for c in cells))
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m perf.page", description=__doc__)
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--warmup", type=int, default=1, help="runs first, not counted")
    parser.add_argument("--url", help="a running server (default: start one over concert_singer)")
    parser.add_argument("--key", help="an analyst's API key for --url")
    parser.add_argument("--out", type=Path, help="write the runs and the summary as JSON")
    args = parser.parse_args(argv)
    if args.runs < 1 or args.warmup < 0:
        parser.error("--runs must be at least 1, --warmup at least 0")
    if bool(args.url) != bool(args.key):
        parser.error("--url and --key go together")

    given = PageServer(url=args.url.rstrip("/"), key=args.key) if args.url else None
    with nullcontext(given) if given else concert_server() as server:
        results = measure(server, args.runs, args.warmup)
    summary = summarise(results)
    print(
        f"{args.runs} runs (after {args.warmup} not counted) against {server.url}, "
        f"Chromium {chromium_executable()}; times in ms, bytes carried"
    )
    print(table(summary))
    if args.out:
        report = {
            "url": server.url,
            "warmup": args.warmup,
            "runs": results,
            "summary": summary,
            "machine": {"cpus": os.cpu_count(), "platform": platform.platform()},
        }
        args.out.write_text(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()

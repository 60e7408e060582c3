"""The analyst and ops web page, served by the API server itself at ``/ui/``.

One static page (``static/index.html``) with ES modules under ``static/js/`` and vendored
libraries under ``static/vendor/`` (no CDN, no Node.js at run time, no build step). The page
talks to the same JSON API as every other client, with the API key the user typed, kept in the
browser's session storage and sent as ``Authorization: Bearer``; it is never in a URL or a
cookie, so a request forged from another site carries no key and is refused.

Every response under ``/ui`` carries a strict Content Security Policy (scripts, styles,
connections and images from this origin only, no inline script or style, no framing) and the
usual hardening headers; see :class:`SecurityHeadersMiddleware`.
"""

from __future__ import annotations

from pathlib import Path

from fastapi import FastAPI, Request
from fastapi.responses import FileResponse, RedirectResponse, Response
from fastapi.staticfiles import StaticFiles
from starlette.types import ASGIApp, Message, Receive, Scope, Send

UI_PATH = "/ui"
STATIC_DIR = Path(__file__).parent / "static"
CONTENT_SECURITY_POLICY = "; ".join(
    (
        "default-src 'none'",
        "script-src 'self'",
        "style-src 'self'",
        "img-src 'self' data: blob:",
        "connect-src 'self'",
        "font-src 'self'",
        "base-uri 'none'",
        "form-action 'self'",
        "frame-ancestors 'none'",
    )
)
SECURITY_HEADERS: tuple[tuple[bytes, bytes], ...] = (
    (b"content-security-policy", CONTENT_SECURITY_POLICY.encode()),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
    (b"x-frame-options", b"DENY"),
    (b"cross-origin-opener-policy", b"same-origin"),
    (b"cache-control", b"no-cache"),  # revalidated (ETag): an upgrade shows at once
)


class SecurityHeadersMiddleware:
    """Adds :data:`SECURITY_HEADERS` to every response whose path starts with ``prefix``
    (the API's own pages, ``/docs`` with its inline scripts, are left alone)."""

    def __init__(self, app: ASGIApp, *, prefix: str = UI_PATH) -> None:
        self.app, self.prefix = app, prefix

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not str(scope.get("path", "")).startswith(self.prefix):
            await self.app(scope, receive, send)
            return

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                names = {name for name, _ in SECURITY_HEADERS}
                kept = [(k, v) for k, v in message.get("headers", []) if k.lower() not in names]
                message["headers"] = [*kept, *SECURITY_HEADERS]
            await send(message)

        await self.app(scope, receive, send_with_headers)


def _static_dir() -> Path:
    """The page's asset folder, checked so a broken install fails at start."""
    missing = [
        name
        for name in ("index.html", "app.css", "js/app.js", "vendor/chart.umd.min.js")
        if not (STATIC_DIR / name).is_file()
    ]
    if missing:
        raise RuntimeError(f"the web page's assets in {STATIC_DIR} lack {missing}")
    return STATIC_DIR


def install_web(app: FastAPI) -> None:
    """Serve the page at ``/ui/`` and its assets at ``/ui/static/`` (no key needed: the page
    asks for one, and every API call it makes is checked as any other)."""
    static = _static_dir()
    app.mount(f"{UI_PATH}/static", StaticFiles(directory=static), name="ui-static")

    @app.get(UI_PATH, include_in_schema=False)
    async def ui_redirect(request: Request) -> Response:
        root = request.scope.get("root_path", "")
        return RedirectResponse(f"{root}{UI_PATH}/", status_code=308)

    @app.get(f"{UI_PATH}/", include_in_schema=False)
    async def ui_index() -> Response:
        return FileResponse(static / "index.html", media_type="text/html; charset=utf-8")

    app.add_middleware(SecurityHeadersMiddleware, prefix=UI_PATH)

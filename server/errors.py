"""Errors → HTTP answers, in one table. Every answer is ``{"detail": ...}`` naming the input.

- malformed JSON → 400; a body that does not fit the schema → 422 (FastAPI's error list);
- unknown knowledge, job or key id → 404; not allowed to write that entry → 403;
- an entry that exists already, a job that has finished → 409;
- invalid UKF or JSON Lines (with the line number) → 422;
- LLM queue full → 429; LLM or index busy or loading → 503 (with ``Retry-After``);
- anything unexpected → 500 ``{"detail": "internal error <id> (logged)"}``, the traceback in
  the log under that id, and the keep-alive connection kept (:class:`UnhandledErrorMiddleware`).

Answers name the input but never echo it whole: a value echoed in a 422 is cut at
:data:`ECHO_CHARS` characters, a message at :data:`DETAIL_CHARS`, at most :data:`MAX_ERRORS`
validation errors are listed, and text that cannot be encoded (a lone surrogate) is replaced.
"""

from __future__ import annotations

import json
import logging
import math
import re
import reprlib
import secrets
from collections.abc import Sequence
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from fastapi.utils import is_body_allowed_for_status_code
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from agents.llm.base import LLMBusyError
from indices.index_set import IndexNotReadyError
from kb.errors import JSONLImportError, KnowledgeNotFoundError
from server.access import AccessDeniedError
from server.jobs import JobNotFoundError, JobStateError
from server.keys import KeyNotFoundError
from server.knowledge import EntryExistsError
from server.limits import GateFullError, GateTimeoutError
from ukf import UKFError

log = logging.getLogger(__name__)

STATUS_OF: tuple[tuple[type[Exception], int], ...] = (
    (KnowledgeNotFoundError, 404),
    (JobNotFoundError, 404),
    (KeyNotFoundError, 404),
    (AccessDeniedError, 403),
    (EntryExistsError, 409),
    (JobStateError, 409),
    (JSONLImportError, 422),
    (UKFError, 422),
    (GateFullError, 429),
    (GateTimeoutError, 503),
    (LLMBusyError, 503),
)
RETRY_AFTER_S = {429: "1", 503: "5"}
ECHO_CHARS = 100
DETAIL_CHARS = 500
MAX_ERRORS = 20
SURROGATE = re.compile("[\ud800-\udfff]")


def clip(text: str, limit: int = ECHO_CHARS) -> str:
    """``text`` safe to encode, cut to ``limit`` characters (saying how long it was)."""
    text = SURROGATE.sub("\ufffd", text)
    return text if len(text) <= limit else f"{text[:limit]}… ({len(text)} characters)"


def echo(value: Any) -> Any:
    """A short, JSON-safe stand-in for an input value echoed in an error."""
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, str):
        return clip(value)
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    if isinstance(value, int):
        return value if abs(value) < 10**18 else clip(f"{value:.3e}")
    try:
        return clip(_short_repr(value))
    except Exception:  # a repr that fails is no reason to fail the answer
        return f"<{type(value).__name__}>"


def _short_repr(value: Any) -> str:
    short = reprlib.Repr()
    short.maxlevel, short.maxstring, short.maxother = 3, ECHO_CHARS, ECHO_CHARS
    return short.repr(value)


def _error(error: dict[str, Any]) -> dict[str, Any]:
    short: dict[str, Any] = {
        "type": str(error.get("type", "")),
        "loc": [part if isinstance(part, int) else clip(str(part)) for part in error["loc"]],
        "msg": clip(str(error.get("msg", "")), DETAIL_CHARS),
    }
    if "input" in error:
        short["input"] = echo(error["input"])
    if error.get("ctx"):
        short["ctx"] = {clip(str(k)): echo(v) for k, v in error["ctx"].items()}
    return short


def short_detail(detail: Any) -> Any:
    """An HTTPException's detail, cut: a message to :data:`DETAIL_CHARS`, a list of errors to
    :data:`MAX_ERRORS` short ones."""
    if isinstance(detail, str):
        return clip(detail, DETAIL_CHARS)
    if isinstance(detail, Sequence):
        return [_error(e) if isinstance(e, dict) and "loc" in e else echo(e) for e in detail][
            :MAX_ERRORS
        ]
    return echo(detail)


async def _mapped(_request: Request, exc: Exception) -> Response:
    status = next(code for kind, code in STATUS_OF if isinstance(exc, kind))
    headers = {"Retry-After": RETRY_AFTER_S[status]} if status in RETRY_AFTER_S else None
    return JSONResponse(
        {"detail": clip(str(exc), DETAIL_CHARS)}, status_code=status, headers=headers
    )


async def _index_not_ready(_request: Request, exc: Exception) -> Response:
    assert isinstance(exc, IndexNotReadyError)
    if not exc.configured:
        detail = f"{exc} (ALMANAC_EMBEDDER=none)"
        return JSONResponse({"detail": detail}, status_code=501)
    return JSONResponse({"detail": str(exc)}, status_code=503, headers={"Retry-After": "2"})


async def _validation(_request: Request, exc: Exception) -> Response:
    """FastAPI's error list, each error short (see :func:`short_detail`); malformed JSON → 400."""
    assert isinstance(exc, RequestValidationError)
    errors = exc.errors()
    broken = [e for e in errors if e.get("type") == "json_invalid"]
    if broken:
        reason = clip(str(broken[0].get("ctx", {}).get("error", "invalid JSON")))
        return JSONResponse({"detail": f"malformed JSON body: {reason}"}, status_code=400)
    return JSONResponse({"detail": short_detail(errors)}, status_code=422)


async def _http_error(_request: Request, exc: Exception) -> Response:
    """Starlette's answer to an HTTPException, with the detail cut (:func:`short_detail`)."""
    assert isinstance(exc, StarletteHTTPException)
    if not is_body_allowed_for_status_code(exc.status_code):
        return Response(status_code=exc.status_code, headers=exc.headers)
    body = {"detail": short_detail(exc.detail)}
    return JSONResponse(body, status_code=exc.status_code, headers=exc.headers)


async def send_json(
    send: Send, status: int, body: dict[str, Any], headers: Sequence[tuple[bytes, bytes]] = ()
) -> None:
    """Answer from an ASGI middleware, before or instead of the app."""
    payload = json.dumps(body).encode()
    start: Message = {
        "type": "http.response.start",
        "status": status,
        "headers": [
            (b"content-type", b"application/json"),
            (b"content-length", str(len(payload)).encode()),
            *headers,
        ],
    }
    await send(start)
    await send({"type": "http.response.body", "body": payload})


class UnhandledErrorMiddleware:
    """An exception no handler maps → 500 JSON, logged with its traceback under a short id.

    Starlette's own last resort re-raises after answering, and uvicorn then closes the
    keep-alive connection; here the answer is complete and the connection stays usable. An
    exception after the response started cannot be answered and is re-raised.
    """

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = False

        async def tracking_send(message: Message) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, receive, tracking_send)
        except Exception:
            if started:
                raise
            error_id = secrets.token_hex(4)
            log.exception(
                "internal error %s in %s %s", error_id, scope["method"], clip(scope["path"])
            )
            await send_json(send, 500, {"detail": f"internal error {error_id} (logged)"})


def install_error_handlers(app: FastAPI) -> None:
    app.add_exception_handler(RequestValidationError, _validation)
    app.add_exception_handler(StarletteHTTPException, _http_error)
    app.add_exception_handler(IndexNotReadyError, _index_not_ready)
    for kind, _status in STATUS_OF:
        app.add_exception_handler(kind, _mapped)

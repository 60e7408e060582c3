"""Errors → HTTP answers, in one table. Every answer is ``{"detail": ...}`` naming the input.

- malformed JSON → 400; a body that does not fit the schema → 422 (FastAPI's error list);
- unknown knowledge, job or key id → 404; not allowed to write that entry → 403;
- an entry that exists already, a job that has finished → 409;
- invalid UKF or JSON Lines (with the line number) → 422;
- LLM queue full → 429; LLM or index busy or loading → 503 (with ``Retry-After``).
"""

from __future__ import annotations

import logging

from fastapi import FastAPI, Request
from fastapi.exception_handlers import request_validation_exception_handler
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response

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


async def _mapped(_request: Request, exc: Exception) -> Response:
    status = next(code for kind, code in STATUS_OF if isinstance(exc, kind))
    headers = {"Retry-After": RETRY_AFTER_S[status]} if status in RETRY_AFTER_S else None
    return JSONResponse({"detail": str(exc)}, status_code=status, headers=headers)


async def _index_not_ready(_request: Request, exc: Exception) -> Response:
    assert isinstance(exc, IndexNotReadyError)
    if not exc.configured:
        detail = f"{exc} (ALMANAC_EMBEDDER=none)"
        return JSONResponse({"detail": detail}, status_code=501)
    return JSONResponse({"detail": str(exc)}, status_code=503, headers={"Retry-After": "2"})


async def _validation(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, RequestValidationError)
    broken = [e for e in exc.errors() if e.get("type") == "json_invalid"]
    if broken:
        reason = broken[0].get("ctx", {}).get("error", "invalid JSON")
        return JSONResponse({"detail": f"malformed JSON body: {reason}"}, status_code=400)
    return await request_validation_exception_handler(request, exc)


def install_error_handlers(app: FastAPI) -> None:
    app.add_exception_handler(RequestValidationError, _validation)
    app.add_exception_handler(IndexNotReadyError, _index_not_ready)
    for kind, _status in STATUS_OF:
        app.add_exception_handler(kind, _mapped)

"""Asking and feedback over HTTP.

- ``POST /v1/ask``: the ``Answer`` (SQL, rows, confidence, tier, knowledge used, stages).
- ``POST /v1/ask/stream``: the same as server-sent events, one per stage: ``evidence``,
  ``candidate`` (each SQL candidate as it is executed), ``vote`` and ``final`` (the Answer), or
  ``error``. The LLM gate is taken before the stream starts, so a saturated server answers 429
  or 503 with a status code rather than inside the stream.
- ``POST /v1/answers/{id}/feedback``: a verdict, optionally a corrected SQL (executed read-only
  and checked before it becomes a labeled experience), and a comment. Audited. The reply says
  what the correction taught (``learned``: each fact's id, kind, phrase, description, status
  and scope) and what the verdict counted on the knowledge the answer used (``credit``).

The handlers are coroutines: a question is answered on the ask service's threads and a
feedback's SQL in its SQL pool (429 when full), so neither holds a request handler thread
while SQL runs. A question's deadline is ``ALMANAC_LIMITS__ASK_DEADLINE_S`` (by default the
request timeout less a margin): past it no SQL is drawn, run or repaired. A question asked
while the server warms up (``/v1/health`` says ``starting`` or ``warming``) waits for the
indices and the models within that deadline rather than being refused (503 only when the
warm-up outlasts it; see :mod:`server.ask_service`).
"""

from __future__ import annotations

import logging
from datetime import datetime
from typing import Annotated, Literal

from fastapi import APIRouter, Depends, HTTPException, Request
from fastapi.responses import Response, StreamingResponse
from pydantic import BaseModel, ConfigDict, Field

from agents.experience_log import FeedbackError, FeedbackOutcome
from agents.pipeline import AskOptions
from server.auth import Identity, Permission
from server.deps import get_state, require
from server.job_calibrate import request_calibrate
from server.job_cot import request_cot
from server.limits import check_text_length
from server.responses import FastJSONResponse, event_stream
from server.state import AppState
from ukf import QueryContext

log = logging.getLogger(__name__)
router = APIRouter(tags=["ask"])
Asker = Annotated[Identity, Depends(require(Permission.ASK))]
Reviewer = Annotated[Identity, Depends(require(Permission.FEEDBACK))]


class AskContext(BaseModel):
    model_config = ConfigDict(extra="forbid")

    user_profile: dict[str, str | int | float | bool | None] = Field(default_factory=dict)
    query_time: datetime | None = None


class AskOptionsBody(BaseModel):
    model_config = ConfigDict(extra="forbid")

    n: int | None = Field(
        default=None,
        ge=1,
        le=8,
        description="candidates (majority vote when > 1); unset: adaptive sampling when the "
        "server's confidence settings turn it on, else 1",
    )
    adaptive: bool | None = Field(
        default=None,
        description="draw more samples only while the confidence is under the target, up to "
        "n (or the configured budget); unset: as the server's settings say when n is unset",
    )
    abstain: bool = Field(
        default=True,
        description="let an unsure answer abstain (false: always answer, rows included)",
    )
    cascade: bool = Field(default=False, description="run the model tiers small to large")
    execute: bool = Field(default=True, description="run the SQL and return rows")
    max_rows: int | None = Field(default=None, ge=0, le=10_000)
    explore: bool = Field(
        default=False, description="let the model search the knowledge base with tools first"
    )


class AskRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    question: str = Field(min_length=1)
    context: AskContext = Field(default_factory=AskContext)
    options: AskOptionsBody = Field(default_factory=AskOptionsBody)


class FeedbackRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    verdict: Literal["correct", "wrong"]
    corrected_sql: str | None = Field(default=None, min_length=1, max_length=20_000)
    comment: str = Field(default="", max_length=4_000)


def _prepare(
    request: Request, body: AskRequest, identity: Identity
) -> tuple[QueryContext, AskOptions]:
    """The question's context (asked by ``identity``) and options; 413/422 on bad input."""
    state = get_state(request)
    check_text_length(body.question, state.settings.limits.max_question_chars)
    if not body.question.strip():
        raise HTTPException(422, "the question is empty")
    adaptive = body.options.adaptive
    if adaptive is None and body.options.n is not None:
        adaptive = False  # a fixed n samples n, as before
    options = AskOptions(
        n=body.options.n or 1,
        adaptive=adaptive,
        abstain=body.options.abstain,
        cascade=body.options.cascade,
        execute=body.options.execute,
        max_rows=min(body.options.max_rows or state.settings.max_rows, state.settings.max_rows),
        explore=body.options.explore or None,
        deadline_s=state.settings.limits.answer_deadline_s,
    )
    context = QueryContext(
        query_time=body.context.query_time,
        user_profile=dict(body.context.user_profile),
        reader=identity.reader,
    )
    return context, options


@router.post("/v1/ask", summary="Answer a question with verified SQL and rows")
async def ask(request: Request, identity: Asker, body: AskRequest) -> Response:
    context, options = _prepare(request, body, identity)
    answer = await get_state(request).asks.ask(body.question, context, options)
    return FastJSONResponse(answer.model_dump(mode="json"))


@router.post("/v1/ask/stream", summary="Answer a question, streaming each stage (SSE)")
async def ask_stream(request: Request, identity: Asker, body: AskRequest) -> StreamingResponse:
    context, options = _prepare(request, body, identity)
    events = await get_state(request).asks.stream(body.question, context, options)

    return event_stream(events)


@router.post("/v1/answers/{answer_id}/feedback", summary="Confirm or correct an answer")
async def feedback(
    request: Request, identity: Reviewer, answer_id: str, body: FeedbackRequest
) -> Response:
    state = get_state(request)
    # the corrected SQL runs until the target's time limit: in the SQL pool (429 when full)
    outcome = await state.asks.sql_pool.run(
        identity.key_id, lambda: _apply_feedback(state, identity, answer_id, body)
    )
    return FastJSONResponse(
        {
            "answer_id": outcome.answer_id,
            "verdict": outcome.verdict,
            "experience_id": outcome.experience_id,
            "labeled": outcome.labeled,
            "row_count": outcome.row_count,
            "scope": outcome.scope,
            "shared_id": outcome.shared_id,
            "learned": [fact.to_dict() for fact in outcome.learned],
            "credit": outcome.credit.to_dict(),
        }
    )


def _apply_feedback(
    state: AppState, identity: Identity, answer_id: str, body: FeedbackRequest
) -> FeedbackOutcome:
    """Apply and audit one feedback (on a SQL pool thread: the corrected SQL runs here)."""
    pipeline = state.asks.pipeline()
    try:
        outcome = pipeline.feedback(
            answer_id,
            body.verdict,
            corrected_sql=body.corrected_sql,
            comment=body.comment,
            reviewer=identity.user,
            reader=identity.reader,
        )
    except FeedbackError as exc:
        raise HTTPException(exc.status, str(exc)) from None
    state.audit.record(
        "feedback",
        identity,
        [outcome.experience_id],
        store_version=state.store.version,
        detail={"answer_id": answer_id, "verdict": body.verdict, "labeled": outcome.labeled},
    )
    try:
        request_calibrate(state, state.verdicts)
    except Exception:  # the feedback is stored; a missing refit must not turn it into a 500
        log.exception("feedback %s: the calibrate job could not be queued", answer_id)
    if outcome.labeled and state.settings.jobs.cot_after_feedback:
        try:
            request_cot(state, state.settings.resolved_target_name)
        except Exception:  # the feedback is stored; a missing CoT job must not turn it into a 500
            log.exception("feedback %s: the background cot job could not be queued", answer_id)
    return outcome

"""Analysis answers over HTTP (issue 26): ``POST /v1/analyze`` and ``POST /v1/analyze/stream``.

A question is typed (lookup, descriptive, diagnostic, predictive, prescriptive); a lookup is
answered by the one-SQL chain as ``/v1/ask`` answers it (the answer's ``lookup``); any other
is planned into sub-questions, each asked through the same chain (knowledge base, voting,
repair and abstention apply), analysed with the tools of :mod:`agents.analysis` and written
up as a short answer, findings citing their evidence (numbers checked against it), caveats
and a Vega-Lite chart per finding (:class:`agents.analysis.run.Analyst`). The whole analysis
holds one admission at the LLM gate, like one question; each of its model calls takes its
turn. ``/v1/analyze`` answers once it is done, within the request timeout (``max_seconds``
is bounded by it); the stream sends one event per step (``typing``, ``plan``, one
``subquestion`` each, ``analysis``, ``narrative``, ``final`` or ``refused``, ``error``) and
may run ``max_seconds`` (default 300).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Request
from fastapi.responses import Response, StreamingResponse
from pydantic import BaseModel, ConfigDict, Field

from agents.analysis.models import AnalysisAnswer
from agents.analysis.run import AnalysisOptions, Analyst
from agents.pipeline import AskOptions, Pipeline
from server.auth import Identity, Permission
from server.deps import get_state, require
from server.limits import check_text_length
from server.responses import FastJSONResponse, event_stream
from server.routes_ask import AskContext
from ukf import QueryContext

log = logging.getLogger(__name__)
router = APIRouter(tags=["analyze"])
Asker = Annotated[Identity, Depends(require(Permission.ASK))]
DEFAULT_SECONDS = 300.0


class AnalyzeOptionsBody(BaseModel):
    model_config = ConfigDict(extra="forbid")

    max_steps: int = Field(default=6, ge=1, le=20, description="sub-questions planned at most")
    max_seconds: float | None = Field(
        default=None,
        gt=0,
        le=3600,
        description="no sub-question asked past this; default 300 s for the stream, the "
        "request timeout less 10% for /v1/analyze",
    )
    max_rows: int = Field(default=2000, ge=1, le=100_000, description="rows kept per sub-answer")


class AnalyzeRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    question: str = Field(min_length=1)
    context: AskContext = Field(default_factory=AskContext)
    options: AnalyzeOptionsBody = Field(default_factory=AnalyzeOptionsBody)


def _prepared(
    request: Request, body: AnalyzeRequest, identity: Identity, *, streamed: bool
) -> tuple[QueryContext, AskOptions, AnalysisOptions]:
    state = get_state(request)
    check_text_length(body.question, state.settings.limits.max_question_chars)
    context = QueryContext(
        query_time=body.context.query_time,
        user_profile=dict(body.context.user_profile),
        reader=identity.reader,
    )
    limits = state.settings.limits
    ask = AskOptions(max_rows=state.settings.max_rows, deadline_s=limits.answer_deadline_s)
    seconds = body.options.max_seconds
    if not streamed:  # the response must start within the request timeout
        bound = limits.request_timeout_s * 0.9
        seconds = min(seconds or bound, bound)
    analysis = AnalysisOptions(
        max_steps=body.options.max_steps,
        max_seconds=seconds or DEFAULT_SECONDS,
        max_rows=min(body.options.max_rows, state.settings.target_max_rows),
    )
    return context, ask, analysis


def analysis_of(
    pipeline: Pipeline,
    question: str,
    context: QueryContext,
    ask: AskOptions,
    options: AnalysisOptions,
    on_event: Callable[[dict[str, Any]], None] | None = None,
) -> AnalysisAnswer:
    """The analysis of ``question`` with ``pipeline`` answering each sub-question."""
    analyst = Analyst(
        lambda q: pipeline.ask(q, context, ask),
        pipeline.default_llm,
        options,
        database=pipeline.database,
    )
    schema = pipeline.catalog.overview().text
    return analyst.analyze(question, schema_text=schema, on_event=on_event)


@router.post("/v1/analyze", summary="Analyse a question: plan, queries, findings, charts")
async def analyze(request: Request, identity: Asker, body: AnalyzeRequest) -> Response:
    context, ask, options = _prepared(request, body, identity, streamed=False)

    def work(pipeline: Pipeline, ready: AskOptions) -> AnalysisAnswer:
        return analysis_of(pipeline, body.question, context, ready, options)

    answer = await get_state(request).asks.run(ask, work)
    return FastJSONResponse(answer.model_dump(mode="json"))


@router.post("/v1/analyze/stream", summary="Analyse a question, streaming each step (SSE)")
async def analyze_stream(
    request: Request, identity: Asker, body: AnalyzeRequest
) -> StreamingResponse:
    context, ask, options = _prepared(request, body, identity, streamed=True)

    def work(pipeline: Pipeline, ready: AskOptions, put: Callable[[dict[str, Any]], None]) -> None:
        analysis_of(pipeline, body.question, context, ready, options, on_event=put)

    events = await get_state(request).asks.stream_work(ask, work, what=repr(body.question))

    return event_stream(events)

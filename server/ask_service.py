"""The agent pipeline as the server runs it: built once in ``build_state``.

``AskService.pipeline()`` wires ``agents.pipeline.Pipeline`` (on the first question) to the
server's store, its current indices (asked per question, so a reindex job's swap is picked
up), the target database and the LLM tiers (``cascade_tiers`` small to large, ending with the
default tier).

The warm-up (:class:`server.readiness.WarmUp`, started with the server) follows the first
index build and, with ``ALMANAC_WARM_ON_START``, loads each ask tier's model and then prefills
them with the target's shared prompt prefix, recording each step in
:attr:`AskService.readiness`. A question that arrives meanwhile waits for it instead of being
refused: for the indices and the models (no gate slot held), then for the model's slot, where
a warm-up call yields to questions (it enters the gate only when none is in progress) and the
time behind the one that runs is not counted against the gate's wait, all within the
question's deadline (503 when the warm-up has not finished by then); the question is then
answered within what is left of its deadline.

How a question passes the LLM gate (:class:`server.limits.LLMGate`): ``ask`` and ``stream``
admit it first (429 when ``concurrency + queue`` questions are in progress) and wait until the
model has a free slot (503 after the wait), both before anything is answered, so a saturated
server still refuses with a status code, a stream before its first event. The question then
holds a slot only while one of its model calls runs: every tier's model is wrapped
(:class:`_GatedLLM`) to take its turn at the gate per call. The SQL it runs between model
calls (up to the target's time limit per query, bounded in all by the question's deadline)
holds no slot, so one slow query cannot make every other user's question wait until 503.
Questions are answered on threads of their own (``concurrency + queue`` of them, one per
admitted question), never on the request handler threads; per-stage latencies go to the
metrics. The corrected SQL of feedback runs in :attr:`AskService.sql_pool`
(:mod:`server.sql_pool`).
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import AsyncIterator, Callable
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import suppress
from dataclasses import replace
from typing import Any, TypeVar

from fastapi import HTTPException

from agents.answer import Answer
from agents.confidence.assess import CalibratorSource, ConfidenceAssessor, ConfidenceOptions
from agents.llm.base import LLMBusyError
from agents.llm.variants import variants_of
from agents.pipeline import AskOptions, Pipeline, QuestionError
from agents.pipeline_options import PipelineOptions
from agents.rag.schema_slice import NotProfiledError
from agents.sql.tiers import ModelTier
from indices.index_set import IndexSet
from kb.store import KnowledgeStore
from kb.target.database import Database
from server.limits import Admission, GateTimeoutError, LLMGate
from server.llm_factory import LLMTiers
from server.metrics import Metrics
from server.readiness import MODEL_PREFIX, Readiness, model_component
from server.sql_pool import SqlPool
from ukf import QueryContext

Event = dict[str, Any]
T = TypeVar("T")
log = logging.getLogger(__name__)
WARM_UP_WAIT_S = 600.0  # the longest a question without a deadline waits for the warm-up
WARMING_RETRY_AFTER_S = "5"


class AskService:
    """Questions to the target database, as the server answers them.

    Args:
        store: the knowledge store.
        indices: the server's indices (the retriever is taken from them per question).
        target: the target database (None: asking answers 409).
        database_name: its ``[DATABASE:...]`` name.
        llms: the configured LLM tiers (None: asking answers 409).
        tier_names: the cascade's tiers small to large (empty: the default tier alone).
        gate: the LLM gate every question passes.
        metrics: where stage latencies go.
        sql_pool: where the corrected SQL of feedback runs (default: 4 running, 32 waiting,
            2 per key).
        options: the pipeline's options (feedback agreement, budgets, sampling).
        readiness: the warm-up's progress, which questions wait for (default: a new one).
        confidence: calibrator and options of the answers' confidence (default: the
            packaged calibrator, never abstaining, fixed ``n``).
    """

    def __init__(
        self,
        store: KnowledgeStore,
        indices: IndexSet,
        *,
        target: Database | None,
        database_name: str,
        llms: LLMTiers | None,
        tier_names: list[str],
        gate: LLMGate,
        metrics: Metrics,
        sql_pool: SqlPool | None = None,
        options: PipelineOptions | None = None,
        readiness: Readiness | None = None,
        confidence: tuple[CalibratorSource, ConfidenceOptions] | None = None,
    ) -> None:
        self.store, self.indices, self.target = store, indices, target
        self.confidence = confidence
        self.readiness = readiness or Readiness()
        self.options = options or PipelineOptions()
        self.database_name, self.llms, self.tier_names = database_name, llms, tier_names
        self.gate, self.metrics = gate, metrics
        self.sql_pool = sql_pool or SqlPool(4, 32, 2)
        self._pipeline: Pipeline | None = None
        self._lock = threading.Lock()
        # one thread per admitted question: admission never lets more in
        self._threads = ThreadPoolExecutor(
            gate.concurrency + gate.queue, thread_name_prefix="almanac-ask"
        )

    def close(self) -> None:
        """Stop the threads once their questions and queries are done."""
        self._threads.shutdown(wait=False, cancel_futures=True)
        self.sql_pool.close()

    def _require_configured(self) -> None:
        if self.target is None:
            raise HTTPException(
                409, "no target database is configured (ALMANAC_TARGET_URL); nothing to ask"
            )
        if self.llms is None:
            raise HTTPException(409, "no LLM tier is configured (ALMANAC_LLM_TIERS)")

    def pipeline(self) -> Pipeline:
        self._require_configured()
        assert self.target is not None
        with self._lock:
            if self._pipeline is None:
                assessor = None
                if self.confidence is not None:
                    calibrators, options = self.confidence
                    assessor = ConfidenceAssessor(
                        self.store,
                        self.database_name,
                        dialect=self.target.dialect,
                        calibrators=calibrators,
                        options=options,
                    )
                self._pipeline = Pipeline(
                    store=self.store,
                    retriever=self.indices.retriever,
                    database=self.target,
                    database_name=self.database_name,
                    tiers=self._tiers(),
                    options=self.options,
                    confidence=assessor,
                )
            return self._pipeline

    def ask_tiers(self) -> list[str]:
        """The tiers questions use: the cascade's, else the default one."""
        assert self.llms is not None
        return list(self.tier_names or [self.llms.default])

    def _ready_to_answer(
        self, admission: Admission, options: AskOptions, began: float
    ) -> AskOptions:
        """Wait for the warm-up and a free model slot within the deadline of the question
        asked at ``began`` (503 past it). A question asked during the warm-up is answered
        within what its wait left of its deadline (to a tenth of a second); one asked once
        the server is ready keeps all of it, as its wait at the gate is bounded apart."""
        warm = self.indices.wait_settled(0) and self.readiness.overall() in ("ready", "degraded")
        until = began + (options.deadline_s or WARM_UP_WAIT_S)
        if not self.indices.wait_settled(until - began):
            raise _warming(began, "the indices are still being built")
        tiers = [model_component(name) for name in self.ask_tiers()]
        if pending := self.readiness.wait_settled(tiers, until):
            names = ", ".join(name.removeprefix(MODEL_PREFIX) for name in pending)
            raise _warming(began, f"the model of LLM tier {names} is still loading")
        admission.wait_for_model(until)
        if warm or options.deadline_s is None:
            return options
        left = until - time.monotonic()
        if left <= 0:
            raise _warming(began, "the model is still busy with the warm-up")
        return replace(options, deadline_s=round(max(left, 0.1), 1))

    def warm_up_tiers(self) -> list[ModelTier]:
        """The ask tiers, each call taking the warm-up's turn at the gate (after every
        question in progress): what :class:`server.readiness.WarmUp` prefills."""
        return self._tiers(warm_up=True)

    def _tiers(self, *, warm_up: bool = False) -> list[ModelTier]:
        """The ask tiers, gated per call (``warm_up``: with the warm-up's low priority)."""
        llms = self.llms
        assert llms is not None
        return [
            ModelTier(
                name,
                _GatedLLM(
                    _loader(llms, name),
                    name,
                    self.gate,
                    llms.decoded_together(name),
                    warm_up=warm_up,
                ),
            )
            for name in self.ask_tiers()
        ]

    async def ask(self, question: str, context: QueryContext, options: AskOptions) -> Answer:
        """Answer on an ask thread once admitted (see the module docstring: 409, 429 and 503
        come before any work); ``context.reader`` decides what knowledge is seen."""
        return await self.run(
            options, lambda pipeline, ready: self._answer(pipeline, question, context, ready)
        )

    async def run(self, options: AskOptions, work: Callable[[Pipeline, AskOptions], T]) -> T:
        """``work(pipeline, options)`` on an ask thread once admitted, as a question is
        answered (an analysis asks several through it); ``options`` as the deadline left."""
        self._require_configured()
        began = time.monotonic()
        admission = self.gate.admit()

        def job() -> T:
            with admission:
                pipeline = self.pipeline()
                ready = self._ready_to_answer(admission, options, began)
                return work(pipeline, ready)

        return await asyncio.wrap_future(self._submit(admission, job))

    async def stream(
        self, question: str, context: QueryContext, options: AskOptions
    ) -> AsyncIterator[Event]:
        """The stages of one answer as they happen (``evidence``, ``candidate``, ``vote``,
        ``final``, or ``error`` with a status), answered on an ask thread.

        A missing target or model (409) and a saturated gate (429, or 503 when no model slot
        comes free) raise here, before the first event."""

        def work(pipeline: Pipeline, ready: AskOptions, put: Callable[[Event], None]) -> None:
            self._answer(pipeline, question, context, ready, on_event=put)

        return await self.stream_work(options, work, what=repr(question))

    async def stream_work(
        self,
        options: AskOptions,
        work: Callable[[Pipeline, AskOptions, Callable[[Event], None]], object],
        *,
        what: str,
    ) -> AsyncIterator[Event]:
        """The events ``work(pipeline, options, put)`` puts, as they happen, run on an ask
        thread once admitted; an ``error`` event (with a status) ends a failed one."""
        self._require_configured()
        began = time.monotonic()
        admission = self.gate.admit()
        loop = asyncio.get_running_loop()
        events: asyncio.Queue[Event | None] = asyncio.Queue()
        started: Future[None] = Future()

        def put(event: Event | None) -> None:
            with suppress(RuntimeError):  # a closed loop: the server stopped, nobody listens
                loop.call_soon_threadsafe(events.put_nowait, event)

        def job() -> None:
            with admission:
                try:
                    pipeline = self.pipeline()
                    ready = self._ready_to_answer(admission, options, began)
                except BaseException as exc:
                    started.set_exception(exc)
                    return
                started.set_result(None)
                try:
                    work(pipeline, ready, put)
                except HTTPException as exc:
                    put({"stage": "error", "status": exc.status_code, "detail": exc.detail})
                except LLMBusyError as exc:
                    put({"stage": "error", "status": 503, "detail": str(exc)})
                except Exception as exc:  # the stream must end with a reason, not hang
                    log.exception("streamed work failed: %s", what)
                    detail = f"{type(exc).__name__}: {exc}"
                    put({"stage": "error", "status": 500, "detail": detail})
            put(None)  # after the admission is released

        self._submit(admission, job)
        await asyncio.wrap_future(started)
        return _drain(events)

    def _submit(self, admission: Admission, work: Callable[[], T]) -> Future[T]:
        """``work`` on an ask thread; the admission is released when it ends (or never
        starts), whatever became of the request that waits for it."""
        try:
            future = self._threads.submit(work)
        except BaseException:
            admission.release()
            raise
        future.add_done_callback(lambda _: admission.release())
        return future

    def _answer(
        self,
        pipeline: Pipeline,
        question: str,
        context: QueryContext,
        options: AskOptions,
        on_event: Callable[[Event], None] | None = None,
    ) -> Answer:
        """Answer without taking a gate slot (the caller holds one) and record the stages."""
        try:
            answer = pipeline.ask(question, context, options, on_event=on_event)
        except QuestionError as exc:
            raise HTTPException(422, str(exc)) from None
        except NotProfiledError as exc:
            raise HTTPException(409, str(exc)) from None
        for stage in answer.stages:
            self.metrics.observe_stage(stage.stage, stage.seconds)
        self.metrics.observe_stage("ask", answer.seconds)
        return answer


def _warming(began: float, what: str) -> HTTPException:
    waited = time.monotonic() - began
    return HTTPException(
        503,
        f"Almanac is still warming up: {what} after the question waited {waited:.1f} s "
        "(its deadline); try again shortly",
        headers={"Retry-After": WARMING_RETRY_AFTER_S},
    )


async def _drain(events: asyncio.Queue[Event | None]) -> AsyncIterator[Event]:
    while (event := await events.get()) is not None:
        yield event


def _loader(llms: LLMTiers, name: str) -> Callable[[], Any]:
    """Loads tier ``name`` when called (bound now, not when the loop has moved on)."""
    return lambda: llms.get(name)


class _GatedLLM:
    """A tier whose every call takes its turn at the LLM gate (a slot for the call's
    duration; no free slot within the gate's wait is :class:`LLMBusyError`, 503), and which
    loads its model on the first call (tier models cost seconds and memory). ``warm_up``: the
    calls take the warm-up's turn (after every question in progress, never refused)."""

    def __init__(
        self,
        load: Callable[[], Any],
        name: str,
        gate: LLMGate,
        together: int = 1,
        *,
        warm_up: bool = False,
    ) -> None:
        self._load, self.name, self._gate = load, name, gate
        self._turn = gate.warm_up_turn if warm_up else gate.turn
        # known from the settings, so a cascade can plan a tier without loading its model
        self.variants_together, self.parallel_sequences = together > 1, together

    def chat(self, messages: Any, **options: Any) -> Any:
        return self._in_turn(lambda: self._load().chat(messages, **options))

    def chat_variants(self, messages: Any, variants: Any, **options: Any) -> Any:
        return self._in_turn(lambda: variants_of(self._load(), messages, variants, **options))

    def _in_turn(self, call: Callable[[], T]) -> T:
        try:
            with self._turn():  # the wrapped model itself never raises GateTimeoutError
                return call()
        except GateTimeoutError as exc:
            raise LLMBusyError(f"{self.name}: {exc}") from None

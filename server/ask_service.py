"""The agent pipeline as the server runs it: built once in ``build_state``.

``AskService.pipeline()`` wires ``agents.pipeline.Pipeline`` (on the first question) to the
server's store, its current indices (asked per question, so a reindex job's swap is picked
up), the target database and the LLM tiers (``cascade_tiers`` small to large, ending with the
default tier). ``AskService.warm_in_background`` prefills the models with the target's shared
prompt prefix after start (``ALMANAC_WARM_ON_START``, see ``agents.warm``).

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
from collections.abc import AsyncIterator, Callable
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import suppress
from typing import Any, TypeVar

from fastapi import HTTPException

from agents.answer import Answer
from agents.llm.base import LLMBusyError
from agents.llm.variants import variants_of
from agents.pipeline import AskOptions, Pipeline, QuestionError
from agents.pipeline_options import PipelineOptions
from agents.rag.schema_slice import NotProfiledError
from agents.sql.tiers import ModelTier
from agents.warm import WarmReport, warm_pipeline
from indices.index_set import IndexSet
from kb.store import KnowledgeStore
from kb.target.database import Database
from server.limits import Admission, GateTimeoutError, LLMGate
from server.llm_factory import LLMTiers
from server.metrics import Metrics
from server.sql_pool import SqlPool
from ukf import QueryContext

Event = dict[str, Any]
T = TypeVar("T")
log = logging.getLogger(__name__)
INDICES_WAIT_S = 600.0


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
    ) -> None:
        self.store, self.indices, self.target = store, indices, target
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
                self._pipeline = Pipeline(
                    store=self.store,
                    retriever=self.indices.retriever,
                    database=self.target,
                    database_name=self.database_name,
                    tiers=self._tiers(),
                    options=self.options,
                )
            return self._pipeline

    def warm(self) -> WarmReport | None:
        """Prefill the ask tiers' models with the target's shared prompt prefix; each model
        call takes its turn at the gate (a question asked meanwhile waits behind it)."""
        if self.target is None or self.llms is None:
            return None
        if not self.indices.wait_ready(INDICES_WAIT_S):
            log.warning("not warmed: the indices were not ready in %.0f s", INDICES_WAIT_S)
            return None
        return warm_pipeline(self.pipeline())

    def warm_in_background(self) -> threading.Thread:
        """:meth:`warm` in a daemon thread; a failure is logged (it only costs speed)."""

        def run() -> None:
            try:
                self.warm()
            except Exception:
                log.exception("warming the models failed; the first question will be slower")

        thread = threading.Thread(target=run, name="almanac-warm", daemon=True)
        thread.start()
        return thread

    def _tiers(self) -> list[ModelTier]:
        llms = self.llms
        assert llms is not None
        names = self.tier_names or [llms.default]
        return [
            ModelTier(
                name,
                _GatedLLM(_loader(llms, name), name, self.gate, llms.decoded_together(name)),
            )
            for name in names
        ]

    async def ask(self, question: str, context: QueryContext, options: AskOptions) -> Answer:
        """Answer on an ask thread once admitted (see the module docstring: 409, 429 and 503
        come before any work); ``context.reader`` decides what knowledge is seen."""
        self._require_configured()
        admission = self.gate.admit()

        def work() -> Answer:
            with admission:
                pipeline = self.pipeline()
                admission.wait_for_model()
                return self._answer(pipeline, question, context, options)

        return await asyncio.wrap_future(self._submit(admission, work))

    async def stream(
        self, question: str, context: QueryContext, options: AskOptions
    ) -> AsyncIterator[Event]:
        """The stages of one answer as they happen (``evidence``, ``candidate``, ``vote``,
        ``final``, or ``error`` with a status), answered on an ask thread.

        A missing target or model (409) and a saturated gate (429, or 503 when no model slot
        comes free) raise here, before the first event."""
        self._require_configured()
        admission = self.gate.admit()
        loop = asyncio.get_running_loop()
        events: asyncio.Queue[Event | None] = asyncio.Queue()
        started: Future[None] = Future()

        def put(event: Event | None) -> None:
            with suppress(RuntimeError):  # a closed loop: the server stopped, nobody listens
                loop.call_soon_threadsafe(events.put_nowait, event)

        def work() -> None:
            with admission:
                try:
                    pipeline = self.pipeline()
                    admission.wait_for_model()
                except BaseException as exc:
                    started.set_exception(exc)
                    return
                started.set_result(None)
                try:
                    self._answer(pipeline, question, context, options, on_event=put)
                except HTTPException as exc:
                    put({"stage": "error", "status": exc.status_code, "detail": exc.detail})
                except LLMBusyError as exc:
                    put({"stage": "error", "status": 503, "detail": str(exc)})
                except Exception as exc:  # the stream must end with a reason, not hang
                    log.exception("streamed ask failed: %r", question)
                    detail = f"{type(exc).__name__}: {exc}"
                    put({"stage": "error", "status": 500, "detail": detail})
            put(None)  # after the admission is released

        self._submit(admission, work)
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


async def _drain(events: asyncio.Queue[Event | None]) -> AsyncIterator[Event]:
    while (event := await events.get()) is not None:
        yield event


def _loader(llms: LLMTiers, name: str) -> Callable[[], Any]:
    """Loads tier ``name`` when called (bound now, not when the loop has moved on)."""
    return lambda: llms.get(name)


class _GatedLLM:
    """A tier whose every call takes its turn at the LLM gate (a slot for the call's
    duration; no free slot within the gate's wait is :class:`LLMBusyError`, 503), and which
    loads its model on the first call (tier models cost seconds and memory)."""

    def __init__(self, load: Callable[[], Any], name: str, gate: LLMGate, together: int = 1):
        self._load, self.name, self._gate = load, name, gate
        # known from the settings, so a cascade can plan a tier without loading its model
        self.variants_together, self.parallel_sequences = together > 1, together

    def chat(self, messages: Any, **options: Any) -> Any:
        return self._in_turn(lambda: self._load().chat(messages, **options))

    def chat_variants(self, messages: Any, variants: Any, **options: Any) -> Any:
        return self._in_turn(lambda: variants_of(self._load(), messages, variants, **options))

    def _in_turn(self, call: Callable[[], T]) -> T:
        try:
            with self._gate.turn():  # the wrapped model itself never raises GateTimeoutError
                return call()
        except GateTimeoutError as exc:
            raise LLMBusyError(f"{self.name}: {exc}") from None

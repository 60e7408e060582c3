"""The agent pipeline as the server runs it: built once in ``build_state``.

``AskService.pipeline()`` wires ``agents.pipeline.Pipeline`` (on the first question) to the
server's store, its current indices (asked per question, so a reindex job's swap is picked
up), the target database and the LLM tiers (``cascade_tiers`` small to large, ending with the
default tier). ``AskService.ask`` runs one question inside the LLM gate (429/503 when
saturated) and records per-stage latencies in the metrics; ``AskService.stream`` does the same
for the SSE route, taking the gate slot before the first event so a refusal is still an HTTP
status. ``AskService.warm_in_background`` prefills the models with the target's shared prompt
prefix after start (``ALMANAC_WARM_ON_START``, see ``agents.warm``).
"""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from typing import Any

from fastapi import HTTPException

from agents.answer import Answer
from agents.llm.variants import variants_of
from agents.pipeline import AskOptions, Pipeline, QuestionError
from agents.rag.schema_slice import NotProfiledError
from agents.sql.tiers import ModelTier
from agents.warm import WarmReport, warm_pipeline
from indices.index_set import IndexSet
from kb.store import KnowledgeStore
from kb.target.database import Database
from server.limits import LLMGate
from server.llm_factory import LLMTiers
from server.metrics import Metrics
from ukf import QueryContext

Event = dict[str, Any]
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
    ) -> None:
        self.store, self.indices, self.target = store, indices, target
        self.database_name, self.llms, self.tier_names = database_name, llms, tier_names
        self.gate, self.metrics = gate, metrics
        self._pipeline: Pipeline | None = None
        self._lock = threading.Lock()

    def pipeline(self) -> Pipeline:
        if self.target is None:
            raise HTTPException(
                409, "no target database is configured (ALMANAC_TARGET_URL); nothing to ask"
            )
        if self.llms is None:
            raise HTTPException(409, "no LLM tier is configured (ALMANAC_LLM_TIERS)")
        with self._lock:
            if self._pipeline is None:
                self._pipeline = Pipeline(
                    store=self.store,
                    retriever=self.indices.retriever,
                    database=self.target,
                    database_name=self.database_name,
                    tiers=self._tiers(),
                )
            return self._pipeline

    def warm(self) -> WarmReport | None:
        """Prefill the ask tiers' models with the target's shared prompt prefix, in a gate
        slot (a question asked meanwhile waits its turn, as behind another question)."""
        if self.target is None or self.llms is None:
            return None
        if not self.indices.wait_ready(INDICES_WAIT_S):
            log.warning("not warmed: the indices were not ready in %.0f s", INDICES_WAIT_S)
            return None
        pipeline = self.pipeline()
        with self.gate.slot():
            return warm_pipeline(pipeline)

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
            ModelTier(name, _LazyLLM(_loader(llms, name), name, llms.decoded_together(name)))
            for name in names
        ]

    def ask(self, question: str, context: QueryContext, options: AskOptions) -> Answer:
        """Answer inside the LLM gate; ``context.reader`` decides what knowledge is seen."""
        pipeline = self.pipeline()
        with self.gate.slot():
            return self._answer(pipeline, question, context, options)

    def stream(self, question: str, context: QueryContext, options: AskOptions) -> Iterator[Event]:
        """The stages of one answer as they happen (``evidence``, ``candidate``, ``vote``,
        ``final``, or ``error`` with a status), answered in a background thread.

        A missing target or model (409) and a full gate (429/503) raise here, before the
        first event; the gate slot is held until the answer is done."""
        pipeline = self.pipeline()
        held = ExitStack()
        held.enter_context(self.gate.slot())
        events: queue.Queue[Event | None] = queue.Queue()

        def work() -> None:
            try:
                self._answer(pipeline, question, context, options, on_event=events.put)
            except HTTPException as exc:
                events.put({"stage": "error", "status": exc.status_code, "detail": exc.detail})
            except Exception as exc:  # the stream must end with a reason, not hang
                log.exception("streamed ask failed: %r", question)
                detail = f"{type(exc).__name__}: {exc}"
                events.put({"stage": "error", "status": 500, "detail": detail})
            finally:
                held.close()
                events.put(None)

        threading.Thread(target=work, name="almanac-ask-stream", daemon=True).start()
        return _drain(events)

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


def _drain(events: queue.Queue[Event | None]) -> Iterator[Event]:
    while (event := events.get()) is not None:
        yield event


def _loader(llms: LLMTiers, name: str) -> Callable[[], Any]:
    """Loads tier ``name`` when called (bound now, not when the loop has moved on)."""
    return lambda: llms.get(name)


class _LazyLLM:
    """A tier that loads its model on the first call (tier models cost seconds and memory)."""

    def __init__(self, load: Callable[[], Any], name: str, together: int = 1) -> None:
        self._load, self.name = load, name
        # known from the settings, so a cascade can plan a tier without loading its model
        self.variants_together, self.parallel_sequences = together > 1, together

    def chat(self, messages: Any, **options: Any) -> Any:
        return self._load().chat(messages, **options)

    def chat_variants(self, messages: Any, variants: Any, **options: Any) -> Any:
        return variants_of(self._load(), messages, variants, **options)

"""The agent pipeline as the server runs it: built once from the app state, on first ask.

``AskService.pipeline()`` wires ``agents.pipeline.Pipeline`` to the server's store, its
current indices (asked per question, so a reindex job's swap is picked up), the target
database and the LLM tiers (``cascade_tiers`` small to large, ending with the default tier).
``AskService.ask`` runs one question inside the LLM gate (429/503 when saturated) and records
per-stage latencies in the metrics. ``AskService.warm_in_background`` prefills the models with
the target's shared prompt prefix after start (``ALMANAC_WARM_ON_START``, see ``agents.warm``).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any

from fastapi import HTTPException

from agents.answer import Answer
from agents.llm_variants import variants_of
from agents.pipeline import AskOptions, ModelTier, Pipeline, QuestionError
from agents.schema_slice import NotProfiledError
from agents.warm import WarmReport, warm_pipeline
from server.auth import Identity
from server.state import AppState

Event = dict[str, Any]
log = logging.getLogger(__name__)
INDICES_WAIT_S = 600.0


class AskService:
    def __init__(self, state: AppState) -> None:
        self.state = state
        self._pipeline: Pipeline | None = None
        self._lock = threading.Lock()

    def pipeline(self) -> Pipeline:
        state = self.state
        if state.target is None:
            raise HTTPException(
                409, "no target database is configured (ALMANAC_TARGET_URL); nothing to ask"
            )
        if state.llms is None:
            raise HTTPException(409, "no LLM tier is configured (ALMANAC_LLM_TIERS)")
        with self._lock:
            if self._pipeline is None:
                self._pipeline = Pipeline(
                    store=state.store,
                    retriever=state.indices.retriever,
                    database=state.target,
                    database_name=state.settings.resolved_target_name or "target",
                    tiers=self._tiers(),
                )
            return self._pipeline

    def warm(self) -> WarmReport | None:
        """Prefill the ask tiers' models with the target's shared prompt prefix, in a gate
        slot (a question asked meanwhile waits its turn, as behind another question)."""
        state = self.state
        if state.target is None or state.llms is None:
            return None
        if not state.indices.wait_ready(INDICES_WAIT_S):
            log.warning("not warmed: the indices were not ready in %.0f s", INDICES_WAIT_S)
            return None
        pipeline = self.pipeline()
        with state.llm_gate.slot():
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
        llms, settings = self.state.llms, self.state.settings
        assert llms is not None
        names = settings.cascade_tiers or [llms.default]
        return [
            ModelTier(name, _LazyLLM(lambda n=name: llms.get(n), name, llms.decoded_together(name)))
            for name in names
        ]

    def ask(
        self,
        question: str,
        context: dict[str, Any],
        options: AskOptions,
        identity: Identity,
        on_event: Callable[[Event], None] | None = None,
    ) -> Answer:
        """Answer inside the LLM gate; the caller's identity decides what knowledge is seen."""
        pipeline = self.pipeline()
        with self.state.llm_gate.slot():
            return self.run(pipeline, question, asked_by(identity, context), options, on_event)

    def run(
        self,
        pipeline: Pipeline,
        question: str,
        context: dict[str, Any],
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
        metrics = self.state.metrics
        for stage in answer.stages:
            metrics.observe_stage(stage.stage, stage.seconds)
        metrics.observe_stage("ask", answer.seconds)
        return answer


def asked_by(identity: Identity, context: dict[str, Any]) -> dict[str, Any]:
    """``context`` plus who asks (user, groups, workspace): what the knowledge reader sees."""
    return {
        **context,
        "user": identity.user,
        "groups": sorted(identity.groups),
        "workspace": identity.workspace,
    }


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

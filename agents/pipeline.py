"""The online chain in one place: RAG -> SQL-gen -> refine -> vote (or cascade) -> Answer.

``Pipeline.ask(question, context, options)`` answers one question on one target database:

1. ``retrieve``: the RAG agent builds the schema slice, hints and examples;
2. ``generate`` / ``refine``: each tier's model writes candidates, rewritten (the default
   filters they lack, day differences on SQLite: :mod:`agents.sql.rewrites`), executed
   read-only and repaired (``agents.sql.cascade``, ``agents.sql.refine``);
3. ``vote``: majority over execution results (before 2, an active mined query template the
   worked examples agree on, filled with the question's values, answers with no model call
   when it returns rows: :mod:`agents.sql.template_fill`);
4. ``assess``: the answer's confidence signals and their calibrated P(correct)
   (:mod:`agents.confidence`); under the threshold the answer abstains: it says why, offers
   nearby answerable questions or asks which meaning of a phrase was meant, and withholds its
   rows. With adaptive sampling, the same confidence decides how many samples step 2 draws;
5. ``log``: the question is stored as an unlabeled Experience; its answer id is what feedback
   refers to (``Pipeline.feedback``).

With ``options.cascade`` the configured tiers run small to large; otherwise the default model
(the last tier) draws ``options.n`` candidates. ``on_event`` receives one dict per stage
(``evidence``, ``candidate``, ``vote``, ``final``) for streaming clients.

``options.deadline_s`` bounds a question's drawing and repairing: once that many seconds have
passed since it was asked, no sample is drawn, no query starts and no repair is asked; a query
gets at most the time left, and a model call still running stops (a
:class:`~agents.llm.base.Cancellation` with the deadline, a child of the caller's token). The
answer is then made of what there is, and says so (``error`` when nothing ran, the
``refine`` stage's ``deadline_passed`` detail always).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

from agents.adaptive_trace import AdaptiveTrace
from agents.answer import Answer, Candidate, StageReport
from agents.ask_options import AskOptions, QuestionError, checked_question, deadline_token
from agents.confidence.abstain import abstention
from agents.confidence.assess import Assessment, ConfidenceAssessor
from agents.experience_log import ExperienceLog, FeedbackOutcome, Verdict
from agents.learn.credit import BlameThreshold
from agents.llm.base import LLM, cancellation_scope
from agents.pipeline_options import PipelineOptions
from agents.rag.agent import RagAgent, RagContext
from agents.rag.schema_slice import SchemaCatalog
from agents.sql.cascade import Cascade, CascadeOutcome
from agents.sql.extract import statement_only
from agents.sql.generate import SqlGenerator
from agents.sql.predicates import PredicateChecker
from agents.sql.refine_steps import DEADLINE_NOTE
from agents.sql.rewrites import QueryRewriter, question_rewrites
from agents.sql.template_fill import TemplateFiller
from agents.sql.tiers import ModelTier, build_cascade
from agents.sql.vote import VoteOutcome
from indices.index_set import IndexNotReadyError
from indices.retriever import Retriever
from indices.string import StringIndex
from kb.store import KnowledgeStore
from kb.target.database import Database
from kb.visibility import Reader
from ukf import QueryContext

log = logging.getLogger(__name__)
Event = dict[str, Any]


class Pipeline:
    """Answers questions about one target database.

    Args:
        store: the knowledge store (also where questions are logged).
        retriever: the fused retriever over ``store`` (or a function returning the current one).
        database: the target database (read-only).
        database_name: its ``[DATABASE:...]`` name in the store.
        tiers: models small to large; the last is the default model.
        options: budgets, sampling and refinement options.
        confidence: how answers are assessed (calibrator, abstention, adaptive sampling);
            default: the packaged calibrator, never abstaining, fixed ``n``.
    """

    def __init__(
        self,
        *,
        store: KnowledgeStore,
        retriever: Retriever | Callable[[], Retriever],
        database: Database,
        database_name: str,
        tiers: list[ModelTier],
        options: PipelineOptions | None = None,
        confidence: ConfidenceAssessor | None = None,
    ) -> None:
        if not tiers:
            raise ValueError("a pipeline needs at least one model")
        self.store, self.database, self.database_name = store, database, database_name
        self.tiers = tiers
        self.options = options or PipelineOptions()
        self.dialect = database.dialect
        self.catalog = SchemaCatalog(store, database_name)
        self.rag = RagAgent(
            retriever,
            self.catalog,
            self.options.rag,
            llm=tiers[-1].llm,
            database=database,
        )
        self.checker = PredicateChecker(store, database_name, self.dialect)
        self.confidence = confidence or ConfidenceAssessor(
            store, database_name, dialect=self.dialect
        )
        self.experiences = ExperienceLog(
            store,
            database,
            database_name,
            self.dialect,
            agreement=self.options.feedback_agreement,
            blame=BlameThreshold(self.options.blame_threshold),
            strings=self._strings,
        )
        k = self.options.template_examples
        self.templates = TemplateFiller(store, database, database_name, retriever, top_k=k)

    def _strings(self) -> StringIndex | None:
        """The current string index (None while the indices are not ready)."""
        try:
            return self.rag.retriever.strings
        except IndexNotReadyError:  # learning from a correction goes on without it
            return None

    @property
    def default_llm(self) -> LLM:
        return self.tiers[-1].llm

    # ------------------------------------------------------------------ ask
    def ask(
        self,
        question: str,
        context: QueryContext | None = None,
        options: AskOptions | None = None,
        *,
        on_event: Callable[[Event], None] | None = None,
    ) -> Answer:
        """Answer ``question`` asked in ``context`` (query time, user profile, reader)."""
        question = checked_question(question)
        self.catalog.require_tables()
        options = options or AskOptions()
        context = (context or QueryContext()).on(self.database_name)
        emit = on_event or (lambda event: None)
        started = time.perf_counter()
        deadline = None if options.deadline_s is None else time.monotonic() + options.deadline_s
        rag = self.rag.run(question, context, explore=options.explore)
        answer = Answer(id="", question=question, database=self.database_name)
        answer.knowledge = rag.used
        answer.stages.append(
            StageReport(
                stage="retrieve",
                seconds=rag.seconds,
                prompt_tokens=rag.prompt_tokens,
                completion_tokens=rag.completion_tokens,
                detail={"evidence_items": len(rag.evidence.items), "tokens": rag.tokens},
            )
        )
        emit({"stage": "evidence", "knowledge": [k.model_dump() for k in rag.used]})
        if options.execute:
            templates = self.options.templates and self.templates
            templated = templates and templates.outcome(rag, context, answer.knowledge)
            trace = AdaptiveTrace(started)
            with cancellation_scope(deadline_token(deadline)):  # stops a model call at it
                outcome = templated or self._candidates(
                    rag, context, options, emit, deadline, trace
                )
            self._fill_from(answer, outcome, options, deadline, trace)
            self._assess(answer, rag, outcome, options)
        else:
            self._unexecuted(answer, rag, context)
        self._log(answer, context)
        answer.seconds = time.perf_counter() - started
        answer.prompt_tokens = sum(s.prompt_tokens for s in answer.stages)
        answer.completion_tokens = sum(s.completion_tokens for s in answer.stages)
        emit({"stage": "final", "answer": answer.model_dump(mode="json")})
        return answer

    def feedback(
        self,
        answer_id: str,
        verdict: Verdict,
        *,
        corrected_sql: str | None = None,
        comment: str = "",
        reviewer: str | None = None,
        reader: Reader | None = None,
    ) -> FeedbackOutcome:
        """Apply feedback on an earlier answer (see ``agents.experience_log``); ``reader`` is
        who gives it: answers they cannot see are unknown to them. The outcome lists the facts
        a correction taught (``learned``) and the credit or blame counted on the knowledge
        the answer used (``credit``)."""
        return self.experiences.feedback(
            answer_id,
            verdict,
            corrected_sql=corrected_sql,
            comment=comment,
            reviewer=reviewer,
            reader=reader,
        )

    # ------------------------------------------------------------------ stages
    def _cascade(
        self, rag: RagContext, options: AskOptions, deadline: float | None, trace: AdaptiveTrace
    ) -> Cascade:
        pipeline_options = self.options
        per_question = question_rewrites(rag)
        if deadline is not None or any(per_question.values()):
            refine = replace(pipeline_options.refine, deadline=deadline, **per_question)
            pipeline_options = replace(pipeline_options, refine=refine)
        settings = self.confidence.options
        adaptive = options.adaptive
        if adaptive is None:
            adaptive = settings.adaptive and options.n == 1
        stop_rule = None
        if adaptive:

            def assess(found: Sequence[Candidate], voted: VoteOutcome, tiers: int) -> float:
                return self.confidence.assess(rag, found, voted, tiers_tried=tiers).confidence

            stop_rule = trace.rule(
                assess,
                settings.target,
                tiers=len(self.tiers) if options.cascade else 1,
                escalation_target=settings.escalation_target,
            )

        return build_cascade(
            self.tiers,
            pipeline_options,
            cascade=options.cascade,
            n=(options.n if options.n > 1 else settings.max_samples) if adaptive else options.n,
            database=self.database,
            checker=self.checker,
            stop_rule=stop_rule,
        )

    def _candidates(
        self,
        rag: RagContext,
        context: QueryContext,
        options: AskOptions,
        emit: Callable[[Event], None],
        deadline: float | None,
        trace: AdaptiveTrace,
    ) -> CascadeOutcome:
        def seen(candidate: Candidate) -> None:
            emit({"stage": "candidate", "candidate": candidate.summary().model_dump()})

        cascade = self._cascade(rag, options, deadline, trace)
        outcome = cascade.run(rag, context, on_candidate=seen)
        emit(
            {
                "stage": "vote",
                "winner": outcome.winner.sql if outcome.winner else None,
                "vote_share": outcome.confidence,
                "tier": outcome.tier,
                "groups": [len(g) for g in (outcome.vote.groups if outcome.vote else [])],
            }
        )
        return outcome

    def _fill_from(
        self,
        answer: Answer,
        outcome: CascadeOutcome,
        options: AskOptions,
        deadline: float | None,
        trace: AdaptiveTrace,
    ) -> None:
        cands = outcome.candidates
        stopped = deadline is not None and (
            time.monotonic() >= deadline or any(DEADLINE_NOTE in c.notes for c in cands)
        )
        answer.candidates = [c.summary() for c in cands]
        answer.stages.append(
            StageReport(
                stage="generate",
                seconds=sum(c.generate_seconds for c in cands),
                prompt_tokens=sum(c.prompt_tokens for c in cands),
                completion_tokens=sum(c.completion_tokens for c in cands),
                detail={
                    "candidates": len(cands),
                    "tiers": outcome.tiers_tried,
                    **({"adaptive": trace.checks} if trace.checks else {}),
                },
            )
        )
        answer.stages.append(
            StageReport(
                stage="refine",
                seconds=sum(c.refine_seconds for c in cands),
                detail={
                    "repairs": sum(c.repairs for c in cands),
                    "failed": sum(not c.ok for c in cands),
                    "cancelled": outcome.cancelled,
                    "deadline_passed": stopped,
                },
            )
        )
        winner = outcome.winner
        answer.tier = outcome.tier
        answer.vote_share = round(outcome.confidence, 4)
        answer.samples = len(cands)
        if winner is None or winner.results is None:
            errors = [c.error for c in cands if c.error]
            answer.error = "no candidate SQL ran successfully" + (
                f" before the answer's deadline ({options.deadline_s:g} s)" if stopped else ""
            )
            answer.error += f"; last error: {errors[-1]}" if errors else ""
            answer.sql = next((statement_only(c.sql) for c in cands if c.sql), None) or None
            return
        results = winner.results
        answer.sql, answer.reasoning = statement_only(winner.sql) or None, winner.reasoning
        answer.columns = list(results.columns)
        answer.rows = [list(r) for r in results.rows[: options.max_rows]]
        answer.row_count = results.row_count
        answer.truncated = results.truncated or results.row_count > options.max_rows
        answer.executed = True

    def _assess(
        self, answer: Answer, rag: RagContext, outcome: CascadeOutcome, options: AskOptions
    ) -> None:
        """The answer's calibrated confidence; an abstention when it is under the threshold."""
        started = time.perf_counter()
        assessed: Assessment = self.confidence.assess(
            rag,
            outcome.candidates,
            outcome.vote,
            plain_fallback=outcome.plain_fallback,
            tiers_tried=len(outcome.tiers_tried),
        )
        # no candidate ran: there is no answer to be confident in (``error`` says why)
        answer.confidence = assessed.confidence if outcome.winner is not None else 0.0
        answer.signals = {k: round(v, 4) for k, v in assessed.signals.features.items()}
        answer.calibrator = assessed.calibrator
        settings = self.confidence.options
        threshold = settings.abstain_below
        # an answer that ran nothing abstains too (beside its error): the reasons say why
        if options.abstain and answer.confidence < threshold:
            answer.abstained = True
            answer.abstention = abstention(
                assessed.signals,
                confidence=answer.confidence,
                threshold=threshold,
                database=self.database_name,
                examples=rag.examples,
                question=answer.question,
                suggestions=settings.suggestions,
            )
            if settings.withhold_rows and answer.rows:
                answer.withheld_rows, answer.rows = answer.row_count, []
        answer.stages.append(
            StageReport(
                stage="assess",
                seconds=time.perf_counter() - started,
                detail={"abstained": answer.abstained, "calibrator": answer.calibrator},
            )
        )

    def _unexecuted(self, answer: Answer, rag: RagContext, context: QueryContext) -> None:
        started = time.perf_counter()
        generator = SqlGenerator(self.default_llm, self.dialect, self.options.generate)
        candidate = generator.sample(generator.messages(rag, context), 0)
        answer.stages.append(
            StageReport(
                stage="generate",
                seconds=time.perf_counter() - started,
                prompt_tokens=candidate.prompt_tokens,
                completion_tokens=candidate.completion_tokens,
            )
        )
        rewriter = QueryRewriter.for_question(self.database, rag)
        filtered = rewriter.rewrite(candidate.sql) if candidate.sql else None
        if filtered is not None:  # what the refine agent would change before running it
            candidate.sql, candidate.notes = filtered.sql, [*candidate.notes, *filtered.notes]
        answer.candidates = [candidate.summary()]
        answer.sql, answer.reasoning = statement_only(candidate.sql) or None, candidate.reasoning
        answer.tier = self.tiers[-1].name
        answer.error = candidate.error

    def _log(self, answer: Answer, context: QueryContext) -> None:
        started = time.perf_counter()
        if not self.options.log_questions:
            answer.id = f"unlogged-{int(time.time() * 1000)}"
            return
        answer.id, answer.experience_id = self.experiences.record_answer(answer, context)
        answer.stages.append(StageReport(stage="log", seconds=time.perf_counter() - started))


__all__ = ["AskOptions", "ModelTier", "Pipeline", "PipelineOptions", "QuestionError"]

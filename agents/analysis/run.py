"""The analyst: typing -> plan -> each sub-question through the SQL chain -> analysis tools ->
checked narrative, bounded in steps and time.

``Analyst(ask, llm, options).analyze(question, schema_text=..., on_event=...)``: ``ask`` is
the one-SQL chain (``Pipeline.ask`` with its context and options bound), so the knowledge
base, voting and repair apply to every sub-question. A lookup is answered by ``ask`` alone,
as before. A sub-question that fails (an error, an abstention, an exception) is kept as
evidence with its error and the analysis goes on, naming what is missing in its caveats.
Once ``max_seconds`` have passed no further sub-question is asked (those left are recorded as
not asked) and the model calls get only the time left. ``on_event`` receives one dict per
step: ``typing``, ``plan``, ``subquestion`` (each done), ``analysis``, ``narrative``,
``final`` (and ``refused``). Given the ``database``, a series sub-question answered with
one row by an aggregate that forgot its GROUP BY is regrouped and run again, and one whose
query filters less than the direct question's is made from that query instead
(:mod:`agents.analysis.series_repair`); a forecast's history has its range bounds taken
out and the direct query's filters it forgot put back (:mod:`agents.analysis.history_repair`);
any other sub-answer a LIMIT cut to its top rows is read whole
(:mod:`agents.analysis.breakdown_repair`); and for a diagnostic question (or a descriptive
one about a change), the measure in the period before and the breakdowns the change falls
on are queried from a sub-answer's query, with no model call (:mod:`agents.analysis.drivers`).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from agents.analysis.breakdown_repair import whole_breakdown
from agents.analysis.compute import compute_facts, facts_payload
from agents.analysis.drivers import driver_evidence, wants_drivers
from agents.analysis.history_repair import repaired_series
from agents.analysis.models import AnalysisAnswer, Evidence
from agents.analysis.narrative import write_narrative
from agents.analysis.plan import AnalysisRefused, SubQuestion, plan_analysis
from agents.analysis.typing import QuestionTyping, classify_question
from agents.answer import Answer
from agents.llm.base import LLM
from agents.sql.date_arithmetic import DAYS_NOTE
from kb.target.database import Database

log = logging.getLogger(__name__)
Event = dict[str, Any]
MIN_CALL_S = 5.0  # a model call gets at least this long, even past the budget
DRIVER_SECONDS = 20.0  # the drivers' queries on the database, all together
MIN_DRIVER_S = 2.0  # ... even when the sub-questions spent the budget (they are cheap)


@dataclass
class AnalysisOptions:
    """Bounds of one analysis: sub-questions planned, wall time (no sub-question is asked
    and no plan made past it), rows kept per sub-answer, forecast horizon. With
    ``analysis_only`` a question typed as a lookup is analysed as a descriptive one (a
    benchmark of analysis tasks, whose goals may read like lookups: "Find the imbalance in
    incidents assigned"). ``narrative_tokens`` bounds the narrative's reply (its share of a
    small model's time). Without ``direct`` the question itself is not asked as a first
    sub-question (a goal no one query answers; see ``plan_analysis``). The last
    ``narrative_reserve_s`` of the budget are kept for the narrative: no sub-question starts
    in them, and the narrative's call gets at least that long even when the last query ran
    over (a small model otherwise spends the whole budget on queries and has no time left
    to write). The plan's model call gets at most ``plan_share`` of the budget (on
    InsightBench a 1.5B model's plan took the whole budget and no query was asked); the
    first sub-question is always asked, however late, since an analysis without evidence
    has nothing to say."""

    max_steps: int = 6
    max_seconds: float = 300.0
    max_rows: int = 2000
    horizon: int = 3
    analysis_only: bool = False
    narrative_tokens: int = 700
    direct: bool = True
    narrative_reserve_s: float = 0.0
    plan_share: float = 0.4

    def __post_init__(self) -> None:
        if not 1 <= self.max_steps <= 20:
            raise ValueError(f"max_steps must be between 1 and 20, got {self.max_steps}")
        if not self.max_seconds > 0:
            raise ValueError(f"max_seconds must be positive, got {self.max_seconds}")
        if not 0 <= self.narrative_reserve_s < self.max_seconds:
            raise ValueError(
                "narrative_reserve_s must be at least 0 and under max_seconds "
                f"({self.max_seconds:g}), got {self.narrative_reserve_s}"
            )
        if not 0 < self.plan_share <= 1:
            raise ValueError(f"plan_share must be in (0, 1], got {self.plan_share}")
        if not 64 <= self.narrative_tokens <= 4096:
            raise ValueError(
                f"narrative_tokens must be between 64 and 4096, got {self.narrative_tokens}"
            )
        if not 1 <= self.max_rows <= 100_000:
            raise ValueError(f"max_rows must be between 1 and 100000, got {self.max_rows}")


class Analyst:
    """Answers analysis questions with several queries of the chain ``ask``.

    Args:
        ask: answers one question with one SQL (the real chain).
        llm: the model that types, plans and writes the narrative.
        options: bounds.
        database: the database ``ask`` answers on, for the analyst's own read-only repair
            of a series (None: no repair).
    """

    def __init__(
        self,
        ask: Callable[[str], Answer],
        llm: LLM,
        options: AnalysisOptions | None = None,
        *,
        database: Database | None = None,
    ) -> None:
        self.ask, self.llm, self.database = ask, llm, database
        self.options = options or AnalysisOptions()

    def analyze(
        self,
        question: str,
        *,
        schema_text: str,
        on_event: Callable[[Event], None] | None = None,
    ) -> AnalysisAnswer:
        """The analysis of ``question`` on the database ``schema_text`` describes."""
        answer, started, left, emit = self._typed(question, on_event)
        question, typing = answer.question, answer.typing
        if typing.is_lookup:
            return self._lookup(answer, started, emit)
        plan_s = self.options.plan_share * self.options.max_seconds
        try:
            plan = plan_analysis(
                question,
                typing,
                schema_text,
                self.llm,
                max_steps=self.options.max_steps,
                timeout_s=max(MIN_CALL_S, min(left(), plan_s)),
                direct=self.options.direct,
            )
        except AnalysisRefused as refused:
            answer.refused = answer.short_answer = refused.reason
            emit({"stage": "refused", "reason": refused.reason})
            return self._final(answer, started, emit)
        answer.plan = plan
        emit({"stage": "plan", "plan": plan.model_dump()})
        last_start = started + self.options.max_seconds - self.options.narrative_reserve_s
        for step in plan.steps:
            if answer.sql_calls and time.monotonic() >= last_start:
                kept = self.options.narrative_reserve_s
                item = Evidence(
                    id=step.id,
                    question=step.question,
                    purpose=step.purpose,
                    error=f"not asked: the {self.options.max_seconds:g} s budget was spent"
                    + (f" (its last {kept:g} s kept for the narrative)" if kept else ""),
                )
            else:
                item = self._ask(step)
                answer.sql_calls += 1
                if step.series and self.database is not None:
                    item = self._series(item, step.series, answer, left(), typing.type)
                else:
                    item = self._whole(item, left())
            answer.evidence.append(item)
            emit({"stage": "subquestion", "evidence": item.model_dump(mode="json")})
        if self.database is not None and wants_drivers(typing.type, question):
            self._drivers(answer, last_start - time.monotonic(), emit)
        return self._write_up(answer, started, left, emit)

    def analyze_one_sql(
        self, question: str, *, on_event: Callable[[Event], None] | None = None
    ) -> AnalysisAnswer:
        """The one-SQL baseline of :meth:`analyze`: ``question`` typed as there, asked once
        through the chain (no plan), and that one answer analysed and written up by the same
        tools and narrative writer. Its evidence is ``q1``; ``sql_calls`` is 1."""
        answer, started, left, emit = self._typed(question, on_event)
        step = SubQuestion(id="q1", question=answer.question, purpose="the question asked")
        answer.evidence.append(self._whole(self._ask(step), left()))
        answer.sql_calls = 1
        emit({"stage": "subquestion", "evidence": answer.evidence[0].model_dump(mode="json")})
        return self._write_up(answer, started, left, emit)

    def _typed(
        self, question: str, on_event: Callable[[Event], None] | None
    ) -> tuple[AnalysisAnswer, float, Callable[[], float], Callable[[Event], None]]:
        """The start of both analyses: the question normalised and typed (a lookup made
        descriptive with ``analysis_only``), the typing event sent; the answer to fill, the
        start time, the seconds left in the budget and the event sink."""
        question = " ".join(question.split())
        if not question:
            raise ValueError("the question is empty")
        emit = on_event or (lambda event: None)
        started = time.monotonic()
        deadline = started + self.options.max_seconds

        def left() -> float:
            return max(MIN_CALL_S, deadline - time.monotonic())

        typing = classify_question(question, self.llm, timeout_s=min(60.0, left()))
        typing = as_analysis(typing) if self.options.analysis_only else typing
        emit({"stage": "typing", "typing": typing.model_dump()})
        answer = AnalysisAnswer(question=question, type=typing.type, typing=typing)
        return answer, started, left, emit

    def _write_up(
        self,
        answer: AnalysisAnswer,
        started: float,
        left: Callable[[], float],
        emit: Callable[[Event], None],
    ) -> AnalysisAnswer:
        """The tools on the evidence, then the checked narrative, into ``answer``."""
        kind = answer.type
        facts, notes = compute_facts(answer.evidence, kind, horizon=self.options.horizon)
        answer.facts = facts_payload(facts)
        emit({"stage": "analysis", "facts": answer.facts, "notes": notes})
        narrative = write_narrative(
            answer.question,
            kind,
            answer.evidence,
            facts,
            self.llm,
            timeout_s=max(left(), self.options.narrative_reserve_s),  # the reserve is kept
            max_tokens=self.options.narrative_tokens,
        )
        answer.short_answer = narrative.short_answer
        answer.findings, answer.dropped = narrative.findings, narrative.dropped
        answer.narrative_by = narrative.by  # type: ignore[assignment]
        answer.caveats = [  # a caveat set before (a failed drivers step) is kept
            *answer.caveats,
            *self._missing(answer.evidence),
            *notes,
            *narrative.caveats,
        ]
        emit(
            {
                "stage": "narrative",
                "short_answer": answer.short_answer,
                "findings": len(answer.findings),
                "dropped": len(answer.dropped),
            }
        )
        return self._final(answer, started, emit)

    def _ask(self, step: SubQuestion) -> Evidence:
        """One sub-question through the chain, as evidence (its failure as its error)."""
        began = time.monotonic()
        item = Evidence(id=step.id, question=step.question, purpose=step.purpose)
        try:
            reply = self.ask(step.question)
        except Exception as exc:  # a failing sub-question must not end the analysis
            log.info("analysis: %s failed: %s", step.id, exc)
            item.error = f"{type(exc).__name__}: {exc}"
            item.seconds = time.monotonic() - began
            return item
        item = _from_answer(step, reply, self.options.max_rows, began)
        if item.error is None and reply.abstained and not reply.rows:
            why = "; ".join(reply.abstention.reasons) if reply.abstention else ""
            item.error = f"the answer abstained: {why or 'low confidence'}"
        elif item.error is None and not reply.executed and not reply.columns:
            item.error = "the query did not run"
        return item

    def _series(
        self,
        item: Evidence,
        time_column: str,
        answer: AnalysisAnswer,
        seconds: float,
        kind: str,
    ) -> Evidence:
        """A series step's evidence repaired on the database within ``seconds`` in all
        (:func:`agents.analysis.history_repair.repaired_series`)."""
        assert self.database is not None
        direct = answer.evidence[0] if self.options.direct and answer.evidence else None
        return repaired_series(
            item,
            direct,
            time_column,
            self.database,
            predictive=kind == "predictive",
            max_rows=self.options.max_rows,
            seconds=max(MIN_CALL_S, seconds),
        )

    def _whole(self, item: Evidence, seconds: float) -> Evidence:
        """A breakdown's evidence read without the LIMIT that cut it to its top rows
        (:mod:`agents.analysis.breakdown_repair`)."""
        if self.database is None:
            return item
        return whole_breakdown(
            item, self.database, max_rows=self.options.max_rows, timeout_s=seconds
        )

    def _drivers(
        self, answer: AnalysisAnswer, seconds: float, emit: Callable[[Event], None]
    ) -> None:
        """The segments that drove the change, made on the database from a sub-answer's
        query (:mod:`agents.analysis.drivers`), added as evidence when found: queries
        alone, no model call, for the ``seconds`` left before the narrative's reserve (at
        least :data:`MIN_DRIVER_S`, at most :data:`DRIVER_SECONDS`). A failure is a
        caveat; the analysis goes on."""
        assert self.database is not None
        try:
            item = driver_evidence(
                answer.evidence,
                answer.question,
                self.database,
                evidence_id=f"q{len(answer.evidence) + 1}",
                max_rows=self.options.max_rows,
                seconds=min(DRIVER_SECONDS, max(MIN_DRIVER_S, seconds)),
            )
        except Exception as exc:  # the drivers are extra evidence, never the analysis's end
            log.warning("analysis: the drivers step failed: %s", exc)
            answer.caveats.append(f"the drivers of the change were not found: {exc}")
            return
        if item is not None:
            answer.evidence.append(item)
            emit({"stage": "subquestion", "evidence": item.model_dump(mode="json")})

    def _lookup(
        self, answer: AnalysisAnswer, started: float, emit: Callable[[Event], None]
    ) -> AnalysisAnswer:
        step = SubQuestion(id="q1", question=answer.question, purpose="the question asked")
        began = time.monotonic()
        try:
            reply = self.ask(answer.question)
        except Exception as exc:
            answer.evidence.append(
                Evidence(id="q1", question=answer.question, error=f"{type(exc).__name__}: {exc}")
            )
            answer.caveats.append(f"the lookup failed: {exc}")
        else:
            answer.lookup = reply
            answer.evidence.append(_from_answer(step, reply, self.options.max_rows, began))
            answer.short_answer = _lookup_text(reply)
        answer.sql_calls = 1
        return self._final(answer, started, emit)

    @staticmethod
    def _missing(evidence: list[Evidence]) -> list[str]:
        return [
            f"missing {e.id} ({e.purpose or e.question}): {e.error}" for e in evidence if e.error
        ]

    @staticmethod
    def _final(
        answer: AnalysisAnswer, started: float, emit: Callable[[Event], None]
    ) -> AnalysisAnswer:
        answer.seconds = round(time.monotonic() - started, 3)
        emit({"stage": "final", "answer": answer.model_dump(mode="json")})
        return answer


def as_analysis(typing: QuestionTyping) -> QuestionTyping:
    """A lookup's typing made descriptive (``analysis_only``), with a note saying so."""
    if not typing.is_lookup:
        return typing
    note = f"typed as a lookup ({typing.reason}); analysed as descriptive (analysis only)"
    return typing.model_copy(update={"type": "descriptive", "notes": [*typing.notes, note]})


def _from_answer(step: SubQuestion, reply: Answer, max_rows: int, began: float) -> Evidence:
    return Evidence(
        id=step.id,
        question=step.question,
        purpose=step.purpose,
        sql=reply.sql,
        columns=list(reply.columns),
        rows=[list(r) for r in reply.rows[:max_rows]],
        row_count=reply.row_count,
        truncated=reply.truncated or len(reply.rows) > max_rows,
        error=reply.error,
        seconds=time.monotonic() - began,
        notes=_reading_notes(reply),
    )


def _reading_notes(reply: Answer) -> list[str]:
    """What the rows' reader must know of the chosen query's rewrites: its date differences
    are in days (:mod:`agents.sql.date_arithmetic`)."""
    chosen = [c for c in reply.candidates if reply.sql and c.sql == reply.sql]
    notes = [n for c in chosen[:1] for n in c.notes if n.startswith(DAYS_NOTE)]
    return ["the differences of dates in these rows are in days"] if notes else []


def _lookup_text(reply: Answer) -> str:
    """A lookup's one-line answer: its single value, or how many rows it returned."""
    if reply.error:
        return f"The question could not be answered: {reply.error}"
    if reply.row_count == 1 and len(reply.columns) == 1 and reply.rows:
        return f"{reply.columns[0]}: {reply.rows[0][0]}"
    return f"{reply.row_count} rows"

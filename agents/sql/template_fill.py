"""Answering from a mined query template, with no model call.

When the worked examples the RAG step chose agree, the question very likely has their shape:
:class:`TemplateFiller` checks that the top ``k`` examples all have the slotted SQL of one
*active* template of the database (when the RAG showed fewer than ``k``, because logged
questions without a label took places in its retrieval, the next nearest labeled
experiences complete them) (:mod:`agents.learn.mine.templates`), fills the template's
slots with the question's values, and runs the filled SQL read-only on the target (rewritten
as a model's query is: :mod:`agents.sql.rewrites`). A query
that runs and returns rows is the answer (tier ``template``); anything else (no agreement, no
active template, values that do not fill the slots, an error, no rows) returns None and the
question goes down the model path unchanged.

An example belongs to a template when *its own* slotted SQL equals the template's key, not
when its id is among the template's supporters: an experience labeled after the mining run
(or one whose supporters were merged into another entry) matches all the same, and an
example whose SQL was corrected since no longer does.

The question's values: the string index's maximal non-overlapping spans that name a stored
value (an enum value, or a synonym of one), and, for the slot columns of every active
template of the database (enum values the question does not say, or a column not profiled as
enums: too many distinct values), the question's word n-grams that the target holds in that
column. The spans must be exactly as many as the slots; the ``i``-th span in question order
fills slot ``i`` with a stored value of one of the slot's columns.
"""

from __future__ import annotations

import logging
import re
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from sqlglot import expressions as exp

from agents.answer import Candidate, UsedKnowledge
from agents.learn.mine.candidates import mining_note
from agents.learn.mine.templates import TEMPLATE_KIND, Column, Slot, fill, slotted
from agents.rag.agent import RagContext
from agents.rag.store_watch import StoreWatch
from agents.sql.cascade import CascadeOutcome
from agents.sql.rewrites import QueryRewriter
from agents.sql.vote import VoteOutcome
from indices.index_set import IndexNotReadyError
from indices.retriever import Retriever
from indices.string import StringIndex
from kb.store import KnowledgeStore
from kb.target.database import Database
from kb.target.results import Results
from kb.target.sql_guard import sqlglot_dialect
from kb.visibility import is_visible
from ukf import BaseUKF, QueryContext

log = logging.getLogger(__name__)
TIER = "template"
MAX_WORDS = 4  # longest value looked up in a column not profiled as enums
_WORD = re.compile(r"[\w']+")


@dataclass(frozen=True)
class ValueSpan:
    """A stretch of the question naming stored values, by ``(table, column)``."""

    start: int
    end: int
    values: dict[Column, str]


@dataclass(frozen=True)
class Template:
    """An active template entry, read."""

    entry: BaseUKF
    key: str
    slots: tuple[Slot, ...]


class TemplateFiller:
    """Fills active templates of ``database_name`` for questions whose examples agree.

    Args:
        store: the knowledge store (templates, enum values).
        database: the read-only target the filled SQL runs on.
        database_name: its ``[DATABASE:...]`` name.
        retriever: the fused retriever, or a function returning the current one (its string
            index finds the question's values, its experience tier completes the examples);
            indices not ready: no fill.
        top_k: how many of the first examples must share the template.
    """

    def __init__(
        self,
        store: KnowledgeStore,
        database: Database,
        database_name: str,
        retriever: Retriever | Callable[[], Retriever],
        *,
        top_k: int = 3,
    ) -> None:
        self.store, self.database, self.database_name = store, database, database_name
        self.dialect = database.dialect
        self.retriever, self.top_k = retriever, top_k
        self._templates: dict[str, list[Template]] = {}
        self._watch = StoreWatch(store, ("knowledge",), database_name)
        self._lock = threading.Lock()

    # ------------------------------------------------------------------ answer
    def outcome(
        self, rag: RagContext, context: QueryContext, used: list[UsedKnowledge]
    ) -> CascadeOutcome | None:
        """The filled template's candidate as a one-candidate outcome (the template is added
        to ``used``, the answer's knowledge); None to ask a model."""
        if not self._active():
            return None
        template = self.agreed(self.examples(rag, context), context)
        if template is None:
            return None
        values = self.values(rag.question, template.slots)
        if values is None:
            log.info("template %s: the question's values do not fill its slots", template.entry.id)
            return None
        sql, notes, results = self._run(fill(template.key, values, self.dialect), rag)
        if not results.ok or not results.rows:
            problem = results.error or "no rows"
            log.info("template %s: filled SQL gave %s", template.entry.id, problem)
            return None
        winner = Candidate(
            sql=sql,
            reasoning=f"Filled the query template {template.entry.id} with {values}.",
            model=TIER,
            tier=TIER,
            results=results,
            notes=notes,
            template_id=template.entry.id,
        )
        vote = VoteOutcome(winner, 1.0, [[winner]], considered=1)
        used.append(_used(template.entry))
        return CascadeOutcome(winner, 1.0, TIER, [winner], [TIER], vote=vote)

    # ------------------------------------------------------------------ steps
    def _run(self, sql: str, rag: RagContext) -> tuple[str, list[str], Results]:
        """``sql`` (a filled template) run rewritten as the refine agent rewrites a model's
        query (:mod:`agents.sql.rewrites`: a template mined from answers in caliber A says
        nothing of the caliber a caliber-B analyst wants); when the database rejects the
        rewritten query, ``sql`` as filled runs (noted)."""
        ran = QueryRewriter.for_question(self.database, rag).execute(sql)
        return ran.sql, ran.notes, ran.results

    def examples(self, rag: RagContext, context: QueryContext) -> list[BaseUKF]:
        """The first ``top_k`` labeled experiences near the question: the RAG's examples,
        completed from the retriever's experience tier when it showed fewer."""
        shown = list(rag.examples[: self.top_k])
        retriever = self._retriever()
        if len(shown) >= self.top_k or retriever is None:
            return shown
        hits = retriever.nearest_experiences(rag.question, self.database_name)
        ids = [h.ukf_id for h in hits if h.ukf_id not in {e.id for e in shown}]
        found = self.store.get_many(ids, reader=context.reader)
        for uid in ids:
            entry = found.get(uid)
            if (
                len(shown) < self.top_k
                and entry is not None
                and _example(entry, self.database_name)
            ):
                shown.append(entry)
        return shown

    def agreed(self, examples: Sequence[BaseUKF], context: QueryContext) -> Template | None:
        """The active template the first ``top_k`` examples all have, if any."""
        shown, active = list(examples)[: self.top_k], self._active()
        if len(shown) < self.top_k or not active:
            return None
        keys = set()
        for example in shown:
            sql = example.content_resources.get("sql")
            question = example.content_resources.get("question", example.name)
            shape = slotted(str(question), str(sql or ""), self.dialect)
            if shape is None or not shape.slots:
                return None
            keys.add(shape.key)
        if len(keys) != 1:
            return None
        found = active.get(keys.pop(), [])
        return next((t for t in found if is_visible(t.entry, context.reader)), None)

    def values(self, question: str, slots: Sequence[Slot]) -> list[str] | None:
        """One stored value per slot from the question's value spans (None: they do not fit)."""
        retriever = self._retriever()
        if retriever is None:
            return None
        spans = self._indexed_spans(question, retriever.strings)
        found = {column for span in spans for column in span.values}
        # every template's slot columns, not only this one's: "tempe arizona" says a city
        # too, so it does not fill a template with one state slot
        slotted = {c for t in self._all() for slot in t.slots for c in slot.columns}
        for column in sorted(({c for slot in slots for c in slot.columns} | slotted) - found):
            spans += self._stored_spans(question, column)
        chosen = _maximal(spans)
        if len(chosen) != len(slots):
            return None
        filled = []
        for span, slot in zip(chosen, slots, strict=True):
            value = next((span.values[c] for c in slot.columns if c in span.values), None)
            if value is None:
                return None
            filled.append(value)
        return filled

    def _indexed_spans(self, question: str, strings: StringIndex) -> list[ValueSpan]:
        """Spans of the string index naming a stored value (an enum, a synonym of one)."""
        matches = strings.search(question, mode="longest")
        entries = self.store.get_many({uid for m in matches for uid in m.ukf_ids})
        spans = []
        for match in matches:
            values: dict[Column, str] = {}
            for uid in match.ukf_ids:
                entry = entries.get(uid)
                r = entry.content_resources if entry is not None else {}
                if (
                    r.get("value") is not None
                    and r.get("table")
                    and r.get("column")
                    and r.get("database") in (None, self.database_name)
                ):
                    column = (str(r["table"]).lower(), str(r["column"]).lower())
                    values.setdefault(column, str(r["value"]))
            if values:
                spans.append(ValueSpan(match.start, match.end, values))
        return spans

    def _stored_spans(self, question: str, column: Column) -> list[ValueSpan]:
        """Word n-grams of the question that ``column`` holds (case-insensitive)."""
        words = [(m.start(), m.end()) for m in _WORD.finditer(question)]
        grams: dict[str, list[tuple[int, int]]] = {}
        for i in range(len(words)):
            for j in range(i, min(i + MAX_WORDS, len(words))):
                start, end = words[i][0], words[j][1]
                grams.setdefault(question[start:end].lower(), []).append((start, end))
        if not grams:
            return []
        table, name = column
        field = exp.column(name, quoted=True)
        query = (
            exp.select(field)
            .distinct()
            .from_(exp.to_table(table, quoted=True))
            .where(exp.func("LOWER", field).isin(*map(exp.Literal.string, grams)))
        )
        results = self.database.execute(query.sql(dialect=sqlglot_dialect(self.dialect)))
        if not results.ok:
            return []
        return [
            ValueSpan(start, end, {column: str(row[0])})
            for row in results.rows
            if isinstance(row[0], str)
            for start, end in grams.get(row[0].lower(), [])
        ]

    def _retriever(self) -> Retriever | None:
        try:
            source = self.retriever
            return source if isinstance(source, Retriever) else source()
        except IndexNotReadyError:
            return None

    def _all(self) -> list[Template]:
        return [t for found in self._active().values() for t in found]

    def _active(self) -> dict[str, list[Template]]:
        """Active templates of the database by key (reloaded when knowledge changes)."""
        with self._lock:
            if self._watch.changed():
                found: dict[str, list[Template]] = {}
                tags = {"DATABASE": self.database_name}
                for entry in self.store.iterate(type="knowledge", tags=tags):
                    r = entry.content_resources
                    if r.get("kind") == TEMPLATE_KIND and r.get("sql"):
                        slots = tuple(Slot.from_dict(s) for s in r.get("slots") or [])
                        found.setdefault(r["sql"], []).append(Template(entry, r["sql"], slots))
                self._templates = found
            return self._templates


def _example(entry: BaseUKF, database: str) -> bool:
    """An active labeled experience of ``database`` with SQL (what the RAG shows)."""
    r = entry.content_resources
    return (
        entry.type == "experience"
        and not entry.inactive_mark
        and bool(r.get("labeled") and r.get("sql"))
        and database in entry.tag_values("DATABASE")
    )


def _used(entry: BaseUKF) -> UsedKnowledge:
    """The template as knowledge the answer used."""
    trust = mining_note(entry).get("trust")
    return UsedKnowledge(
        id=entry.id,
        type=entry.type,
        name=entry.name,
        reasons=["query template filled with the question's values"],
        mined=str(trust) if trust else None,
    )


def _maximal(spans: list[ValueSpan]) -> list[ValueSpan]:
    """Longest spans first at each start, without overlaps, in question order; spans over the
    same stretch pool their values."""
    pooled: dict[tuple[int, int], dict[Column, str]] = {}
    for span in spans:
        values = pooled.setdefault((span.start, span.end), {})
        for column, value in span.values.items():
            values.setdefault(column, value)
    chosen, end = [], -1
    for (start, stop), values in sorted(pooled.items(), key=lambda p: (p[0][0], -p[0][1])):
        if start >= end:
            chosen.append(ValueSpan(start, stop, values))
            end = stop
    return chosen

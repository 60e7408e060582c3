"""The RAG agent: from a question to the context a SQL writer needs.

Static pipeline (always): the fused ``Retriever`` finds the evidence; this agent turns it into
prompt parts, each composed by its entry's composer and kept within token budgets:

- the schema slice: the tables the question touches (named, or reached through a column, an
  enum value or a join path), as annotated DDL; small databases are shown whole;
- hints: business knowledge (rules, metrics, predicates, glossary, taxonomies) and the links
  from question words to tables, columns and values ("France" -> singer.Country = 'France');
- examples: the most similar labeled experiences (question, reasoning and SQL).

Autonomous mode (optional, for hard questions): the agent's explorer
(:class:`agents.rag.explore.Explorer`) lets the LLM call the toolkit's search tools, and the
prompt parts are composed again with what it finds. An optional LLM summary condenses the
hints. ``run`` returns a new :class:`RagContext` each time; the agent keeps no per-question
state.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace

from agents.answer import UsedKnowledge
from agents.llm.base import LLM, LLMError
from agents.rag.explore import Explorer
from agents.rag.hints import ProfileLink, compose_hints, link_profile, used_knowledge
from agents.rag.question_facts import (
    PeriodPin,
    calendar_of,
    dates_text,
    period_pin,
    resolved_text,
    time_windows,
)
from agents.rag.schema_slice import SchemaCatalog, SchemaSlice
from agents.rag.table_rank import BUSINESS_TYPES, TableRanker, named
from agents.rag.time_phrases import TimeWindow
from agents.rag.value_catalog import ValueCatalog
from agents.templates import render
from agents.tools.toolkit import Toolkit
from indices.evidence import Evidence, EvidenceItem, estimate_tokens
from indices.retriever import Retriever
from kb.target.database import Database
from ukf import BaseUKF, QueryContext, Reader

log = logging.getLogger(__name__)


@dataclass
class RagOptions:
    """Budgets and switches of the RAG agent.

    Attributes:
        schema_tokens: budget of the schema slice.
        hint_tokens: budget of business knowledge and question-word links.
        examples: labeled experiences shown as few-shot examples.
        whole_schema_tables: databases with at most this many tables are shown whole (within
            the schema budget); larger ones are sliced to the tables the evidence points at.
        max_columns: columns shown in full per table.
        listing_tokens: tables past the schema budget are listed in one line each within
            this many tokens, then only named.
        min_full_tables: the most relevant tables shown as DDL even past the schema budget
            (compacted): a question that needs the second-ranked table should see it.
        stable_schema: databases with more than ``whole_schema_tables`` tables get
            :meth:`SchemaCatalog.overview` (the same for every question, so a local model's
            prompt prefix is reused; the question's tables come in the hints) instead of a
            slice ranked for the question. AutoFin, 60 test questions: the same EX, generate
            p50 ~20 s instead of ~47 s.
        summarize: ask the LLM for a short summary of the hints.
        explore: "never", "always" or "hard" (when no table is named in the question).
        explore_steps: tool calls the explorer may make.
    """

    schema_tokens: int = 1200
    hint_tokens: int = 500
    examples: int = 3
    whole_schema_tables: int = 12
    max_columns: int = 24
    listing_tokens: int = 300
    min_full_tables: int = 2
    stable_schema: bool = True
    summarize: bool = False
    explore: str = "never"
    explore_steps: int = 4


@dataclass
class RagContext:
    """The prompt parts for one question, and what they came from."""

    question: str
    database: str
    evidence: Evidence
    schema: str
    hints: list[str] = field(default_factory=list)
    examples: list[BaseUKF] = field(default_factory=list)
    tables: list[str] = field(default_factory=list)
    used: list[UsedKnowledge] = field(default_factory=list)
    summary: str = ""
    dates: str = ""
    resolved: str = ""
    explored: list[str] = field(default_factory=list)
    facts: _QuestionFacts | None = None  # profile links, time phrases
    user_profile: dict[str, str] = field(default_factory=dict)  # the asker's
    prompt_tokens: int = 0
    completion_tokens: int = 0
    seconds: float = 0.0

    @property
    def tokens(self) -> int:
        parts = [self.schema, *self.hints, self.summary, self.dates, self.resolved]
        parts += [e.text() for e in self.examples]
        return sum(estimate_tokens(p) for p in parts if p)


@dataclass(frozen=True)
class _QuestionFacts:
    """What the agent settled about one question before composing its prompt."""

    profile_links: list[ProfileLink] = field(default_factory=list)
    windows: list[TimeWindow] = field(default_factory=list)
    period: PeriodPin | None = None  # the one period its time words settle


class RagAgent:
    """Builds a :class:`RagContext` for questions on one database.

    Args:
        retriever: the fused retriever over the knowledge store, or a function returning the
            current one (a server swaps its indices when they are rebuilt).
        catalog: the database's profiled tables and columns.
        options: budgets and switches.
        llm: the model for the optional summary and the autonomous mode.
        database: the target database the explorer's tools may query read-only (None: no
            autonomous mode).
        values: the database's stored values (default: read from the catalog's store).
    """

    def __init__(
        self,
        retriever: Retriever | Callable[[], Retriever],
        catalog: SchemaCatalog,
        options: RagOptions | None = None,
        *,
        llm: LLM | None = None,
        database: Database | None = None,
        values: ValueCatalog | None = None,
    ) -> None:
        self._retriever, self.catalog = retriever, catalog
        self.values = values or ValueCatalog(catalog.store, catalog.database)
        self.ranker = TableRanker(catalog, self.values)
        self.options = options or RagOptions()
        self.llm, self.database = llm, database
        self._toolkits: dict[Reader, Toolkit] = {}

    @property
    def retriever(self) -> Retriever:
        """The retriever (a callable source is asked each time: indices may be swapped)."""
        source = self._retriever
        return source if isinstance(source, Retriever) else source()

    def run(
        self,
        question: str,
        context: QueryContext | None = None,
        *,
        explore: bool | None = None,
    ) -> RagContext:
        """The prompt parts for ``question``; ``explore`` forces the autonomous mode on or off
        (None: as ``options.explore`` says)."""
        started = time.perf_counter()
        ctx = (context or QueryContext()).on(self.catalog.database)
        evidence = self.retriever.retrieve(question, ctx)
        calendar = calendar_of(evidence)
        windows = time_windows(question, calendar, ctx)
        facts = _QuestionFacts(
            link_profile(self.values, ctx.user_profile),
            windows,
            period_pin(question, calendar, windows),
        )
        rag = self._compose(question, evidence, facts)
        rag.user_profile = {str(k): str(v) for k, v in ctx.user_profile.items()}
        wanted = self._should_explore(rag) if explore is None else explore
        if wanted and self.can_explore:
            rag = self._explore(question, rag, ctx)
        if self.options.summarize and self.llm is not None and rag.hints:
            self._summarize(rag)
        rag.dates = dates_text(calendar, ctx)
        known = self.catalog.tables
        columns = [
            c.content_resources["column"]
            for t in rag.tables
            if t in known
            for c in known[t].columns
        ]
        rag.resolved = resolved_text(question, calendar, ctx, facts.windows, columns)
        rag.seconds = time.perf_counter() - started
        return rag

    # ------------------------------------------------------------------ static pipeline
    def _compose(
        self,
        question: str,
        evidence: Evidence,
        facts: _QuestionFacts,
        extra: list[BaseUKF] = (),
    ) -> RagContext:
        items = [*evidence.items, *(EvidenceItem(e, text=e.text()) for e in extra)]
        tables = self.ranker.rank(
            items,
            evidence,
            [link.table for link in facts.profile_links],
            whole_schema_tables=self.options.whole_schema_tables,
        )
        mentioned = [
            (
                i.entry.content_resources.get("table", ""),
                i.entry.content_resources.get("column", ""),
            )
            for i in items
            if i.entry.type in ("column", "enum") and named(i)
        ]
        sliced = self.schema_slice(tables, mentioned)
        tables = [*sliced.full, *sliced.listed]
        rag = RagContext(question, self.catalog.database, evidence, sliced.text, tables=tables)
        rag.facts = facts
        rag.hints = compose_hints(
            question,
            items,
            shown_tables=set(rag.tables),
            first=[link.text for link in facts.profile_links],
            time_spans=[w.span for w in facts.windows],
            budget_tokens=self.options.hint_tokens,
        )
        rag.examples = [
            i.entry
            for i in items
            if i.entry.type == "experience"
            and i.entry.content_resources.get("sql")
            and i.entry.content_resources.get("labeled")
        ][: self.options.examples]
        shown = set(tables)
        for item in items:
            kind = item.entry.type
            table = item.entry.content_resources.get("table")
            keep = (
                (kind == "table" and table in shown)
                or (kind in ("column", "enum") and named(item) and table in shown)
                or kind in BUSINESS_TYPES
                or item.entry in rag.examples
            )
            if keep:
                rag.used.append(used_knowledge(item, question))
        return rag

    @property
    def shows_overview(self) -> bool:
        """Whether every question sees one overview (a large database, ``stable_schema``)."""
        return (
            self.options.stable_schema
            and len(self.catalog.tables) > self.options.whole_schema_tables
        )

    def schema_slice(
        self, tables: list[str] | None = None, mentioned: list[tuple[str, str]] = ()
    ) -> SchemaSlice:
        """The schema shown for a question on ``tables`` (None: all) naming ``mentioned``."""
        if self.shows_overview:
            return self.catalog.overview(
                budget_tokens=self.options.schema_tokens,
                max_columns=self.options.max_columns,
                listing_tokens=self.options.listing_tokens,
            )
        return self.catalog.slice(
            tables,
            mentioned_columns=mentioned,
            budget_tokens=self.options.schema_tokens,
            max_columns=self.options.max_columns,
            listing_tokens=self.options.listing_tokens,
            min_full=self.options.min_full_tables,
        )

    # ------------------------------------------------------------------ autonomous mode
    def _should_explore(self, rag: RagContext) -> bool:
        mode = self.options.explore
        if mode == "always":
            return True
        if mode == "hard":
            return not any(u.type == "table" and u.spans for u in rag.used)
        return False

    @property
    def can_explore(self) -> bool:
        """Whether the autonomous mode is available (it needs a model and the database)."""
        return self.llm is not None and self.database is not None

    def _explore(self, question: str, rag: RagContext, context: QueryContext) -> RagContext:
        """``rag`` composed again with what the explorer found (``rag`` itself when it found
        nothing new or failed); the exploration's tokens are counted either way."""
        assert self.llm is not None
        reader = context.reader or Reader()
        retriever = self.retriever
        explorer = Explorer(
            self.llm,
            self._toolkit(reader),
            string_index=retriever.strings,
            facet_index=retriever.facets,
            max_steps=self.options.explore_steps,
        )
        try:
            found = explorer.explore(question, known=rag.hints[:12])
        except (LLMError, ValueError) as exc:
            log.warning("exploration failed for %r: %s", question, exc)
            return rag
        tokens = {
            "prompt_tokens": rag.prompt_tokens + found.prompt_tokens,
            "completion_tokens": rag.completion_tokens + found.completion_tokens,
        }
        entries = self.catalog.store.get_many(found.ukf_ids, reader=reader).values()
        seen = {u.id for u in rag.used}
        extra = [e for e in entries if e.id not in seen]
        if not extra:
            return replace(rag, **tokens)
        explored = self._compose(question, rag.evidence, rag.facts, extra)
        return replace(explored, explored=[e.id for e in extra], **tokens)

    def _toolkit(self, reader: Reader) -> Toolkit:
        """The explorer's toolkit for ``reader`` (kept per reader: it caches look-ups)."""
        assert self.database is not None
        if reader not in self._toolkits:
            if len(self._toolkits) > 64:
                self._toolkits.clear()
            self._toolkits[reader] = Toolkit(
                self.catalog.store,
                self.database,
                database_name=self.catalog.database,
                reader=reader,
            )
        return self._toolkits[reader]

    # ------------------------------------------------------------------ summary
    def _summarize(self, rag: RagContext) -> None:
        assert self.llm is not None
        messages = [
            {
                "role": "user",
                "content": render("rag_summary.j2", question=rag.question, hints=rag.hints),
            }
        ]
        try:
            reply = self.llm.chat(messages, max_tokens=160, temperature=0.0)
        except LLMError as exc:
            log.warning("evidence summary failed for %r: %s", rag.question, exc)
            return
        rag.summary = reply.text.strip()
        rag.prompt_tokens += reply.prompt_tokens
        rag.completion_tokens += reply.completion_tokens

"""The fused retriever: every index behind one ``retrieve(question, context) -> Evidence``.

For one question it gathers
1. string matches of names and synonyms (spans in the question),
2. facet hits drawn from the context: the database's tables and its business knowledge
   (rules, metrics, predicates, taxonomies, glossary), plus any tags the context carries,
3. the nearest experiences of the question's database from the experience index (by SQL shape:
   :mod:`indices.experience_index`), or, without one, from the vector index (by question and
   query sketch),
4. graph expansion from the matched items: an enum brings its column and table, a metric its
   columns, a predicate its enums, a synonym its target; a matched table brings its columns
   and the join paths to the other matched tables,

then loads the entries the reader may see, drops inactive, expired, out-of-scope and
untriggered ones (triggers are evaluated against query time and user profile), orders them by
tier (what the question names first), then priority, and keeps them within a token budget.
Every item keeps the hits that explain it.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import UTC, datetime
from itertools import combinations

from indices.evidence import Evidence, EvidenceItem, estimate_tokens
from indices.experience_index import ExperienceIndex
from indices.facet import FacetIndex
from indices.graph import GraphIndex
from indices.hits import Hit
from indices.string import StringIndex
from indices.vector import VectorIndex
from kb.store import KnowledgeStore
from ukf import BaseUKF, ExperienceUKF, QueryContext, Reader, UKFError

log = logging.getLogger(__name__)
EXPANSION_RELATIONS = (
    "value_of",
    "column_of",
    "uses_column",
    "uses_enum",
    "synonym_of",
    "has_level",
)
BUSINESS_TYPES = ("metric", "predicate", "taxonomy", "knowledge")
SCHEMA_TYPES = ("table", "column", "enum")
TYPE_ORDER = {
    t: i
    for i, t in enumerate(
        (
            "rule",
            "metric",
            "predicate",
            "knowledge",
            "synonym",
            "taxonomy",
            "table",
            "column",
            "enum",
            "document",
            "experience",
        )
    )
}


@dataclass
class RetrievalOptions:
    budget_tokens: int = 1500
    experiences: int = 3
    experience_tokens: int = 450  # of budget_tokens, kept for experiences first
    hops: int = 2
    schema_tables: int = 60
    business_items: int = 30
    join_paths: int = 6
    per_span: int = 6
    rules: int = 200
    # mined business knowledge (metadata "mining") that only the database facet reaches, i.e.
    # nothing in the question points to it: left out by default (1.5B, mining vs no mining:
    # Spider 120 -2.5 EX with it, -0.8 without; GeoQuery test-150 +10.0 with it, +12.0
    # without; docs/benchmarks.md, "Lifelong learning"). True shows it as before
    mined_by_facet: bool = False


class Retriever:
    """Fuses string, facet, vector and graph retrieval over one knowledge store.

    The indices come built (:class:`indices.index_set.IndexSet` assembles them; its
    ``retriever()`` is the usual way to get one). ``refresh``: what brings the indices up to
    the store before each question (default: :meth:`refresh_indices`).
    """

    def __init__(
        self,
        store: KnowledgeStore,
        strings: StringIndex,
        graph: GraphIndex,
        vectors: VectorIndex | None = None,
        options: RetrievalOptions | None = None,
        experiences: ExperienceIndex | None = None,
        *,
        facets: FacetIndex | None = None,
        refresh: Callable[[], None] | None = None,
    ):
        self.store = store
        self.strings, self.graph, self.vectors = strings, graph, vectors
        self.experiences = experiences
        self.facets = facets or FacetIndex(store)
        self.options = options or RetrievalOptions()
        self._refresh = refresh or self.refresh_indices

    def refresh(self) -> None:
        """Bring the indices up to the store's version (before each question)."""
        self._refresh()

    def refresh_indices(self) -> None:
        """Reload every index whose store version is behind (one query when nothing moved)."""
        version = self.store.version
        optional = [i for i in (self.vectors, self.experiences) if i is not None]
        indices = [self.strings, self.graph, *optional]
        if all(index.version == version for index in indices):
            return
        for index in indices:  # strings first: the experience index sketches with it
            index.refresh(self.store)

    # ---------------------------------------------------------------- retrieval
    def retrieve(self, question: str, context: QueryContext | None = None) -> Evidence:
        """Evidence for ``question`` asked in ``context`` (its database, query time, user
        profile, reader and extra facet filters ``tags``, ``{slot: values}``). A context
        without a reader reads as an anonymous user: global, unrestricted knowledge only."""
        context = context or QueryContext()
        self.refresh()
        reader = context.reader or Reader()
        with ThreadPoolExecutor(max_workers=1, thread_name_prefix="almanac-experiences") as pool:
            # embedding the question (MiniLM, outside the GIL) overlaps the lookups and reads
            nearest = pool.submit(self.nearest_experiences, question, context.database)
            hits = self._gather(question, context)
            entries = self.store.get_many(list(hits), reader=reader)
            experiences = nearest.result()
        for hit in experiences:
            hits.setdefault(hit.ukf_id, []).append(hit)
        unread = [hit.ukf_id for hit in experiences if hit.ukf_id not in entries]
        entries.update(self.store.get_many(unread, reader=reader))
        items = [
            EvidenceItem(entry, hits[uid])
            for uid, entry in entries.items()
            if self._admissible(entry, context)
        ]
        if not self.options.mined_by_facet:
            items = [i for i in items if not _mined_context(i)]
        items = _cap_span_fanout(items, self.options.per_span)
        evidence = Evidence(question=question, budget=self.options.budget_tokens)
        tables = [i.entry.id for i in items if i.entry.type == "table" and _tier(i) > CONTEXT]
        evidence.join_paths = self._join_paths(tables)
        self._fit(items, evidence)
        return evidence

    def _gather(self, question: str, context: QueryContext) -> dict[str, list[Hit]]:
        """Hits of every tier but the experiences (:meth:`nearest_experiences`)."""
        hits: dict[str, list[Hit]] = {}

        def keep(found: list[Hit]) -> None:
            for hit in found:
                hits.setdefault(hit.ukf_id, []).append(hit)

        keep(self.strings.search_hits(question))
        database = context.database
        if database:
            scope = {"DATABASE": database}
            keep(self.facets.search(scope, type="table", limit=self.options.schema_tables))
            # every rule of the database: triggers decide which apply (few, and decisive)
            keep(self.facets.search(scope, type="rule", limit=self.options.rules))
            keep(
                self.facets.search(
                    scope, type=list(BUSINESS_TYPES), limit=self.options.business_items
                )
            )
        if context.tags:
            keep(self.facets.search(context.tags, limit=self.options.business_items))
        seeds = [uid for uid, found in hits.items() if any(h.reason == "span" for h in found)]
        keep(
            self.graph.expand(
                seeds,
                hops=self.options.hops,
                relations=EXPANSION_RELATIONS,
                types=["table", "column", "enum"],
            )
        )
        return hits

    def nearest_experiences(self, question: str, database: str | None = None) -> list[Hit]:
        """The experience tier: candidates for the few-shot examples, best first.

        Three times ``options.experiences`` are fetched, so enough remain after the visibility
        and trigger checks; the Evidence keeps the best ``options.experiences``.
        """
        k = self.options.experiences * 3
        if not k:
            return []
        if self.experiences is not None:
            return self.experiences.search(question, k=k, database=database)
        if self.vectors is not None:
            return self.vectors.search(
                question, serializers=("query", "sketch"), k=k, types=["experience"]
            )
        return []

    def _admissible(self, entry: BaseUKF, context: QueryContext) -> bool:
        when = context.aware_query_time
        if entry.inactive_mark or entry.is_expired(when or datetime.now(UTC)):
            return False
        databases = entry.tag_values("DATABASE")
        if context.database and databases and context.database not in databases:
            return False
        try:
            return entry.triggered(context)
        except UKFError as exc:
            log.warning("skipping %s: %s", entry.id, exc)
            return False

    def _join_paths(self, tables: list[str]) -> list[list[dict]]:
        paths = [self.graph.join_path(a, b) for a, b in combinations(tables, 2)]
        return [p for p in paths if p][: self.options.join_paths]

    def _fit(self, items: list[EvidenceItem], evidence: Evidence) -> None:
        """Tier (direct > related > context), then priority, then type, then score.

        Tier comes first: what the question names directly is shown before what it is only
        related to, whatever their priorities. Priority orders entries of one tier: an
        authoritative entry before mined knowledge (which the merge puts below every
        authoritative entry), so mined knowledge the question names still reaches the
        prompt ahead of schema items the question does not name.

        Tables and columns hit directly are shown in full, the rest in brief. The best
        experiences, labeled or verified ones before those only logged (a question asked
        again is logged each time, and its repeats must not push out the worked examples),
        are fitted first within ``options.experience_tokens`` (few-shot examples
        must not be crowded out by schema items); what they leave of it goes to the rest.
        """
        experiences = sorted(
            (i for i in items if i.entry.type == "experience"),
            key=lambda i: (not _trusted(i.entry), -i.score),
        )[: self.options.experiences]
        others = [i for i in items if i.entry.type != "experience"]
        ordered = sorted(
            [*others, *experiences],
            key=lambda i: (
                -_tier(i),
                -i.entry.priority,
                TYPE_ORDER.get(i.entry.type, 99),
                -i.score,
                i.entry.id,
            ),
        )
        for item in ordered:
            full = _tier(item) == DIRECT or item.entry.type not in ("table", "column")
            item.text = item.entry.text() if full else item.entry.text("brief")
            item.tokens = estimate_tokens(item.text)
        reserve = min(self.options.experience_tokens, evidence.budget)
        reserved: set[int] = set()
        for item in experiences:
            if item.tokens <= reserve:
                reserved.add(id(item))
                reserve -= item.tokens
        used = sum(item.tokens for item in experiences if id(item) in reserved)
        for item in ordered:
            if id(item) in reserved:
                evidence.items.append(item)
            elif used + item.tokens <= evidence.budget:
                evidence.items.append(item)
                used += item.tokens
            else:
                evidence.dropped.append(item)


DIRECT, RELATED, CONTEXT = 2, 1, 0


def _trusted(entry: BaseUKF) -> bool:
    return isinstance(entry, ExperienceUKF) and entry.trusted


def _cap_span_fanout(items: list[EvidenceItem], cap: int) -> list[EvidenceItem]:
    """Keep at most ``cap`` entries per matched span.

    A value such as "Revenue" can sit in a column of every wide table; the entries kept are
    those whose table is also named by another span of the question ("Nova" → income_nova),
    then the best scored. Entries left with no reason to be here are dropped. Only schema
    entries count against the cap: the metric or rule a span names ("revenue", "caliber")
    is what the span means, and never crowded out by the columns holding the same word.
    """
    by_span: dict[tuple[int, int], list[EvidenceItem]] = {}
    for item in items:
        if item.entry.type not in SCHEMA_TYPES:
            continue
        for span in item.spans:
            by_span.setdefault(span, []).append(item)
    tables_of = {id(i): set(i.entry.tag_values("TABLE")) for i in items}
    for span, members in by_span.items():
        if len(members) <= cap:
            continue
        others = set().union(
            *(tables_of[id(i)] for s, group in by_span.items() if s != span for i in group)
        )
        ranked = sorted(
            members, key=lambda i: (-len(tables_of[id(i)] & others), -i.score, i.entry.id)
        )
        for item in ranked[cap:]:
            item.hits = [h for h in item.hits if h.span != span]
    return [item for item in items if item.hits]


def _mined_context(item: EvidenceItem) -> bool:
    """A mined business entry (``metadata["mining"]``) the question does not point to: no
    span names it, nothing it named or resembles brought it, no trigger switches it on."""
    mined = item.entry.is_mined
    return mined and item.entry.type in BUSINESS_TYPES and _tier(item) == CONTEXT


def _tier(item: EvidenceItem) -> int:
    """``DIRECT``: named in the question or switched on by a trigger; ``RELATED``: reached
    from such an item or similar to the question; ``CONTEXT``: brought by facets only."""
    reasons = {h.reason for h in item.hits}
    if "span" in reasons or item.entry.triggers:
        return DIRECT
    return RELATED if reasons & {"neighbour", "vector"} else CONTEXT

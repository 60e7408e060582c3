"""The prompt the agent chain sends at ask time, for a question whose own experience is held out.

A training tuple's prompt must be the text the student will see when it serves: the same RAG
agent (:class:`agents.rag.agent.RagAgent`: schema slice, hints, retrieved examples, dates)
and the same SQL writer (:meth:`agents.sql.generate.SqlGenerator.messages`: the system and
user templates) as :class:`agents.pipeline.Pipeline` uses, with the same options. Nothing here
renders a template itself.

The one difference is deliberate: the experience a tuple is made from (and any other
experience asking the same question) is held out of retrieval (:class:`HoldOutRetriever`), as
if it were not in the store, so the answer is never shown as its own few-shot example.

The chain's optional model calls (an LLM summary of the hints, the autonomous explorer) would
make the prompt depend on a model's output; prompts are built with both off and options that
turn them on are refused.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from typing import Any

from agents.llm.base import ChatResult, Message
from agents.pipeline_options import PipelineOptions
from agents.rag.agent import RagAgent
from agents.rag.schema_slice import SchemaCatalog
from agents.sql.generate import SqlGenerator
from indices.hits import Hit
from indices.retriever import Retriever
from kb.store import KnowledgeStore
from ukf import BaseUKF, QueryContext


class HoldOutRetriever(Retriever):
    """``base`` with the entries ``held_out`` removed from what it retrieves."""

    def __init__(self, base: Retriever, held_out: Collection[str]) -> None:
        super().__init__(
            base.store,
            base.strings,
            base.graph,
            base.vectors,
            base.options,
            base.experiences,
            facets=base.facets,
            refresh=base.refresh,
        )
        self.held_out = frozenset(held_out)

    def nearest_experiences(self, question: str, database: str | None = None) -> list[Hit]:
        found = super().nearest_experiences(question, database)
        return [hit for hit in found if hit.ukf_id not in self.held_out]

    def _admissible(self, entry: BaseUKF, context: QueryContext) -> bool:
        return entry.id not in self.held_out and super()._admissible(entry, context)


class _NoModel:
    """Stands in for the SQL writer's model: building messages never calls it."""

    name = "no-model"

    def chat(self, messages: Sequence[Message], **options: Any) -> ChatResult:
        raise RuntimeError("the dataset builder renders prompts only; it never calls a model")


class ChainPrompts:
    """Builds the chain's SQL-gen messages for questions on one database.

    Args:
        store: the knowledge store.
        database_name: the database's ``[DATABASE:...]`` name.
        dialect: its SQL dialect.
        retriever: the fused retriever over ``store`` (or a function returning it), built as
            the server builds it (:meth:`indices.index_set.IndexSet.retriever`).
        options: the pipeline's options (the RAG budgets and the generator's).
    """

    def __init__(
        self,
        store: KnowledgeStore,
        database_name: str,
        dialect: str,
        retriever: Retriever | Callable[[], Retriever],
        options: PipelineOptions | None = None,
    ) -> None:
        self.options = options or PipelineOptions()
        if self.options.rag.summarize or self.options.rag.explore != "never":
            raise ValueError(
                "prompts for training are built without model calls: set rag.summarize=False "
                f"and rag.explore='never' (got summarize={self.options.rag.summarize}, "
                f"explore={self.options.rag.explore!r})"
            )
        self.database_name = database_name
        self._source = retriever
        self._held_out: frozenset[str] = frozenset()
        self.rag = RagAgent(self._retriever, SchemaCatalog(store, database_name), self.options.rag)
        self.generator = SqlGenerator(_NoModel(), dialect, self.options.generate)

    def _retriever(self) -> Retriever:
        base = self._source if isinstance(self._source, Retriever) else self._source()
        return HoldOutRetriever(base, self._held_out)

    def messages(
        self, question: str, context: QueryContext | None, held_out: Collection[str] = ()
    ) -> list[Message]:
        """The messages the chain sends for ``question`` asked in ``context``, with the
        entries ``held_out`` not retrieved."""
        self.rag.catalog.require_tables()
        ctx = (context or QueryContext()).on(self.database_name)
        self._held_out = frozenset(held_out)
        try:
            rag = self.rag.run(question, ctx, explore=False)
        finally:
            self._held_out = frozenset()
        return self.generator.messages(rag, ctx)

"""The regression gate's pipelines, built as the ask path builds them.

:class:`agents.learn.gate.RegressionGate` answers its held questions with a pipeline on a
scratch copy of the store; it only knows the :class:`~agents.learn.gate.AskingPipeline`
protocol. This module (at the top of ``agents``, beside :mod:`agents.pipeline`, which the
subpackages never import) makes the factory that the server's mining gate and the bench's
share.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from agents.learn.gate import AskingPipeline, PipelineFactory
from agents.pipeline import ModelTier, Pipeline
from agents.pipeline_options import PipelineOptions
from indices.retriever import Retriever
from kb.store import KnowledgeStore
from kb.target.database import Database

__all__ = ["pipeline_factory"]


def pipeline_factory(
    tiers: Sequence[ModelTier],
    database: Database,
    database_name: str,
    options: PipelineOptions | None = None,
) -> PipelineFactory:
    """``(scratch store, its retriever) -> Pipeline`` on ``database`` with ``tiers`` and
    ``options``, as the ask path builds it."""

    def build(store: KnowledgeStore, retriever: Callable[[], Retriever]) -> AskingPipeline:
        return Pipeline(
            store=store,
            retriever=retriever,
            database=database,
            database_name=database_name,
            tiers=list(tiers),
            options=options,
        )

    return build

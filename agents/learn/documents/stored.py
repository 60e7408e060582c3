"""What the knowledge base already holds for a database that a document's entries build on.

A document's formula may name a metric defined elsewhere (the knowledge base's, by name or
synonym), and its glossary expansions may reach metrics through glossary entries stored by an
earlier extraction; both are read in any state (a candidate counts as much as an active one).
"""

from __future__ import annotations

from agents.learn.documents.build import GLOSSARY_COLLECTION
from kb.store import KnowledgeStore
from ukf import BaseUKF


def stored_metric_names(store: KnowledgeStore, database: str) -> set[str]:
    """Names and synonyms of the database's metrics already in the knowledge base (any
    state): a document's formula may build on them."""
    stored = store.iterate(type="metric", tags={"DATABASE": database}, active=None)
    return {n for entry in stored for n in [entry.name, *entry.synonyms] if n}


def stored_glossary(store: KnowledgeStore, database: str) -> list[BaseUKF]:
    """The database's glossary entries already in the knowledge base (any state)."""
    return list(
        store.iterate(
            type="knowledge",
            collection=GLOSSARY_COLLECTION,
            tags={"DATABASE": database},
            active=None,
        )
    )

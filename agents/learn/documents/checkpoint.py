"""The document's own entry: what extraction remembers of each document it read.

One inactive :class:`ukf.DocumentUKF` per document file name and database (invisible to every
index), its ``metadata["extraction"]`` the checkpoint::

    {"sha256": ..., "path": ..., "job_id": ..., "complete": false,
     "sections": {"3:Glossary > Metrics": {"status": "done", "items": {...}}
                  | {"status": "failed", "error": "..."}},
     "entries": [ids of the entries this version gave]}

A run finds it by id: the same content hash and ``complete`` → nothing to do; the same hash,
not complete (a stopped run) → the sections already read are not read again; another hash →
a new version, whose entries replace ``entries``.
"""

from __future__ import annotations

from typing import Any

from kb.documents import Document
from kb.store import KnowledgeStore
from ukf import DocumentUKF

EXTRACTION = "extraction"
MAX_CONTENT_CHARS = 100_000
MIME = {
    "markdown": "text/markdown",
    "text": "text/plain",
    "html": "text/html",
    "pdf": "application/pdf",
}


def document_entry(document: Document, database: str, state: dict[str, Any]) -> DocumentUKF:
    """The document's entry holding the checkpoint ``state``."""
    text = "\n\n".join(section.text for section in document.sections)
    return DocumentUKF.create(
        document.name,
        text[:MAX_CONTENT_CHARS],
        uri=document.path,
        mime_type=MIME[document.kind],
        database=database,
        source="auto",
        inactive_mark=True,
        metadata={EXTRACTION: state},
    )


def document_id(document: Document, database: str) -> str:
    """The id of the document's entry (it does not depend on the content)."""
    return document_entry(document, database, {}).id


def stored_state(store: KnowledgeStore, entry_id: str) -> dict[str, Any]:
    """The checkpoint of the stored document entry (``{}`` when there is none)."""
    found = store.get_many([entry_id]).get(entry_id)
    state = found.metadata.get(EXTRACTION) if found is not None else None
    return dict(state) if isinstance(state, dict) else {}

"""Structured information extraction (SIE): business knowledge from documents.

Glossary terms and aliases, metric definitions with formulas, business rules with triggers,
value mappings and taxonomies, read by the LLM from each section of a Markdown, text, HTML or
PDF document (:mod:`kb.documents`), checked against the profiled schema and merged as
candidate knowledge (the review queue lists them), with the document, its content hash and
the section as provenance::

    documents = [read_document(Path("handbook.md"))]
    report = extract_documents(store, documents, LLMSectionExtractor(llm), database="autofin")

The run: :mod:`agents.learn.documents.run`; the model's part: :mod:`.extractor`; items →
entries and their checks: :mod:`.build`; the per-document checkpoint: :mod:`.checkpoint`.
"""

from agents.learn.documents.build import MINER
from agents.learn.documents.extractor import (
    ANSWER_SCHEMA,
    LLMSectionExtractor,
    SectionExtractor,
    SectionFailed,
)
from agents.learn.documents.run import ExtractionError, ExtractionReport, extract_documents

__all__ = [
    "ANSWER_SCHEMA",
    "MINER",
    "ExtractionError",
    "ExtractionReport",
    "LLMSectionExtractor",
    "SectionExtractor",
    "SectionFailed",
    "extract_documents",
]

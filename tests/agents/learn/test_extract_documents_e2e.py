"""End to end with the real embedded model (Qwen2.5-Coder 0.5B): a small Markdown glossary
about Spider's ``concert_singer`` extracted into its profiled knowledge base; at least one
checked entry makes a phrase of the glossary findable."""

from __future__ import annotations

from pathlib import Path

import pytest

from agents.learn.documents import LLMSectionExtractor, extract_documents
from agents.llm.llamacpp import LlamaCppLLM
from indices.string import StringIndex
from kb.documents import read_document
from tests.agents.learn.test_extract_documents import concert  # noqa: F401  (fixture)

pytestmark = pytest.mark.slow  # one model call over the glossary (~1-2 min on 2 cores)
# The 0.5B model is fragile here: the same section under another file name may give nothing
# (an empty answer) or wrong columns; the schema check drops what does not exist.

GLOSSARY = """# Concert singer glossary

## Stadiums

The seating capacity of a stadium is stored in stadium.Capacity; people also call it the venue size.
"""
PHRASES = ("venue size", "seating capacity")


def test_the_model_extracts_a_glossary_that_makes_a_phrase_findable(
    concert,  # noqa: F811
    tmp_path: Path,
    embedded_model_path: Path,
):
    store, database = concert
    path = tmp_path / "handbook.md"
    path.write_text(GLOSSARY, encoding="utf-8")
    llm = LlamaCppLLM(str(embedded_model_path), n_ctx=4096, n_threads=2, seed=11)
    report = extract_documents(
        store,
        [read_document(path)],
        LLMSectionExtractor(llm),
        database="concert_singer",
        target=database,
        activate=True,
    )
    assert report.llm_calls == 1 and not report.failed_parts, report.to_dict()
    assert report.activated_ids, report.to_dict()
    extracted = store.get_many(report.activated_ids)
    for entry in extracted.values():
        note = entry.metadata["document"]
        assert note["locator"] == "Concert singer glossary > Stadiums"
        assert note["name"] == "handbook.md" and note["sha256"] == report.documents[0]["sha256"]
    index = StringIndex.from_store(store)
    found = {
        phrase
        for phrase in PHRASES
        for match in index.search(f"what is the {phrase}")
        if set(match.ukf_ids) & set(extracted)
    }
    assert found, [e.name for e in extracted.values()]

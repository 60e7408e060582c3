"""End to end with the real embedded model (Qwen2.5-Coder 0.5B): a data dictionary names an
opaque column of a Spider database, and the model answers a question that needs it.

The database is Spider's ``concert_singer`` with ``singer.Age`` renamed to ``c7`` (as
warehouses name columns by codes); nothing in the schema says what ``c7`` holds until the
dictionary does. The question asks for ages in words that the column name does not contain.
"""

from __future__ import annotations

import shutil
import sqlite3
from collections import Counter
from pathlib import Path

import pytest

from agents.llm.llamacpp import LlamaCppLLM
from agents.pipeline import ModelTier, Pipeline
from indices.index_set import IndexSet
from kb.dictionary import apply_dictionary, read_dictionary
from kb.profile.profiler import ProfileOptions, profile_database
from kb.store import KnowledgeStore
from kb.target.database import Database
from tests.agents.conftest import spider_path

pytestmark = pytest.mark.slow  # the real model answers (~30-60 s on 2 cores)

DICTIONARY = """
database: concert_singer
tables:
  singer:
    columns:
      c7:
        description: Age of the singer in years
        synonyms: [age, singer age]
"""
QUESTION = "What is the average age of the singers from France?"
GOLD = "SELECT avg(c7) FROM singer WHERE Country = 'France'"


def _opaque_concert(folder: Path) -> Path:
    path = folder / "concert_singer.sqlite"
    shutil.copy(spider_path("concert_singer"), path)
    with sqlite3.connect(path) as conn:
        conn.execute("ALTER TABLE singer RENAME COLUMN Age TO c7")
    return path


def test_the_model_answers_with_the_column_the_dictionary_names(tmp_path, embedded_model_path):
    store = KnowledgeStore(f"sqlite:///{tmp_path / 'knowledge.db'}")
    database = Database(f"sqlite:///{_opaque_concert(tmp_path)}")
    try:
        profile_database(
            database, store, database_name="concert_singer", options=ProfileOptions(progress=False)
        )
        path = tmp_path / "concert_dictionary.yaml"
        path.write_text(DICTIONARY, encoding="utf-8")
        report = apply_dictionary(store, read_dictionary(path))
        assert report.written == 1 and not report.unknown
        llm = LlamaCppLLM(str(embedded_model_path), n_ctx=4096, n_threads=2, seed=11)
        pipeline = Pipeline(
            store=store,
            retriever=IndexSet.build(store).retriever(),
            database=database,
            database_name="concert_singer",
            tiers=[ModelTier("0.5b", llm)],
        )
        answer = pipeline.ask(QUESTION)
        expected = database.execute(GOLD)
        assert answer.error is None, answer.error
        assert "c7" in (answer.sql or "").lower(), answer.sql
        assert Counter(map(tuple, answer.rows)) == Counter(expected.rows), answer.sql
        c7 = store.search(type="column", tags={"COLUMN": "c7"})[0]
        assert c7.id in {used.id for used in answer.knowledge}
    finally:
        database.close()
        store.close()

"""The multi-vector index: serializers, caching, top-k, MMR, fusion, store following."""

from __future__ import annotations

import hashlib
import re
import threading

import faiss
import numpy as np

from indices.serializers import comment_header
from indices.sketch import QuerySketcher
from indices.string import StringIndex
from indices.vector import VectorIndex
from ukf import ColumnUKF, EnumUKF, ExperienceUKF, TableUKF


class WordHashEmbedder:
    """Bag of words hashed into 64 dimensions: deterministic, for orchestration tests only."""

    dimension = 64

    def __init__(self) -> None:
        self.calls = 0

    def embed(self, texts):
        self.calls += len(texts)
        out = np.zeros((len(texts), self.dimension), dtype=np.float32)
        for row, text in enumerate(texts):
            for word in re.findall(r"\w+", text.lower()):
                out[row, int(hashlib.md5(word.encode()).hexdigest(), 16) % 64] += 1.0
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        return out / np.where(norms == 0, 1, norms)


def _experiences():
    return [
        ExperienceUKF.create(
            "total revenue of nova in 2024",
            "-- revenue by year\nSELECT 1",
            database="autofin",
            cot="sum the revenue column",
        ),
        ExperienceUKF.create("revenue of aurora in 2023", "SELECT 2", database="autofin"),
        ExperienceUKF.create("how many singers are from france", "SELECT 3", database="concert"),
    ]


def test_each_serializer_gets_its_own_space_and_texts_are_embedded_once():
    embedder = WordHashEmbedder()
    index = VectorIndex(embedder)
    entries = _experiences()
    index.add(entries)
    assert index.size("query") == 3 and index.size("sql") == 3 and index.size("cot") == 1
    assert index.size("comment_header") == 1 and index.size("name_description") == 0
    calls = embedder.calls
    index.add(entries)  # re-adding unchanged entries embeds nothing
    assert embedder.calls == calls and index.size("query") == 3


def test_top_k_by_query_and_fusion_across_serializers():
    index = VectorIndex(WordHashEmbedder())
    entries = _experiences()
    index.add(entries)
    top = index.search("nova revenue 2024", k=2)
    assert top[0].ukf_id == entries[0].id and top[0].reason == "vector"
    assert top[0].detail["serializer"] == "query"
    fused = index.search("sum the revenue", serializers=["query", "cot"], k=3)
    assert fused[0].ukf_id == entries[0].id
    robin = index.search("revenue", serializers=["query", "sql"], k=3, fusion="round_robin")
    assert len({h.ukf_id for h in robin}) == 3


def test_mmr_prefers_diverse_results():
    index = VectorIndex(WordHashEmbedder())
    twins = [
        ExperienceUKF.create(f"revenue of nova {suffix}", "SELECT 1", database="x")
        for suffix in ("", "!", "?")
    ]
    other = ExperienceUKF.create("revenue of titan by region", "SELECT 1", database="x")
    index.add([*twins, other])
    plain = [h.ukf_id for h in index.search("revenue of nova", k=2)]
    diverse = [h.ukf_id for h in index.search("revenue of nova", k=2, mmr=True, mmr_lambda=0.3)]
    assert other.id not in plain and other.id in diverse


def test_query_sketch_replaces_entities_with_placeholders():
    singer = TableUKF.create("concert", "singer", synonyms=["singers"])
    country = ColumnUKF.create(singer, "country")
    france = EnumUKF.create(country, "France")
    strings = StringIndex()
    strings.add([(e.id, [e.name, *e.synonyms]) for e in (singer, country, france)])
    strings.wait()
    types = {e.id: e.type for e in (singer, country, france)}
    sketcher = QuerySketcher(strings, types.get)
    sketch = sketcher.sketch("List the country of top 3 singers from France")
    assert sketch == "List the [COLUMN] of top [VALUE] [TABLE] from [ENUM]"
    index = VectorIndex(WordHashEmbedder(), sketch=sketcher.sketch)
    index.add(_experiences())
    hits = index.search("how many singers are from France", serializers=["sketch"], k=1)
    assert hits[0].detail["serializer"] == "sketch"


def test_type_filter_and_general_serializer():
    table = TableUKF.create("autofin", "income_nova", description="Monthly income of Nova")
    index = VectorIndex(WordHashEmbedder())
    index.add([table, *_experiences()])
    hits = index.search("nova income", serializers=["name_description"], k=5, types=["table"])
    assert [h.ukf_id for h in hits] == [table.id]


def test_comment_header_reads_leading_sql_comments():
    assert comment_header("-- revenue\n-- by year\nSELECT 1 -- no") == "revenue by year"
    assert comment_header("SELECT 1") is None


def test_follows_the_store(store):
    entries = _experiences()
    store.upsert_many(entries)
    index = VectorIndex.from_store(store, WordHashEmbedder())
    store.remove(entries[0].id)
    assert index.refresh(store)
    assert entries[0].id not in {h.ukf_id for h in index.search("nova revenue 2024", k=3)}


def test_a_search_from_another_thread_runs_faiss_on_one_thread():
    """OpenMP keeps the thread count per thread: a handler thread must set it itself."""
    index = VectorIndex(WordHashEmbedder())
    index.add(_experiences())
    seen: list[int] = []

    def handler() -> None:
        faiss.omp_set_num_threads(4)  # what a fresh thread may start with
        index.search("revenue by region", k=2)
        seen.append(faiss.omp_get_max_threads())

    worker = threading.Thread(target=handler)
    worker.start()
    worker.join()
    assert seen == [1]

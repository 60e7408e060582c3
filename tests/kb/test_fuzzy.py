"""Fuzzy matching: normalisation, containment math, the index, ranking and candidate caps."""

from __future__ import annotations

import numpy as np
import pytest

from indices.embeddings import HashingEmbedder, MiniLMEmbedder, shared_minilm
from indices.fuzzy import FuzzyIndex, FuzzyItem
from indices.fuzzy_text import containment, ngrams, normalize, strip_accents, token_ngrams, tokens

COUNTRIES = ["United States", "United Kingdom", "United Arab Emirates", "Germany", "France"]
MODELS = [("NV-200", ["Nova 200"]), ("NV-300", []), ("NX-20", [])]
CATEGORIES = ["car", "truck", "bicycle", "banana"]


def shop_items() -> list[FuzzyItem]:
    items = [
        FuzzyItem(f"country:{c}", c, {"value": c}, ("customers", "country")) for c in COUNTRIES
    ]
    for value, synonyms in MODELS:
        for text in [value, *synonyms]:
            items.append(FuzzyItem(f"model:{value}", text, {"value": value}, ("products", "model")))
    items += [FuzzyItem(f"cat:{c}", c, {"value": c}, ("products", "category")) for c in CATEGORIES]
    return items


@pytest.fixture(scope="module")
def minilm() -> MiniLMEmbedder:
    return shared_minilm()


@pytest.fixture(scope="module")
def semantic_index(minilm: MiniLMEmbedder) -> FuzzyIndex:
    return FuzzyIndex(shop_items(), embedder=minilm)


# ----------------------------------------------------------------- normalisation
def test_tokens_fold_case_accents_punctuation_camel_case_and_digits() -> None:
    assert tokens("orderDate_NV-200 Zürich") == ["order", "date", "nv", "200", "zurich"]
    assert tokens("HTTPServer, São-Paulo!") == ["http", "server", "sao", "paulo"]
    assert tokens("  ") == []
    assert strip_accents("Café Curaçao") == "Cafe Curacao"


def test_spelling_variants_normalise_to_the_same_text() -> None:
    assert normalize("NV200") == normalize("nv-200") == normalize("NV 200") == "nv 200"
    assert normalize("amt_usd") == normalize("AmtUSD") == "amt usd"


# --------------------------------------------------------------- containment math
def test_ngrams_have_boundary_markers() -> None:
    assert ngrams("cat") == {"#ca", "cat", "at#"}
    assert token_ngrams("a") == {"#a#"}
    assert ngrams("Cat cat") == {"#ca", "cat", "at#"}  # a set: repeated tokens count once


def test_containment_is_asymmetric_on_hand_computed_examples() -> None:
    assert containment("cat", "cats") == pytest.approx(2 / 3)  # #ca cat | at#
    assert containment("cats", "cat") == pytest.approx(2 / 4)  # #ca cat | ats ts#
    assert containment("states", "United States") == 1.0
    # untied: #un ed# shared out of 6; states: all 6 shared -> 8 / 12
    assert containment("untied states", "United States") == pytest.approx(8 / 12)
    assert containment("", "anything") == 0.0


def test_index_scores_equal_containment_without_embeddings() -> None:
    index = FuzzyIndex(shop_items())
    for match in index.search("untied states", k=20):
        assert match.cosine is None
        assert match.score == match.containment
        assert match.containment == pytest.approx(containment("untied states", match.text))


# ------------------------------------------------------------------ real matching
def test_typo_finds_united_states(semantic_index: FuzzyIndex) -> None:
    best = semantic_index.search("untied states", k=3)[0]
    assert best.text == "United States"
    assert best.containment == pytest.approx(8 / 12) and best.cosine is not None


@pytest.mark.parametrize("query", ["NV200", "nv 200", "nova 200", "Nova200"])
def test_model_code_variants_find_nv_200(semantic_index: FuzzyIndex, query: str) -> None:
    best = semantic_index.search(query, k=3)[0]
    assert best.id == "model:NV-200" and best.payload == {"value": "NV-200"}
    assert best.score > 0.9


def test_synonym_match_reports_the_matched_text(semantic_index: FuzzyIndex) -> None:
    best = semantic_index.search("nova 200", k=1)[0]
    assert best.text == "Nova 200"  # the synonym matched; the payload names the value


def test_meaning_without_shared_spelling(semantic_index: FuzzyIndex) -> None:
    matches = semantic_index.search("automobile", k=3, scope=("products", "category"))
    assert matches[0].text == "car"
    assert matches[0].containment == 0.0 and matches[0].cosine > 0.6


def test_ranking_is_ordered_and_ids_are_distinct(semantic_index: FuzzyIndex) -> None:
    matches = semantic_index.search("nova", k=10)
    scores = [m.score for m in matches]
    assert scores == sorted(scores, reverse=True)
    assert len({m.id for m in matches}) == len(matches)
    for m in matches:
        assert m.score == pytest.approx(0.5 * m.containment + 0.5 * max(m.cosine, 0), abs=1e-6)


def test_min_score_and_k_limit_results(semantic_index: FuzzyIndex) -> None:
    assert len(semantic_index.search("united", k=2)) == 2
    strict = semantic_index.search("untied states", k=10, min_score=0.45)
    assert [m.text for m in strict] == ["United States"]
    assert semantic_index.search("qqqxxzz", k=5, min_score=0.5) == []


def test_scope_restricts_to_a_table_or_column(semantic_index: FuzzyIndex) -> None:
    in_table = semantic_index.search("united", k=10, scope=("products",))
    assert {m.id.split(":")[0] for m in in_table} <= {"model", "cat"}
    in_column = semantic_index.search("car", k=10, scope=("customers", "country"))
    assert all(m.id.startswith("country:") for m in in_column)
    assert semantic_index.search("car", scope=("nowhere",)) == []


def test_in_scope_lists_payloads_by_id() -> None:
    index = FuzzyIndex(shop_items())
    models = index.in_scope(("products", "model"), exact=True)
    assert models == {f"model:{m}": {"value": m} for m, _ in MODELS}
    assert len(index.in_scope(("products",))) == len(MODELS) + len(CATEGORIES)
    assert index.in_scope(("products",), exact=True) == {}


def test_ties_prefer_the_closer_item() -> None:
    index = FuzzyIndex([("a", "United States"), ("b", "States")])
    assert [m.id for m in index.search("states")] == ["b", "a"]


def test_weight_one_ignores_embeddings() -> None:
    index = FuzzyIndex(shop_items(), embedder=HashingEmbedder(), weight=1.0)
    match = index.search("untied states")[0]
    assert match.cosine is None and match.score == match.containment


def test_tuples_empty_queries_and_empty_indices() -> None:
    index = FuzzyIndex([("1", "Germany", {"v": 1}, ("t", "c")), ("2", "France")])
    assert index.search("germny")[0].payload == {"v": 1}
    assert index.search("") == [] and index.search("?!") == []
    assert FuzzyIndex([]).search("anything") == []
    with pytest.raises(ValueError):
        FuzzyIndex([], weight=1.5)


# ------------------------------------------------------------- no scans, capping
def synthetic(n: int) -> list[tuple[str, str]]:
    rng = np.random.default_rng(0)
    words = ["alpha", "bravo", "delta", "echo", "golf", "hotel", "india", "kilo", "lima", "mike"]
    return [(str(i), f"{rng.choice(words)} {rng.choice(words)} {i}") for i in range(n)]


def test_search_scores_only_capped_candidates() -> None:
    index = FuzzyIndex(synthetic(5000), max_candidates=50)
    candidates = index.candidates("untied states")
    assert candidates.size == 0  # no shared n-gram: nothing is scored
    assert index.candidates("alpha bravo").size == 50
    assert index.candidates("kilo 42").size == 50
    items = dict(synthetic(5000))
    assert index.search(items["4242"].upper().replace(" ", "_"))[0].id == "4242"
    embedded = FuzzyIndex(synthetic(5000), embedder=HashingEmbedder(), max_candidates=50)
    assert 50 <= embedded.candidates("alpha bravo").size <= 100


class CountingEmbedder(HashingEmbedder):
    def __init__(self) -> None:
        super().__init__()
        self.texts: list[str] = []

    def embed(self, texts):  # type: ignore[no-untyped-def]
        self.texts.extend(texts)
        return super().embed(texts)


def test_rebuild_reuses_embeddings_of_known_texts() -> None:
    embedder = CountingEmbedder()
    first = FuzzyIndex(shop_items(), embedder=embedder)
    embedder.texts.clear()
    second = FuzzyIndex([*shop_items(), FuzzyItem("new", "Brazil")], embedder=embedder, reuse=first)
    assert embedder.texts == ["brazil"]
    assert second.search("brazil")[0].id == "new"
    plain = FuzzyIndex(shop_items())
    assert not plain.embedded and plain.with_embeddings(embedder).embedded

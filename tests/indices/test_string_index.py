"""The Aho-Corasick synonym index: whole words, lemmas, spans, conflicts, rebuilds, disk."""

import threading
import time

from indices.string import StringIndex


def _index(**phrases):
    index = StringIndex()
    index.add((uid, words) for uid, words in phrases.items())
    index.wait()
    return index


def test_matches_whole_words_after_lemmatisation_with_original_spans():
    index = _index(rev=["revenue"], nova=["Nova", "NV-200"], cars=["car"])
    question = "What were the Revenues of NOVA cars and NV200s?"
    found = {(m.text, m.ukf_ids) for m in index.search(question)}
    assert ("Revenues", ("rev",)) in found
    assert ("NOVA", ("nova",)) in found
    assert ("cars", ("cars",)) in found
    assert ("NV200", ("nova",)) in found
    span = next(m for m in index.search(question) if m.ukf_ids == ("rev",))
    assert question[span.start : span.end] == "Revenues"


def test_no_partial_word_matches():
    index = _index(car=["car"], art=["art"])
    assert index.search("carpet cart scarce") == []


def test_all_overlaps_or_longest_non_overlapping():
    index = _index(sales=["sales"], ledger=["sales ledger"], nova=["Nova sales ledger"])
    question = "show the Nova sales ledger"
    assert len(index.search(question, mode="all")) == 3
    [longest] = index.search(question, mode="longest")
    assert longest.ukf_ids == ("nova",) and longest.text == "Nova sales ledger"


def test_a_pattern_shared_by_several_entries_returns_all_of_them():
    index = _index(a=["region"], b=["Region"])
    [match] = index.search("by region")
    assert match.ukf_ids == ("a", "b")
    assert {h.ukf_id for h in index.search_hits("by region")} == {"a", "b"}


def test_batched_adds_and_removes():
    index = _index(a=["alpha"], b=["beta"])
    index.remove(["a"])
    index.add([("c", ["gamma"]), ("b", ["beta two"])])
    index.wait()
    assert [m.ukf_ids for m in index.search("alpha beta gamma beta two")] == [("c",), ("b",)]


def test_a_search_during_a_rebuild_answers_from_the_old_automaton(monkeypatch):
    index = _index(a=["alpha"])
    import indices.string as module

    started, release = threading.Event(), threading.Event()
    real = module._Automaton

    def slow_automaton(patterns, automaton=None):
        started.set()
        release.wait(5)
        return real(patterns, automaton)

    monkeypatch.setattr(module, "_Automaton", slow_automaton)
    index.add([("b", ["beta"])])  # rebuild starts in the background and blocks
    assert started.wait(5)
    begin = time.perf_counter()
    assert [m.ukf_ids for m in index.search("alpha beta")] == [("a",)]
    assert time.perf_counter() - begin < 0.5
    release.set()
    index.wait(5)
    assert [m.ukf_ids for m in index.search("alpha beta")] == [("a",), ("b",)]


def test_save_and_load_without_rebuilding(tmp_path, monkeypatch):
    index = _index(a=["Nova revenue"], b=["budget"])
    index.version = 7
    index.save(tmp_path / "string")
    import indices.string as module

    def no_rebuild(*_args, **_kwargs):
        raise AssertionError("load must not rebuild")

    monkeypatch.setattr(module.ahocorasick, "Automaton", no_rebuild)
    loaded = StringIndex.load(tmp_path / "string")
    assert loaded.version == 7
    assert [m.ukf_ids for m in loaded.search("nova revenues vs budget")] == [("a",), ("b",)]


def test_stopword_and_tiny_patterns_are_ignored():
    index = _index(a=["the"], b=["x"], c=["of"])
    assert index.pattern_count == 0 and index.search("the x of") == []


def test_built_from_the_store_and_follows_its_version(tmp_path):
    from kb.store import KnowledgeStore
    from ukf import ColumnUKF, EnumUKF, ExperienceUKF, TableUKF

    store = KnowledgeStore(f"sqlite:///{tmp_path / 'k.db'}")
    table = TableUKF.create("autofin", "income_nova", synonyms=["Nova income"])
    region = ColumnUKF.create(table, "region")
    emea = EnumUKF.create(region, "EMEA", synonyms=["Europe"])
    store.upsert_many([table, region, emea, ExperienceUKF.create("what is the region?")])
    index = StringIndex.from_store(store)
    found = {m.text: m.ukf_ids for m in index.search("Nova income by region in Europe")}
    assert found == {"Nova income": (table.id,), "region": (region.id,), "Europe": (emea.id,)}
    store.remove(emea.id)
    store.upsert(EnumUKF.create(region, "APAC", synonyms=["Asia Pacific"]))
    assert index.refresh(store) and not index.refresh(store)
    index.wait()
    texts = {m.text for m in index.search("Europe and Asia Pacific")}
    assert texts == {"Asia Pacific"}


def test_running_plants_finds_the_table_by_lemma_and_the_enum_by_synonym():
    index = _index(plant_table=["plant"], operational=["Operational", "running"])
    found = {m.text: m.ukf_ids for m in index.search("list the running plants")}
    assert found == {"running": ("operational",), "plants": ("plant_table",)}


def test_unicode_text_keeps_original_spans():
    index = _index(zurich=["Zürich"], beijing=["北京"], cafe=["café crème"])
    question = "Ventes à ZÜRICH, 北京 et Café Crème?"
    found = {m.text: m.ukf_ids for m in index.search(question)}
    assert found == {"ZÜRICH": ("zurich",), "北京": ("beijing",), "Café Crème": ("cafe",)}

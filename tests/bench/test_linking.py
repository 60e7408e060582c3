"""Gold SQL elements and the schema-linking measurement."""

from bench.datasets import load_dataset
from bench.linking import experience_skeleton_match, run_linking
from bench.sql_elements import sql_elements
from indices.embeddings import shared_minilm
from indices.retriever import RetrievalOptions

SCHEMA = {
    "singer": {"Singer_ID": "int", "Name": "text", "Country": "text", "Age": "int"},
    "singer_in_concert": {"Singer_ID": "int", "concert_ID": "int"},
    "concert": {"concert_ID": "int", "Year": "text"},
}


def test_sql_elements_resolve_aliases_and_find_literals():
    sql = (
        "SELECT T2.name FROM singer_in_concert AS T1 JOIN singer AS T2 ON T1.singer_id = "
        "T2.singer_id JOIN concert AS T3 ON T1.concert_id = T3.concert_id "
        "WHERE T3.year = 2014 AND T2.country = 'France' AND T2.name LIKE \"%Joe%\""
    )
    found = sql_elements(sql, SCHEMA)
    assert found.tables == {"singer", "singer_in_concert", "concert"}
    assert ("singer", "country") in found.columns and ("concert", "year") in found.columns
    assert ("singer_in_concert", "singer_id") in found.columns
    assert found.literals == {"france", "joe"}


def test_unparsable_sql_gives_nothing():
    assert sql_elements("SELEC nonsense (((", SCHEMA).tables == set()


def test_linking_on_one_spider_database(tmp_path):
    dataset = load_dataset("spider_dev").filter(database="concert_singer")
    scores = run_linking(dataset, f"sqlite:///{tmp_path / 'k.db'}", RetrievalOptions())
    assert len(scores.items) == len(dataset) == 45
    assert sum(scores.table_recall) / len(scores.table_recall) >= 0.95
    assert sum(scores.column_recall) / len(scores.column_recall) >= 0.85
    assert max(scores.tokens) <= 1500


def test_top_experiences_share_the_gold_skeleton_on_part_of_geoquery(tmp_path):
    """The real thing: MiniLM, the GeoQuery database profiled, its train questions as labeled
    experiences, the retriever's top experience for each test question."""
    dataset = load_dataset("geoquery").filter(limit=150)
    match = experience_skeleton_match(dataset, f"sqlite:///{tmp_path / 'k.db'}", shared_minilm())
    assert (match.asked, match.known) == (42, 88) and match.shown == match.asked
    share = match.share
    assert share >= 0.85  # 0.95 when written

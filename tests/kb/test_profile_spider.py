"""Profiling the 19 Spider dev databases and GeoQuery: known facts, invariants, PostgreSQL.

One SQLite store receives every database (module fixture). A Spider database copied into
PostgreSQL must give the same enum values and the same foreign-key joins (and so the same
ids: identity is database / table / column / value, not the backend).
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import (
    Column,
    Float,
    ForeignKeyConstraint,
    Integer,
    MetaData,
    Table,
    Text,
    create_engine,
    select,
)

from bench.datasets.registry import default_data_root
from kb.profile.profiler import ProfileOptions, ProfileReport, profile_database, profile_schema
from kb.store import KnowledgeStore
from kb.target.database import Database
from ukf import BaseUKF, TableUKF

DATA = default_data_root()
SPIDER = DATA / "spider_dev" / "database"
GEOQUERY = DATA / "geoquery" / "geography-db.added-in-2020.sqlite"
QUIET = ProfileOptions(progress=False)


def spider_path(name: str) -> Path:
    return SPIDER / name / f"{name}.sqlite"


def databases() -> dict[str, Path]:
    if not SPIDER.is_dir() or not GEOQUERY.is_file():
        pytest.fail(f"benchmark data not found under {DATA}; set ALMANAC_BENCH_DATA")
    found = {p.name: spider_path(p.name) for p in sorted(SPIDER.iterdir()) if p.is_dir()}
    return {**found, "geoquery": GEOQUERY}


def profile_into(store: KnowledgeStore, url: str, name: str, **options: Any) -> ProfileReport:
    with Database(url) as database:
        return profile_database(
            database, store, database_name=name, options=ProfileOptions(progress=False, **options)
        )


@pytest.fixture(scope="module")
def profiled(tmp_path_factory) -> Iterator[tuple[KnowledgeStore, dict[str, ProfileReport]]]:
    folder = tmp_path_factory.mktemp("profile_spider")
    with KnowledgeStore(f"sqlite:///{folder / 'knowledge.db'}") as store:
        reports = {
            name: profile_into(store, f"sqlite:///{path}", name)
            for name, path in databases().items()
        }
        yield store, reports


def sql(path: Path, query: str) -> list[tuple[Any, ...]]:
    with sqlite3.connect(f"{path.as_uri()}?mode=ro", uri=True) as conn:
        rows = conn.execute(query).fetchall()
    conn.close()
    return rows


def entry(store: KnowledgeStore, db: str, table: str, column: str | None = None) -> BaseUKF:
    tags = {"DATABASE": db, "TABLE": table}
    if column is not None:
        tags["COLUMN"] = column
    found = store.search(type="table" if column is None else "column", tags=tags)
    assert len(found) == 1, (db, table, column, found)
    return found[0]


def enum_values(store: KnowledgeStore, db: str, table: str, column: str) -> set[Any]:
    tags = {"DATABASE": db, "TABLE": table, "COLUMN": column}
    return {e.content_resources["value"] for e in store.iterate(type="enum", tags=tags)}


def joins(store: KnowledgeStore, db: str, table: str) -> set[tuple[str, str, str, str]]:
    """``(column, ref_table, ref_column)`` of the table's joins, the target named by its id."""
    tables = {e.id: e.name for e in store.iterate(type="table", tags={"DATABASE": db})}
    found = set()
    for rel in entry(store, db, table).related:
        if rel.relation == "joins":
            for col, ref in zip(
                rel.resources["columns"], rel.resources["ref_columns"], strict=True
            ):
                found.add((table, col, tables[rel.object], ref))
    return found


# ------------------------------------------------------------------ invariants


def test_every_database_table_and_column_is_written(profiled):
    store, reports = profiled
    assert len(reports) == 20
    for name, report in reports.items():
        profile = report.profile
        assert profile.table_count > 0, name
        assert store.count(type="table", tags={"DATABASE": name}) == profile.table_count
        assert store.count(type="column", tags={"DATABASE": name}) == profile.column_count
        assert not report.invalidated and not report.updated


def test_every_foreign_key_joins_existing_tables(profiled):
    store, reports = profiled
    for name in reports:
        ids = {e.id for e in store.iterate(type="table", tags={"DATABASE": name})}
        for table in store.iterate(type="table", tags={"DATABASE": name}):
            assert isinstance(table, TableUKF)
            targets = [r.object for r in table.related if r.relation == "joins"]
            assert len(targets) == len(table.foreign_keys), (name, table.name)
            assert set(targets) <= ids, (name, table.name)


def test_re_profiling_spider_writes_nothing(profiled):
    store, _reports = profiled
    version = store.version
    for name in ("concert_singer", "pets_1", "car_1", "world_1", "geoquery"):
        path = databases()[name]
        assert not profile_into(store, f"sqlite:///{path}", name).changed
    assert store.version == version


# ------------------------------------------------------------------ known facts


def test_concert_singer(profiled):
    store, _ = profiled
    country = entry(store, "concert_singer", "singer", "Country")
    assert country.content_resources["semantic_type"] == "categorical"
    assert {"Netherlands", "United States", "France"} <= enum_values(
        store, "concert_singer", "singer", "Country"
    )
    assert ("singer_in_concert", "Singer_ID", "singer", "Singer_ID") in joins(
        store, "concert_singer", "singer_in_concert"
    )
    age = entry(store, "concert_singer", "singer", "Age").content_resources["statistics"]
    ((mean, low, high),) = sql(
        spider_path("concert_singer"), "SELECT AVG(Age), MIN(Age), MAX(Age) FROM singer"
    )
    assert age["numeric"]["mean"] == pytest.approx(mean)
    assert (age["numeric"]["min"], age["numeric"]["max"]) == (low, high)
    assert age["numeric"]["kind"] == "integer"
    singer_id = entry(store, "concert_singer", "singer", "Singer_ID")
    assert singer_id.content_resources["semantic_type"] == "identifier"
    assert singer_id.content_resources["primary_key"]


def test_pets_1(profiled):
    store, _ = profiled
    assert enum_values(store, "pets_1", "Pets", "PetType") == {"cat", "dog"}
    assert enum_values(store, "pets_1", "Student", "Sex") == {"F", "M"}
    assert joins(store, "pets_1", "Has_Pet") == {
        ("Has_Pet", "PetID", "Pets", "PetID"),
        ("Has_Pet", "StuID", "Student", "StuID"),
    }
    weight = entry(store, "pets_1", "Pets", "weight").content_resources["statistics"]["numeric"]
    assert weight["kind"] == "float" and weight["max"] == 13.4


def test_car_1(profiled):
    store, _ = profiled
    mpg = entry(store, "car_1", "cars_data", "MPG").content_resources
    assert mpg["data_type"] == "TEXT" and mpg["semantic_type"] == "numeric"  # numbers in text
    year = entry(store, "car_1", "cars_data", "Year").content_resources["statistics"]["numeric"]
    assert (year["min"], year["max"]) == (1970, 1982)
    assert ("car_makers", "Country", "countries", "CountryId") in joins(
        store, "car_1", "car_makers"
    )
    assert {"america", "europe", "asia"} <= enum_values(store, "car_1", "continents", "Continent")


def test_world_1(profiled):
    store, _ = profiled
    assert enum_values(store, "world_1", "countrylanguage", "IsOfficial") == {"T", "F"}
    assert "Asia" in enum_values(store, "world_1", "country", "Continent")
    code = entry(store, "world_1", "country", "Code").content_resources
    assert code["semantic_type"] == "identifier"
    population = entry(store, "world_1", "city", "Population").content_resources["statistics"]
    ((high, distinct),) = sql(
        spider_path("world_1"), "SELECT MAX(Population), COUNT(DISTINCT Population) FROM city"
    )
    assert population["numeric"]["max"] == high and population["distinct_count"] == distinct


def test_world_1_stays_fast_by_sampling(tmp_path):
    with KnowledgeStore(f"sqlite:///{tmp_path / 'knowledge.db'}") as store:
        started = time.perf_counter()
        report = profile_into(
            store, f"sqlite:///{spider_path('world_1')}", "world_1", sample_rows=500
        )
        elapsed = time.perf_counter() - started
    city = report.profile.table("city")
    assert city.row_count == 4079 and city.sampled and city.sample_size <= 500
    name = city.column("Name").statistics
    ((distinct,),) = sql(spider_path("world_1"), "SELECT COUNT(DISTINCT Name) FROM city")
    assert name["sampled"] and name["counts_exact"] and name["distinct_count"] == distinct
    assert elapsed < 10


def test_geoquery(profiled):
    store, _ = profiled
    assert "texas" in enum_values(store, "geoquery", "state", "state_name")
    assert len(enum_values(store, "geoquery", "state", "state_name")) == 51
    area = entry(store, "geoquery", "state", "area").content_resources
    assert area["semantic_type"] == "numeric"


# ------------------------------------------------------------------ PostgreSQL


def _generic(type_: Any) -> Any:
    name = type(type_).__name__.upper()
    if "INT" in name:
        return Integer()
    if name in ("REAL", "FLOAT", "NUMERIC", "DECIMAL", "DOUBLE"):
        return Float()
    return Text() if "TEXT" in name else type_


def copy_to_postgres(path: Path, url: str) -> None:
    """Create the SQLite database's tables (keys included) in PostgreSQL and copy the rows."""
    source = create_engine(f"sqlite:///{path}")
    target = create_engine(url)
    reflected, copied = MetaData(), MetaData()
    reflected.reflect(source)
    for table in reflected.sorted_tables:
        Table(
            table.name,
            copied,
            *(Column(c.name, _generic(c.type), primary_key=c.primary_key) for c in table.columns),
            *(
                ForeignKeyConstraint(
                    [e.parent.name for e in fk.elements],
                    [f"{e.column.table.name}.{e.column.name}" for e in fk.elements],
                )
                for fk in table.foreign_key_constraints
            ),
        )
    copied.create_all(target)
    with source.connect() as read, target.begin() as write:
        for table in reflected.sorted_tables:
            rows = [dict(row._mapping) for row in read.execute(select(table))]
            if rows:
                write.execute(copied.tables[table.name].insert(), rows)
    source.dispose()
    target.dispose()


@pytest.mark.postgres
def test_a_spider_database_in_postgres_profiles_the_same(fresh_pg_database, tmp_path):
    copy_to_postgres(spider_path("pets_1"), fresh_pg_database)
    with (
        KnowledgeStore(f"sqlite:///{tmp_path / 'pg.db'}") as pg_store,
        KnowledgeStore(f"sqlite:///{tmp_path / 'lite.db'}") as lite_store,
    ):
        pg = profile_into(pg_store, fresh_pg_database, "pets_1")
        profile_into(lite_store, f"sqlite:///{spider_path('pets_1')}", "pets_1")
        assert pg.profile.dialect == "postgresql" and pg.profile.table_count == 3
        for store in (pg_store, lite_store):
            assert enum_values(store, "pets_1", "Pets", "PetType") == {"cat", "dog"}
            assert enum_values(store, "pets_1", "Student", "Sex") == {"F", "M"}
        enum_ids = [set(s.search_ids(type="enum", limit=None)) for s in (pg_store, lite_store)]
        assert enum_ids[0] == enum_ids[1]
        assert joins(pg_store, "pets_1", "Has_Pet") == joins(lite_store, "pets_1", "Has_Pet")
        kinds = [
            {(c.tag_values("TABLE")[0], c.name): c.content_resources["semantic_type"]
             for c in s.iterate(type="column")}
            for s in (pg_store, lite_store)
        ]  # fmt: skip
        assert kinds[0] == kinds[1]
        age = entry(pg_store, "pets_1", "Student", "Age").content_resources["statistics"]
        assert age["numeric"]["mean"] == pytest.approx(
            sql(spider_path("pets_1"), "SELECT AVG(Age) FROM Student")[0][0]
        )
        assert not profile_into(pg_store, fresh_pg_database, "pets_1").changed


@pytest.mark.postgres
def test_postgres_tables_are_sampled_with_tablesample(fresh_pg_database):
    copy_to_postgres(spider_path("pets_1"), fresh_pg_database)
    options = ProfileOptions(progress=False, sample_rows=10)
    with Database(fresh_pg_database) as database:
        profile = profile_schema(database, database_name="pets_1", options=options)
    student = profile.table("Student")
    assert student.sampled and 0 < student.sample_size <= 10 and not student.warnings
    sex = student.column("Sex").statistics
    assert sex["counts_exact"] and sex["values"]["exact"]
    assert sum(item["count"] for item in sex["values"]["top"]) == 34
    assert student.column("Age").statistics["numeric"]["exact"]

"""Specification of `bench.datasets.unanswerable`, checked against the real databases.

Each question must really be unanswerable: for ``missing_table`` and ``out_of_scope`` items the
missing concept is no table or column name of its database (Spider: read from the SQLite file;
AutoFin: its table specs, the values people name in questions and the glossary); for
``impossible_period`` items the period cannot exist or lies outside every year found in the
database's date-like columns (AutoFin: computed from its seeded tables).
"""

from __future__ import annotations

import json
import re
import sqlite3
from collections import Counter
from contextlib import closing
from datetime import date
from functools import cache
from pathlib import Path

import pytest

from bench.autofin import catalog, glossary
from bench.autofin.data import build_tables
from bench.autofin.schema import all_specs
from bench.datasets import DatasetFormatError, default_data_root
from bench.datasets.unanswerable import (
    AUTOFIN,
    CATEGORIES,
    DEFAULT_PATH,
    HELDOUT_PATH,
    UnanswerableQuestion,
    load_unanswerable,
    parse_period,
)

# the set the packaged calibrator was fitted on, and the held-out one it never saw
QUESTIONS = load_unanswerable() + load_unanswerable(HELDOUT_PATH)
AUTOFIN_SEED = 7  # the seed `python -m bench.autofin` and the demo use
DATE_WORDS = {"date", "year", "time", "created", "period", "from", "birth", "founded", "air"}
DATE_TYPES = ("DATE", "TIME")  # DATE, DATETIME, TIMESTAMP


def spider_file(database: str) -> Path:
    path = default_data_root() / "spider_dev" / "database" / database / f"{database}.sqlite"
    if not path.is_file():
        pytest.fail(f"Spider database {path} not found; set ALMANAC_BENCH_DATA")
    return path


def items(*categories: str) -> list[UnanswerableQuestion]:
    return [q for q in QUESTIONS if q.category in categories]


def ids(question: UnanswerableQuestion) -> str:
    return question.id


# --- names and concepts -------------------------------------------------------------------


IRREGULAR = {"people": "person", "children": "child", "men": "man", "women": "woman"}


def forms(word: str) -> set[str]:
    """The lowercase word and the singulars it may be: ``bonuses`` -> bonus, bonuse, bonuses."""
    word = word.lower()
    found = {word, IRREGULAR.get(word, word)}
    if len(word) > 3 and word.endswith("s") and not word.endswith("ss"):
        found.add(word[:-1])
        if word.endswith("es"):
            found.add(word[:-2])
        if word.endswith("ies"):
            found.add(word[:-3] + "y")
    return found


def tokens(name: str) -> list[str]:
    """Lowercase words of a name split at underscores, spaces, dashes and camelCase."""
    spaced = re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", name)
    return [word.lower() for word in re.split(r"[\s_\-&/().,']+", spaced) if word]


def mentions(name: str, concept: str) -> bool:
    """Whether the concept appears in a name, lemmatised and lowercased: its words as a run of
    the name's words, or written together inside one of them (``songname`` in ``SongName``)."""
    words, wanted = tokens(name), tokens(concept)
    if not wanted:
        return False
    for start in range(len(words) - len(wanted) + 1):
        run = words[start : start + len(wanted)]
        if all(forms(a) & forms(b) for a, b in zip(run, wanted, strict=True)):
            return True
    joined = "".join(wanted)
    return len(joined) >= 5 and any(
        form in word for word in words for form in forms(joined) if len(form) >= 5
    )


def spider_names(database: str) -> list[str]:
    with closing(sqlite3.connect(f"{spider_file(database).as_uri()}?mode=ro", uri=True)) as db:
        tables = [row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type='table'")]
        columns = [
            row[1] for table in tables for row in db.execute(f'PRAGMA table_info("{table}")')
        ]
    return tables + columns


@cache
def autofin_names() -> tuple[str, ...]:
    """Every table and column name, and the names of values and terms people ask about."""
    names = [name for spec in all_specs() for name in (spec.name, *spec.column_names)]
    for brand in catalog.BRANDS:
        names += [brand.name, brand.focus, *brand.aliases]
    for model in catalog.MODELS:
        names += [model.name, model.segment, model.powertrain, model.nickname]
    for group in catalog.CUSTOMER_GROUPS:
        names += [group.name, group.kind, *group.aliases]
    for item in catalog.REPORT_ITEMS:
        names += [item.name, item.level1]
    names += [channel for channels in catalog.CHANNELS_BY_KIND.values() for channel in channels]
    for entry in (*glossary.TERMS, *glossary.METRICS):
        names += [entry.name, *entry.synonyms]
    names += [term.expansion for term in glossary.TERMS]
    return tuple(names)


def schema_names(database: str) -> list[str]:
    return list(autofin_names()) if database == AUTOFIN else spider_names(database)


# --- date spans ----------------------------------------------------------------------------


def years_in(value: object) -> list[int]:
    """Calendar years a stored value names: a year number, a ``YYYYMM`` period, or the
    four-digit years inside a text (``2018-03-09``, ``May 26, 1986``, ``FY2025``)."""
    if isinstance(value, bool) or value is None:
        return []
    if isinstance(value, int | float):
        number = int(value)
        if 1000 <= number <= 2999:
            return [number]
        if 100001 <= number <= 299912 and 1 <= number % 100 <= 12:
            return [number // 100]
        return []
    text = str(value).strip()
    if re.fullmatch(r"[12]\d{3}(0[1-9]|1[0-2])", text):
        return [int(text[:4])]
    return [int(year) for year in re.findall(r"(?<!\d)([12]\d{3})(?:\.0)?(?!\d)", text)]


def is_date_like(name: str, declared_type: str = "") -> bool:
    return any(forms(word) & DATE_WORDS for word in tokens(name)) or any(
        word in declared_type.upper() for word in DATE_TYPES
    )


def spider_years(database: str) -> tuple[int, list[int]]:
    """How many date-like columns the database has, and every year found in them."""
    found: list[int] = []
    count = 0
    with closing(sqlite3.connect(f"{spider_file(database).as_uri()}?mode=ro", uri=True)) as db:
        tables = [row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type='table'")]
        for table in tables:
            for _, column, declared, *_ in db.execute(f'PRAGMA table_info("{table}")'):
                if not is_date_like(column, declared):
                    continue
                count += 1
                for (value,) in db.execute(f'SELECT "{column}" FROM "{table}"'):
                    found += years_in(value)
    return count, found


@pytest.fixture(scope="module")
def autofin_years() -> tuple[int, list[int]]:
    """Date-like columns and their years in the seeded AutoFin tables. Prior-year (``_py``)
    columns hold the year before each row's period, so that year counts as covered too."""
    _, tables = build_tables(AUTOFIN_SEED, progress=False)
    found: set[int] = set()
    count = 0
    for table in tables:
        for name, values in zip(table.spec.column_names, table.columns, strict=True):
            if is_date_like(name):
                count += 1
                found.update(year for value in set(values) for year in years_in(value))
    return count, sorted(found | {min(found) - 1})


# --- the file as a whole -------------------------------------------------------------------


@pytest.mark.parametrize(("path", "per_category"), [(DEFAULT_PATH, 10), (HELDOUT_PATH, 5)])
def test_each_set_is_large_and_covers_every_category_and_both_sources(
    path: Path, per_category: int
) -> None:
    questions = load_unanswerable(path)
    by_category = Counter(q.category for q in questions)
    spider_databases = {q.database for q in questions if q.database != AUTOFIN}
    assert len(questions) >= 40
    assert set(by_category) == set(CATEGORIES)
    assert min(by_category.values()) >= per_category, by_category
    assert len(spider_databases) >= 6
    for category in CATEGORIES:
        sources = {q.database == AUTOFIN for q in questions if q.category == category}
        assert sources == {True, False}, f"{category} lacks Spider or AutoFin questions"


def test_every_spider_database_exists() -> None:
    for database in {q.database for q in QUESTIONS if q.database != AUTOFIN}:
        assert spider_file(database).is_file()


def test_questions_are_distinct_and_filtering_by_database_keeps_file_order() -> None:
    # across both sets too: a held-out question the calibrator was fitted on is no held-out
    assert len({q.question.lower() for q in QUESTIONS}) == len(QUESTIONS)
    assert len({q.id for q in QUESTIONS}) == len(QUESTIONS)
    autofin = load_unanswerable(databases=[AUTOFIN])
    assert autofin == [q for q in load_unanswerable(DEFAULT_PATH) if q.database == AUTOFIN]
    assert load_unanswerable(databases=["no_such_db"]) == []


# --- missing concepts ----------------------------------------------------------------------


@pytest.mark.parametrize("question", items("missing_table", "out_of_scope"), ids=ids)
def test_the_missing_concept_is_no_table_or_column_of_the_database(
    question: UnanswerableQuestion,
) -> None:
    hits = [name for name in schema_names(question.database) if mentions(name, question.missing)]
    assert not hits, f"{question.id}: {question.missing!r} appears in {hits}"


@pytest.mark.parametrize(
    ("database", "concept"),
    [
        ("concert_singer", "capacities"),  # stadium.Capacity, plural
        ("concert_singer", "song name"),  # singer.Song_Name
        ("car_1", "horsepower"),
        ("flight_2", "source airport"),  # flights.SourceAirport, camelCase
        ("world_1", "life expectancy"),
        ("dog_kennels", "treatments"),
        ("employee_hire_evaluation", "bonuses"),
        (AUTOFIN, "invoices"),  # sales_ledger_*.invoice_no
        (AUTOFIN, "R&D expenses"),  # a report item
        (AUTOFIN, "budget"),
    ],
)
def test_the_concept_check_catches_concepts_the_schema_has(database: str, concept: str) -> None:
    assert any(mentions(name, concept) for name in schema_names(database))


def test_the_concept_check_does_not_match_inside_unrelated_words() -> None:
    assert not mentions("Language", "age")
    assert mentions("Song_release_year", "release years")


# --- periods -------------------------------------------------------------------------------


@pytest.mark.parametrize("question", items("impossible_period"), ids=ids)
def test_the_period_cannot_exist_or_lies_outside_the_data(
    question: UnanswerableQuestion, autofin_years: tuple[int, list[int]]
) -> None:
    period = question.period
    assert period is not None
    count, years = (
        autofin_years if question.database == AUTOFIN else spider_years(question.database)
    )
    assert count, f"{question.id}: {question.database} has no date-like column"
    if period.nonsensical:
        return
    assert years, f"{question.id}: no year found in {question.database}'s date-like columns"
    assert period.last.year < min(years) or period.first.year > max(years), (
        f"{question.id}: {period.text} overlaps the data's years {min(years)}..{max(years)}"
    )


@pytest.mark.parametrize("question", items("impossible_period"), ids=ids)
def test_the_question_names_the_period(question: UnanswerableQuestion) -> None:
    first_year = re.search(r"\d{4}", question.missing.lstrip("-"))
    if first_year and not question.missing.startswith("--"):
        assert first_year[0] in question.question


def test_the_span_check_sees_the_years_each_database_holds(
    autofin_years: tuple[int, list[int]],
) -> None:
    _, car_years = spider_years("car_1")
    assert (min(car_years), max(car_years)) == (1970, 1982)
    _, poker_years = spider_years("poker_player")  # 'May 26, 1986'
    assert (min(poker_years), max(poker_years)) == (1981, 1987)
    _, years = autofin_years  # periods 202001..202512, fiscal years up to FY2026
    assert (min(years), max(years)) == (2019, 2026)


@pytest.mark.parametrize(
    ("text", "first", "last"),
    [
        ("1850", date(1850, 1, 1), date(1850, 12, 31)),
        ("1960-1969", date(1960, 1, 1), date(1969, 12, 31)),
        ("FY2025", date(2024, 4, 1), date(2025, 3, 31)),
        ("2022-Q2", date(2022, 4, 1), date(2022, 6, 30)),
        ("2024-02", date(2024, 2, 1), date(2024, 2, 29)),
        ("2024-02-29", date(2024, 2, 29), date(2024, 2, 29)),
    ],
)
def test_parse_period_gives_the_days_covered(text: str, first: date, last: date) -> None:
    period = parse_period(text)
    assert (period.first, period.last, period.nonsensical) == (first, last, False)


@pytest.mark.parametrize("text", ["Q5", "2024-Q7", "2025-13", "2023-02-29", "--02-30", "--04-31"])
def test_parse_period_flags_periods_that_cannot_exist(text: str) -> None:
    assert parse_period(text).nonsensical


@pytest.mark.parametrize(
    "text", ["Q2", "last year", "2020-2019", "2024-00", "2024-14-01", "--02-29", "1850s"]
)
def test_parse_period_rejects_what_is_no_impossible_period(text: str) -> None:
    with pytest.raises(ValueError, match=re.escape(repr(text))):
        parse_period(text)


# --- malformed files -----------------------------------------------------------------------

GOOD = {
    "id": "ua-x-01",
    "database": "concert_singer",
    "question": "What is the average ticket price?",
    "category": "missing_table",
    "missing": "ticket price",
    "why": "No prices are stored.",
}


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"category": "unknowable"}, "category"),
        ({"missing": ""}, "missing"),
        ({"why": None}, "why"),
        ({"question": 7}, "question"),
        ({"id": "Bad Id"}, "id"),
        ({"database": "spider dev"}, "database"),
        ({"notes": "x"}, "notes"),
        ({"question": " padded? "}, "question"),
        ({"category": "impossible_period", "missing": "sometime"}, "missing"),
    ],
)
def test_a_bad_field_is_an_error_naming_line_and_field(
    tmp_path: Path, change: dict, field: str
) -> None:
    entry = {**GOOD, **change}
    path = tmp_path / "bad.jsonl"
    second = {**GOOD, "id": "ua-x-02"}
    path.write_text(f"{json.dumps(second)}\n\n{json.dumps(entry)}\n")
    with pytest.raises(DatasetFormatError, match=f"bad.jsonl:3: field '{field}'") as error:
        load_unanswerable(path)
    assert error.value.line == 3


def test_a_missing_field_a_repeated_id_or_broken_json_is_an_error(tmp_path: Path) -> None:
    path = tmp_path / "bad.jsonl"
    without_why = {key: value for key, value in GOOD.items() if key != "why"}
    path.write_text(json.dumps(without_why) + "\n")
    with pytest.raises(DatasetFormatError, match=":1: field 'why'"):
        load_unanswerable(path)
    path.write_text(f"{json.dumps(GOOD)}\n{json.dumps(GOOD)}\n")
    with pytest.raises(DatasetFormatError, match=r":2: field 'id': duplicate id .* line 1"):
        load_unanswerable(path)
    path.write_text('{"id": \n')
    with pytest.raises(DatasetFormatError, match=":1: not JSON"):
        load_unanswerable(path)
    path.write_text("[1, 2]\n")
    with pytest.raises(DatasetFormatError, match=":1: expected an object"):
        load_unanswerable(path)


def test_a_good_file_loads_into_frozen_questions(tmp_path: Path) -> None:
    path = tmp_path / "good.jsonl"
    path.write_text(json.dumps(GOOD) + "\n")
    (question,) = load_unanswerable(path)
    assert question == UnanswerableQuestion(**GOOD)
    assert question.period is None
    with pytest.raises(AttributeError):
        question.missing = "price"  # type: ignore[misc]

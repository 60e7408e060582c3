"""The model-free table pass on AutoFin's own Markdown documents and its profiled database,
judged against the hand-written knowledge pack (slow: AutoFin is generated and profiled)."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from agents.learn.documents import extract_documents
from agents.rag.calendar import ReportingCalendar
from bench.autofin.data import build_tables
from bench.autofin.docs import documents
from bench.autofin.knowledge import knowledge_pack
from bench.autofin.writer import write_sqlite
from bench.extract_documents import precision
from indices.string import StringIndex
from kb.documents import read_document
from kb.profile.profiler import ProfileOptions, profile_database
from kb.store import KnowledgeStore
from kb.target.database import Database

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def autofin(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """AutoFin's database built (no questions) and profiled once, its documents written."""
    folder = tmp_path_factory.mktemp("autofin")
    _world, tables = build_tables(7, progress=False)
    write_sqlite(tables, folder / "autofin.sqlite", progress=False)
    with (
        KnowledgeStore(f"sqlite:///{folder / 'profiled.db'}") as store,
        Database(f"sqlite:///{folder / 'autofin.sqlite'}") as database,
    ):
        profile_database(
            database, store, database_name="autofin", options=ProfileOptions(progress=False)
        )
    docs = folder / "docs"
    docs.mkdir()
    for name, text in documents().items():
        (docs / name).write_text(text, encoding="utf-8")
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def _value(store: KnowledgeStore, question: str, phrase: str) -> str | None:
    matches = StringIndex.from_store(store).search(question, mode="longest")
    hits = [m for m in matches if m.text.casefold() == phrase.casefold()]
    return store.get(hits[0].ukf_ids[0]).content_resources.get("value") if hits else None


def test_autofin_documents_without_the_model(autofin: Path, tmp_path: Path) -> None:
    shutil.copyfile(autofin / "profiled.db", tmp_path / "k.db")
    paths = sorted((autofin / "docs").glob("*.md"))
    with (
        KnowledgeStore(f"sqlite:///{tmp_path / 'k.db'}") as store,
        Database(f"sqlite:///{autofin / 'autofin.sqlite'}") as database,
    ):
        run = [read_document(p) for p in paths]
        report = extract_documents(store, run, None, database="autofin", activate=True)
        assert report.llm_calls == 0 and not report.failed_parts
        assert _value(store, "revenue of the GC region in FY2025", "GC region") == "CHN"
        assert _value(store, "units of the Comet last month", "Comet") == "NV200"
        assert _value(store, "sales of plug-in hybrid models", "plug-in hybrid") == "PHEV"
        extracted = list(store.get_many(report.candidate_ids).values())
        names = {e.name.casefold() for e in extracted if e.type != "knowledge"}
        assert not {"22,000", "compact", "hev", "sedan"} & names  # a price, other columns' values
        assert _value(store, "margin of Greater China", "Greater China") in ("CHN", "Greater China")
        judged = precision(extracted, knowledge_pack())
        assert judged["extracted"] >= 130 and judged["precision"] >= 0.95
        assert judged["coverage"] >= 0.45
        # the calendar pass: the fiscal calendar and publication day the pack states
        stated = [e.content_resources["calendar"] for e in extracted if e.type == "rule"
                  and "calendar" in e.content_resources]  # fmt: skip
        pack = [e.content_resources["calendar"] for e in knowledge_pack() if e.type == "rule"
                and isinstance(e.content_resources.get("calendar"), dict)]  # fmt: skip
        assert stated and ReportingCalendar.from_facts(stated) == ReportingCalendar.from_facts(pack)
        # the structured pass: the rules list whole, the metrics whose formulas parse
        assert judged["per_kind"]["rule"]["matched"] >= 24 + 4
        assert judged["per_kind"]["metric"]["matched"] >= 8
        ptd = [e for e in extracted if e.name == "PTD"]
        assert len(ptd) == 1 and ptd[0].type == "knowledge"
        assert report.tables.rows_anchored >= 90
        version = store.version
        again = extract_documents(store, run, None, database="autofin", target=database)
        assert {d["status"] for d in again.documents} == {"unchanged"}
        assert store.version == version

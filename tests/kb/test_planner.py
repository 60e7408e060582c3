"""Planner statistics: bulk writes and stores opened without statistics get ANALYZE."""

from pathlib import Path

from sqlalchemy import select, text

from kb.filters import UKFFilter
from kb.planner import MIN_ROWS
from kb.store import _E, KnowledgeStore
from ukf import ColumnUKF, TableUKF


def _columns(tables: int, per_table: int) -> list:
    """``tables`` tables with ``per_table`` columns each, tagged [TABLE:tN]."""
    entries = []
    for t in range(tables):
        table = TableUKF.create("db", f"t{t}", tags=[f"[TABLE:t{t}]"])
        entries.append(table)
        entries += [
            ColumnUKF.create(table, f"c{c}", tags=[f"[TABLE:t{t}]"]) for c in range(per_table)
        ]
    return entries


def _stat_rows(store: KnowledgeStore) -> int:
    with store._engine.connect() as conn:
        exists = conn.execute(
            text("SELECT 1 FROM sqlite_master WHERE name = 'sqlite_stat1'")
        ).first()
        if exists is None:
            return 0
        return len(conn.execute(text("SELECT * FROM sqlite_stat1")).all())


def _facet_plan(store: KnowledgeStore) -> str:
    flt = UKFFilter.build(tags=["[TABLE:t3]"], type=["column"])
    query = store._where(flt, None)
    statement = select(_E.c.id).where(*query).order_by(_E.c.priority.desc(), _E.c.id)
    sql = str(statement.compile(store._engine, compile_kwargs={"literal_binds": True}))
    with store._engine.connect() as conn:
        return " | ".join(row[3] for row in conn.exec_driver_sql("EXPLAIN QUERY PLAN " + sql))


def test_small_writes_leave_the_statistics_alone(tmp_path: Path):
    with KnowledgeStore(f"sqlite:///{tmp_path / 'k.db'}") as store:
        store.upsert_many(_columns(2, 5))
        assert _stat_rows(store) == 0


def test_a_bulk_write_analyzes_so_facets_are_planned_by_tag(tmp_path: Path):
    with KnowledgeStore(f"sqlite:///{tmp_path / 'k.db'}") as store:
        store.upsert_many(_columns(60, MIN_ROWS // 50))
        assert _stat_rows(store) > 0
        plan = _facet_plan(store)
        # by the (selective) tag, not by scanning every column entry through the type index
        assert "ix_ukf_entries_type" not in plan, plan
        assert "ix_ukf_tags_slot_value_type" in plan, plan
        assert len(store.search_ids(tags=["[TABLE:t3]"], type=["column"])) == MIN_ROWS // 50


def test_a_store_without_statistics_is_analyzed_when_opened(tmp_path: Path):
    url = f"sqlite:///{tmp_path / 'k.db'}"
    with KnowledgeStore(url) as store:
        store.upsert_many(_columns(2, 5))
        assert _stat_rows(store) == 0
    with KnowledgeStore(url) as store:
        assert _stat_rows(store) > 0


def test_analyze_runs_on_postgresql_too(fresh_pg_database: str):
    with KnowledgeStore(fresh_pg_database) as store:
        store.upsert_many(_columns(3, 4))
        assert store.planner.analyze() >= 0.0
        assert len(store.search_ids(tags=["[TABLE:t1]"], type=["column"])) == 4

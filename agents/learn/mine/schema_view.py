"""The profiled schema and values a mined fact is checked against.

``SchemaView`` loads the Table, Column and Enum entries of one database from the store (names
compared case-insensitively, as SQL does) and answers what mining asks: does this table or
column exist (and which entry is it), do these two columns join by a declared foreign key,
and does a value occur in a column. A column whose values were profiled as enums (the
profiler lists them all, or none) is checked against them; any other column, by a read-only
query on the target when a :class:`kb.target.database.Database` is given; else the value is
*unchecked* (kept, and counted as such in the mining report). ``value_range`` gives the
smallest and largest value the profile saw (what a period or a number is checked against)
and ``calendar`` the reporting calendar the database's rules state (fiscal year, publication
day), if any. ``overlap`` says whether two columns share values (a join between columns
of disjoint value domains joins nothing: ``river.traverse`` holds states, ``state.capital``
cities).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Literal

from sqlglot import expressions as exp

from agents.rag.calendar import ReportingCalendar
from agents.rag.question_facts import calendar_among
from kb.store import KnowledgeStore
from kb.target.database import Database
from kb.target.sql_guard import sqlglot_dialect
from ukf import BaseUKF

ValueCheck = Literal["found", "missing", "unchecked"]
Overlap = Literal["shared", "disjoint", "unchecked"]
MIN_OVERLAP = 0.05  # share of the smaller column's distinct values the other one must hold


class SchemaView:
    """Tables, columns, foreign keys and enum values of ``database`` in ``store``."""

    def __init__(
        self, store: KnowledgeStore, database: str, *, target: Database | None = None
    ) -> None:
        self.database, self.target = database, target
        self.tables: dict[str, BaseUKF] = {}
        self.columns: dict[tuple[str, str], BaseUKF] = {}
        self.enums: dict[tuple[str, str], dict[str, BaseUKF]] = {}
        self.foreign_keys: set[frozenset[tuple[str, str]]] = set()
        self._checked: dict[tuple[str, str, str], bool] = {}
        where = {"DATABASE": database}
        for entry in store.iterate(type="table", tags=where):
            self.tables[_key(entry.content_resources.get("table") or entry.name)] = entry
            self._add_foreign_keys(entry)
        for entry in store.iterate(type="column", tags=where):
            r = entry.content_resources
            self.columns[(_key(r["table"]), _key(r["column"]))] = entry
        for entry in store.iterate(type="enum", tags=where):
            r = entry.content_resources
            values = self.enums.setdefault((_key(r["table"]), _key(r["column"])), {})
            values[str(r.get("value")).casefold()] = entry
        self.calendar = _calendar(store, database)

    def _add_foreign_keys(self, table: BaseUKF) -> None:
        name = _key(table.content_resources.get("table") or table.name)
        for fk in table.content_resources.get("foreign_keys") or []:
            for column, ref in zip(fk["columns"], fk["ref_columns"], strict=False):
                pair = frozenset({(name, _key(column)), (_key(fk["ref_table"]), _key(ref))})
                self.foreign_keys.add(pair)

    @property
    def profiled(self) -> bool:
        return bool(self.tables)

    def table(self, name: str) -> BaseUKF | None:
        return self.tables.get(_key(name))

    def column(self, table: str | None, column: str, among: Iterable[str] = ()) -> BaseUKF | None:
        """The column entry; a column without its table is looked up in the tables ``among``
        (found in exactly one of them)."""
        if table is not None:
            return self.columns.get((_key(table), _key(column)))
        owners = [self.columns.get((t, _key(column))) for t in map(_key, among)]
        found = [o for o in owners if o is not None]
        return found[0] if len(found) == 1 else None

    def declared_join(self, left: tuple[str, str], right: tuple[str, str]) -> bool:
        """Whether a declared foreign key joins the two ``(table, column)`` pairs."""
        pair = frozenset({(_key(left[0]), _key(left[1])), (_key(right[0]), _key(right[1]))})
        return pair in self.foreign_keys

    def enum(self, column: BaseUKF, value: object) -> BaseUKF | None:
        r = column.content_resources
        return self.enums.get((_key(r["table"]), _key(r["column"])), {}).get(str(value).casefold())

    def value_check(self, column: BaseUKF, value: str | float | int) -> ValueCheck:
        """Whether ``value`` occurs in ``column`` (enums first, then the target)."""
        r = column.content_resources
        key = (_key(r["table"]), _key(r["column"]))
        if key in self.enums:
            return "found" if self.enum(column, value) is not None else "missing"
        if self.target is None:
            return "unchecked"
        cache_key = (*key, repr(value))
        if cache_key not in self._checked:
            self._checked[cache_key] = self._occurs(r["table"], r["column"], value)
        return "found" if self._checked[cache_key] else "missing"

    def _occurs(self, table: str, column: str, value: str | float | int) -> bool:
        assert self.target is not None
        query = (
            exp.select("1")
            .from_(exp.to_table(table, quoted=True))
            .where(exp.column(column, quoted=True).eq(exp.convert(value)))
            .limit(1)
        )
        results = self.target.execute(
            query.sql(dialect=sqlglot_dialect(self.target.dialect)), max_rows=1
        )
        return results.error is None and results.row_count > 0

    def overlap(self, left: BaseUKF, right: BaseUKF) -> Overlap:
        """Whether the two columns share values: ``disjoint`` when fewer than
        :data:`MIN_OVERLAP` of the smaller column's distinct values occur in the other (the
        enum values of both, else a read-only query on the target; ``unchecked`` without)."""
        keys = [
            (_key(c.content_resources["table"]), _key(c.content_resources["column"]))
            for c in (left, right)
        ]
        if keys[0] in self.enums and keys[1] in self.enums:
            a, b = set(self.enums[keys[0]]), set(self.enums[keys[1]])
            shared, smaller = len(a & b), min(len(a), len(b))
        elif self.target is None:
            return "unchecked"
        else:
            counts = self._overlap_counts(left, right)
            if counts is None:
                return "unchecked"
            shared, smaller = counts
        if smaller == 0:
            return "unchecked"
        return "shared" if shared >= max(1, MIN_OVERLAP * smaller) else "disjoint"

    def _overlap_counts(self, left: BaseUKF, right: BaseUKF) -> tuple[int, int] | None:
        """(distinct values of ``left`` found in ``right``, the smaller distinct count)."""
        assert self.target is not None
        dialect = sqlglot_dialect(self.target.dialect)  # sqlglot's name: postgres
        (lt, lc), (rt, rc) = (
            (
                exp.to_table(c.content_resources["table"], quoted=True),
                exp.column(c.content_resources["column"], quoted=True),
            )
            for c in (left, right)
        )
        inner = exp.select(rc).from_(rt)
        shared = exp.select(exp.func("COUNT", exp.Distinct(expressions=[lc]))).from_(lt)
        queries = [
            shared.where(lc.isin(query=inner)),
            exp.select(exp.func("COUNT", exp.Distinct(expressions=[lc]))).from_(lt),
            exp.select(exp.func("COUNT", exp.Distinct(expressions=[rc]))).from_(rt),
        ]
        found: list[int] = []
        for query in queries:
            results = self.target.execute(query.sql(dialect=dialect), max_rows=1)
            if results.error is not None or not results.rows:
                return None
            found.append(int(results.rows[0][0] or 0))
        return found[0], min(found[1], found[2])

    def value_range(self, column: BaseUKF) -> tuple[object, object] | None:
        """The smallest and largest value of ``column`` the profile saw (enum values, temporal
        ISO bounds, numeric or identifier bounds); None when it has none."""
        r = column.content_resources
        enums = self.enums.get((_key(r["table"]), _key(r["column"])))
        if enums:
            values = sorted(str(e.content_resources.get("value")) for e in enums.values())
            return values[0], values[-1]
        stats = r.get("statistics") or {}
        temporal = stats.get("temporal") or {}
        if temporal.get("min_iso") and temporal.get("max_iso"):
            return temporal["min_iso"], temporal["max_iso"]
        for kind in ("numeric", "identifier"):
            bounds = stats.get(kind) or {}
            low, high = bounds.get("min"), bounds.get("max")
            if isinstance(low, int | float) and isinstance(high, int | float):
                return _whole(low), _whole(high)
        return None

    def is_numeric(self, column: BaseUKF) -> bool:
        """Whether the profile read ``column`` as numbers."""
        r = column.content_resources
        if r.get("semantic_type") == "numeric":
            return True
        declared = str(r.get("data_type") or "").upper()
        return any(word in declared for word in ("INT", "REAL", "FLOA", "DOUB", "NUM", "DEC"))


def _whole(value: int | float) -> int | float:
    return int(value) if isinstance(value, float) and value.is_integer() else value


def _calendar(store: KnowledgeStore, database: str) -> ReportingCalendar | None:
    """The calendar facts of the database's active rules, merged (None without any)."""
    rules = store.iterate(type="rule", tags={"DATABASE": database})
    return calendar_among(rules, f"database {database!r}")


def _key(name: str) -> str:
    return name.casefold()

"""The segments that drove a change, found on the database from a query the chain wrote.

A diagnostic question ("why did Aurora's gross margin fall in FY2025 Q2?") needs the measure
in the period it names and in the period before, broken down where the change concentrates.
A small model seldom writes that query, but it often writes the measure for the period:
``SELECT region_name, SUM(...) / SUM(...) AS gross_margin FROM income_aurora WHERE
fiscal_year = 'FY2025' AND fiscal_quarter = 'Q2' AND caliber = 'A' GROUP BY region_name``.
:func:`driver_evidence` makes the comparison from such a query (one table, aggregates, its
period named by equalities on time columns: :func:`driver_base`):

1. a period that holds no rows is narrowed to the values the question names; the period
   before is read from the data (the latest combination of the time columns under the
   named one, when their values sort as time does: :data:`SORTABLE`), or the same period a
   year earlier when the question compares with a year earlier (:func:`year_earlier`);
2. the table's text columns holding 2 to :data:`MAX_SEGMENTS` values in the two periods are
   the candidate breakdowns (a ``*_code`` twin of a ``*_name`` column left out); each is
   scored by how unevenly the change falls on its segments (:func:`_concentration`);
3. the query's own grouping columns, those the question names, then the best-scored
   candidates (two breakdowns in all) give the evidence: the measure per period and
   segment, which the period-change tool (:func:`agents.analysis.tools.period_change`)
   decomposes by each breakdown and by both.

Every query runs read-only through :class:`kb.target.database.Database` within the seconds
given. A scoring query that fails leaves its breakdown out; no period before, or a final
query that fails or holds one period, leaves the next usable query to try, then no evidence.
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from sqlglot import exp

from agents.analysis.driver_base import DriverBase, driver_base, is_time, year_earlier
from agents.analysis.facts import label
from agents.analysis.models import Evidence
from agents.analysis.tools import frame, period_change
from kb.target.database import Database
from kb.target.sql_guard import sqlglot_dialect

log = logging.getLogger(__name__)
MAX_SEGMENTS = 25  # a breakdown with more values than this is no segment list
MAX_CANDIDATES = 8  # breakdowns scored at most (one query each)
MAX_BREAKDOWNS = 2
PERIOD = "period"
ROWS = "rows_counted"  # a scoring query's rows per segment and period: the segment's weight
PURPOSE = "the segments that drove the change"  # the drivers' evidence says so
NOT_TEXT = re.compile(r"int|real|num|float|double|dec|bool|date|time|money|serial", re.I)
TWIN = re.compile(r"^(?P<stem>.+?)_(?:code|id|key|no|num|name|desc|description)$", re.I)
YEAR_EARLIER = re.compile(
    r"\b(?:a|one)\s+year\s+(?:earlier|before|ago)\b|\byear[- ](?:on|over)[- ]year\b|"
    r"\bprior[- ]year\b|\bsame\s+(?:month|quarter|period)\s+(?:of\s+|in\s+)?(?:the\s+)?"
    r"(?:previous|prior|last)\s+year\b|\b(?:compared|relative)\s+(?:with|to)\s+(?:the\s+)?"
    r"(?:previous|prior|last)\s+year\b",
    re.I,
)
CHANGE = re.compile(
    r"\b(?:why|drove|driven|drivers?|explains?|explained|develop(?:ed|s)?|chang(?:e|ed|es)|"
    r"f(?:all|ell|alls|allen|alling)|drop(?:s|ped|ping)?|declin(?:e|ed|es|ing)|"
    r"ris(?:e|es|en|ing)|rose|gr(?:ow|ew|ows|own|owing|owth)|increas(?:e|ed|es|ing)|"
    r"decreas(?:e|ed|es|ing)|compared?|versus|vs)\b",
    re.I,
)
SORTABLE = re.compile(  # period values whose text order is their time order
    r"(?:FY|CY)?\d{2,4}(?:[-/ ]?(?:\d{2}|[QHW]\d{1,2})){0,2}|[QH]\d|W\d{2}", re.I
)


def wants_drivers(question_type: str, question: str) -> bool:
    """Whether an analysis should look for the drivers of a change: every diagnostic
    question, and a descriptive one that speaks of a change ("how did X develop ...")."""
    return question_type == "diagnostic" or (
        question_type == "descriptive" and CHANGE.search(question) is not None
    )


@dataclass
class _Search:
    """One driver search: the base query, the database, and the time left."""

    base: DriverBase
    database: Database
    deadline: float
    max_rows: int

    @property
    def dialect(self) -> str:
        return sqlglot_dialect(self.database.dialect)

    def run(self, query: exp.Select) -> list[list[Any]] | None:
        """The rows of ``query``, or None when it failed or no time is left."""
        left = self.deadline - time.monotonic()
        if left < 0.5:
            return None
        sql = query.sql(dialect=self.dialect)
        results = self.database.execute(sql, max_rows=self.max_rows, timeout_s=left)
        if not results.ok:
            log.info("drivers: query failed: %s", results.error)
            return None
        return [list(row) for row in results.rows]

    def select(self, *projections: exp.Expression, extra: exp.Expression) -> exp.Select:
        """``projections`` from the base's table, under its other conditions and ``extra``."""
        condition = exp.and_(*(c.copy() for c in self.base.kept), extra)
        return exp.select(*projections).from_(self.base.table.copy()).where(condition)

    def previous(self, current: list[Any], by_year: bool) -> list[Any] | None:
        """The period to compare with: a year earlier when asked and present, else the
        latest combination of the time columns under ``current``."""
        columns = [c for c, _ in self.base.period]
        shifted = year_earlier(current) if by_year else None
        if shifted is not None and self.holds(_is(columns, shifted)):
            return shifted
        if not all(isinstance(v, int | float) or SORTABLE.fullmatch(str(v)) for v in current):
            return None  # "March" < "June": a month name's text order is not its time order
        earlier = exp.or_(
            *(
                exp.and_(
                    *(
                        exp.EQ(this=c.copy(), expression=exp.convert(v))
                        for c, v in zip(columns[:i], current[:i], strict=True)
                    ),
                    exp.LT(this=columns[i].copy(), expression=exp.convert(current[i])),
                )
                for i in range(len(columns))
            )
        )
        query = self.select(*(c.copy() for c in columns), extra=earlier)
        query = query.group_by(*(c.copy() for c in columns))
        query = query.order_by(*(exp.Ordered(this=c.copy(), desc=True) for c in columns))
        rows = self.run(query.limit(1))
        return rows[0] if rows else None

    def holds(self, condition: exp.Expression) -> bool:
        """Whether the base's table has rows under its other conditions and ``condition``."""
        rows = self.run(self.select(exp.Count(this=exp.Star()), extra=condition))
        return bool(rows and rows[0][0])

    def named_period(self, question: str) -> None:
        """The base's period narrowed to the values ``question`` names when the whole
        period holds no rows: the model wrote ``period = '202501' AND fiscal_year =
        'FY2025' AND fiscal_quarter = 'Q2'`` for "FY2025 Q2", a month outside the quarter."""
        period = self.base.period
        named = _named_values(self.base, question)
        if not named or len(named) == len(period):
            return
        if not self.holds(_is(*zip(*period, strict=True))) and self.holds(
            _is(*zip(*named, strict=True))
        ):
            self.base = replace(self.base, period=named)

    def candidates(self, both: exp.Expression) -> list[exp.Column]:
        """The text columns with 2 to :data:`MAX_SEGMENTS` values in the two periods, not
        filtered on, not a time, not the query's own breakdowns (nor their twins), a code
        twin dropped."""
        filtered = {c.name.casefold() for k in self.base.kept for c in k.find_all(exp.Column)}
        own = {_stem(b.name) for b in self.base.breakdowns}
        info = self.database.table_info(self.base.table.name)
        names = [
            c.name
            for c in info.columns
            if not NOT_TEXT.search(c.type or "")
            and not is_time(c.name)
            and c.name.casefold() not in filtered
            and _stem(c.name) not in own  # region_code beside a grouped region_name
        ][:40]
        if not names:
            return []
        counts = [
            exp.alias_(exp.Count(this=exp.Distinct(expressions=[_column(n)])), f"n{i}")
            for i, n in enumerate(names)
        ]
        rows = self.run(self.select(*counts, extra=both))
        if not rows:
            return []
        sized = [(n, int(k or 0)) for n, k in zip(names, rows[0], strict=True)]
        usable = [(n, k) for n, k in sized if 2 <= k <= MAX_SEGMENTS]
        return [_column(n) for n in _without_twins(usable)[:MAX_CANDIDATES]]

    def by(
        self,
        breakdowns: list[exp.Column],
        label: exp.Expression,
        both: exp.Expression,
        *,
        counted: bool = False,
    ) -> exp.Select:
        """The query of the measure per period and ``breakdowns`` (grouped by position),
        with each group's row count before the measures when ``counted``."""
        counts = [exp.alias_(exp.Count(this=exp.Star()), ROWS)] if counted else []
        projections = [
            exp.alias_(label.copy(), PERIOD),
            *(b.copy() for b in breakdowns),
            *counts,
            *(m.copy() for m in self.base.measures),
        ]
        positions = [exp.Literal.number(i) for i in range(1, len(breakdowns) + 2)]
        query = self.select(*projections, extra=both).group_by(*positions)
        return query.order_by(*(p.copy() for p in positions))


def driver_evidence(
    evidence: Sequence[Evidence],
    question: str,
    database: Database,
    *,
    evidence_id: str,
    max_rows: int,
    seconds: float,
) -> Evidence | None:
    """The measure per period and per breakdown where the change concentrates, made from the
    first usable query among ``evidence`` (see the module) that names most of the period
    values ``question`` names; None when no query is usable or the data holds no two periods
    for it. A breakdown that ``question`` names ("which region and which model ...") is
    chosen before one that scores higher (the plan's breakdowns are not: the model proposed
    "caliber", an accounting view, and it won over the model that drove the change)."""
    deadline = time.monotonic() + seconds
    for item, base in _bases(evidence, question, sqlglot_dialect(database.dialect)):
        search = _Search(base, database, deadline, max_rows)
        search.named_period(question)
        found = _search(search, bool(YEAR_EARLIER.search(question)), question)
        if found is not None:
            query, rows, columns, note = found
            return Evidence(
                id=evidence_id,
                question=f"{note}, from {item.id}'s query",
                purpose=PURPOSE,
                sql=query,
                columns=columns,
                rows=rows,
                row_count=len(rows),
                seconds=round(seconds - (deadline - time.monotonic()), 3),
                repair=f"made on the database from {item.id}'s query: {note}",
            )
    return None


def _bases(
    evidence: Sequence[Evidence], question: str, dialect: str
) -> list[tuple[Evidence, DriverBase]]:
    """The usable queries among ``evidence`` with their bases, those whose period values
    ``question`` names most first (in their order otherwise): for "why did the margin fall in
    FY2025 Q2" the chain's quarterly query, not its year-to-date query of one month that ran
    before it."""
    usable = []
    for item in evidence:
        if item.ok and item.sql and item.rows:
            base = driver_base(item.sql, dialect)
            if base is not None:
                usable.append((item, base))
    return sorted(usable, key=lambda pair: -len(_named_values(pair[1], question)))


def _named_values(base: DriverBase, question: str) -> list[tuple[exp.Column, Any]]:
    """The (time column, value) pairs of ``base``'s period whose value ``question`` names."""
    return [(c, v) for c, v in base.period if re.search(rf"\b{re.escape(str(v))}\b", question)]


def _search(
    search: _Search, by_year: bool, question: str
) -> tuple[str, list[list[Any]], list[str], str] | None:
    base = search.base
    columns = [c for c, _ in base.period]
    current = [v for _, v in base.period]
    previous = search.previous(current, by_year)
    if previous is None:
        return None
    before, after = _labels(previous, current)
    was = _is(columns, previous)
    label = exp.Case(ifs=[exp.If(this=was, true=exp.convert(before))], default=exp.convert(after))
    both = exp.or_(was.copy(), _is(columns, current))
    own = base.breakdowns[:MAX_BREAKDOWNS]
    scored: list[tuple[float, exp.Column]] = []
    for column in search.candidates(both) if len(own) < MAX_BREAKDOWNS else []:
        rows = search.run(search.by([column], label, both, counted=True))
        if rows is None and search.deadline - time.monotonic() < 0.5:
            break  # out of time: score what was scored (a failing query skips one)
        names = [PERIOD, column.name, ROWS, *_names(base.measures)]
        score = _concentration(names, rows or [], column.name)
        if score is not None:
            scored.append((score, column))
    ranked = sorted(scored, key=lambda s: (not _named(s[1].name, question), -s[0]))
    chosen = [*own, *(c for _, c in ranked[: MAX_BREAKDOWNS - len(own)])]
    query = search.by(chosen, label, both)
    rows = search.run(query)
    if rows is not None and len(rows) >= search.max_rows and len(chosen) > 1:
        chosen = chosen[:1]  # the two breakdowns' segments pass the rows kept: one alone
        query = search.by(chosen, label, both)
        rows = search.run(query)
    if not rows or len({row[0] for row in rows}) < 2:
        return None
    names = [PERIOD, *(c.name for c in chosen), *_names(base.measures)]
    measures = ", ".join(_names(base.measures))
    if chosen:
        tried = f"{len(scored)} breakdowns scored" if scored else "the query's own breakdowns"
        by = " and ".join(c.name for c in chosen)
        note = f"{measures} by {by}, {before} against {after} ({tried})"
    else:  # no change anywhere, or no breakdown: the two periods alone
        note = f"{measures}, {before} against {after} (no breakdown holds a change)"
    log.info("drivers: %s", note)
    return query.sql(dialect=search.dialect), rows, names, note


def _concentration(columns: list[str], rows: list[list[Any]], breakdown: str) -> float | None:
    """How unevenly the change between the two periods falls on the segments of
    ``breakdown`` (0 = in proportion to the segments' size; near 1 = on one small segment);
    None when not computable. ``rows``: period, segment, row count (:data:`ROWS`), the measures (the
    last is scored). A segment is uneven by how far its share of the change passes its
    share of the whole: for a sum, its part of the change against its part of the level
    before (the largest segment moving most is no driver); for an average or a rate, its
    move weighed by its rows against its part of the rows (a model that is a tenth of the
    rows and holds nine tenths of the moves says more than a segment of half the rows)."""
    if not rows:
        return None
    df = frame(columns, rows)
    measure = columns[-1]
    try:
        change = period_change(df, PERIOD, measure, breakdown)
    except (ValueError, KeyError, TypeError):
        return None
    parts = change.contributions
    if len(parts) < 2:
        return None
    level = sum(abs(c.previous) for c in parts)
    if parts[0].share is not None and level:
        return max(abs((c.share or 0.0) - abs(c.previous) / level) for c in parts)
    weights = df.groupby(df[breakdown].map(label))[ROWS].sum()
    sizes = [float(weights.get(c.segment, 0.0)) for c in parts]
    moves = [abs(c.change) * size for c, size in zip(parts, sizes, strict=True)]
    if not sum(moves) or not sum(sizes):
        return None
    return max(m / sum(moves) - size / sum(sizes) for m, size in zip(moves, sizes, strict=True))


def _labels(previous: Sequence[Any], current: Sequence[Any]) -> tuple[str, str]:
    """The two periods' labels, the earlier one sorting first (the change tool orders them):
    numbers under 100 padded (``2025 09`` before ``2025 10``)."""
    before, after = (" ".join(_padded(v) for v in values) for values in (previous, current))
    return (before if before < after else f"(before) {before}"), after


def _padded(value: Any) -> str:
    return f"{value:02d}" if isinstance(value, int) and 0 <= value < 100 else str(value)


def _column(name: str) -> exp.Column:
    """A column named as the database reflects it, quoted (``order``, ``Region``)."""
    return exp.column(name, quoted=True)


def _is(columns: Sequence[exp.Column], values: Sequence[Any]) -> exp.Expression:
    pairs = zip(columns, values, strict=True)
    return exp.and_(*(exp.EQ(this=c.copy(), expression=exp.convert(v)) for c, v in pairs))


def _names(measures: Sequence[exp.Expression]) -> list[str]:
    return [m.alias_or_name for m in measures]


def _without_twins(sized: list[tuple[str, int]]) -> list[str]:
    """Column names, a column dropped when another with the same stem (``region`` of
    ``region_code`` and ``region_name``) holds as many values; the ``*_name`` one kept."""
    kept: dict[tuple[str, int], str] = {}
    for name, count in sized:
        key = (_stem(name), count)
        if key not in kept or name.casefold().endswith("_name"):
            kept[key] = name
    return list(kept.values())


def _named(column: str, text: str) -> bool:
    """Whether ``text`` names every word of ``column``'s stem (``region`` of
    ``region_name``, ``customer group`` of ``customer_group_code``)."""
    words = [w for w in re.split(r"[_\W]+", _stem(column)) if w]
    return bool(words) and all(
        re.search(rf"\b{re.escape(w)}(?:s|es)?\b", text, re.I) for w in words
    )


def _stem(name: str) -> str:
    match = TWIN.match(name)
    return (match.group("stem") if match else name).casefold()

"""Default filters: the filter a rule says to apply when the question does not say otherwise,
added to a query that forgot it, without a model.

Some business rules are filters the question never states: "every fact row exists once per
caliber: filter the user's profile caliber unless the question names another", "users in
region EUR see amounts in EUR on narrow tables", or a mined habit ("unless the question
names another caliber, filter caliber = 'B'", :mod:`agents.learn.mine.preferences`). The
prompt shows them, and a small model still leaves them out: 21 of the 89 wrong answers of
the 1.5B on 150 AutoFin test questions added every caliber up (twice the amount), and so did
the monthly history a forecast was fitted to.

A rule carries its filter as data, in ``content_resources``: ``{"default_filter": {"column":
"caliber", "value": "B"}}`` (or a mined rule's ``{"preference": {"column": ..., "value":
...}}``). :func:`filters_of` reads them from the rules the retriever let through for this
question (its triggers checked against the user's profile and the query time), the first
rule per column winning, a triggered one first (the profile's caliber before the pack's
"else A"). A metric that is one filter of the rows (revenue: ``report_item_level1 =
'Revenue'``) carries it the same way and applies when the question names the metric: 34 of
those 89 wrong answers had summed every report item. :func:`with_default_filters` adds
``<alias>.<column> = <value>`` to each SELECT reading a table that has the column (or one
of the filter's ``tables``: the currency rule is for the narrow fact tables, not the
exchange rates), but only when the query never names the column (nor a column the
filter's ``unless`` lists: ``report_item_code`` says which rows already): a query that
filters, groups by or selects it by name (``caliber = 'A'`` because the question said
"management view", or a comparison of both calibers) is the model's reading of the
question and stays as written. The refine agent runs what the model wrote when the
rewritten query is rejected (:meth:`agents.sql.refine.Refiner.execute`).

A filter may exclude instead (``"op": "<>"``), and may apply only to a query that breaks its
rows down (``"breakdown": [columns]``): AutoFin's "headquarters is left out of regional
rankings and shares" is ``{"column": "region_code", "op": "<>", "value": "HQ", "breakdown":
["region_code", "region_name"]}``, added to each SELECT that groups by one of those columns
or reads one in a CASE (a ranking of regions, a region's share of the total), and only when
no WHERE or HAVING of the query names one of them (the query chose its regions itself); a
brand's total, which breaks nothing down, keeps headquarters. Four of the 14 wrong AutoFin
answers the 1.5B was surest of (confidence 0.71-0.77) were shares or rankings of regions
that counted headquarters in.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass

import sqlglot
from sqlglot import exp
from sqlglot.errors import ErrorLevel, SqlglotError
from sqlglot.optimizer.scope import traverse_scope

from agents.rag.agent import RagContext
from agents.sql.extract import statement_only
from kb.target.database import Database
from kb.target.sql_guard import sqlglot_dialect
from ukf import BaseUKF

log = logging.getLogger(__name__)
RESOURCE_KEYS = ("default_filter", "preference")  # where a rule keeps its filter
OPERATORS = ("=", "<>")


@dataclass(frozen=True)
class DefaultFilter:
    """``column = value`` on every table that has ``column``, from the rule named ``rule``."""

    column: str
    value: str | int | float
    rule: str
    unless: tuple[str, ...] = ()  # columns whose mention also leaves the query as written
    tables: tuple[str, ...] = ()  # only these tables (none: every table with the column)
    op: str = "="  # or "<>": the rows to leave out
    breakdown: tuple[str, ...] = ()  # only where the query breaks its rows down by one of these

    @property
    def condition(self) -> str:
        shown = f"'{self.value}'" if isinstance(self.value, str) else str(self.value)
        return f"{self.column} {self.op} {shown}"


@dataclass(frozen=True)
class Filtered:
    """A rewritten query and one note per change (a default filter added; also the day
    differences of :mod:`agents.sql.date_arithmetic`)."""

    sql: str
    notes: list[str]


def chained(first: Filtered | None, second: Filtered | None) -> Filtered | None:
    """``second``'s query (a rewrite of ``first``'s) with both rewrites' notes."""
    if second is None or first is None:
        return second or first
    return Filtered(second.sql, [*first.notes, *second.notes])


def filter_of(entry: BaseUKF) -> DefaultFilter | None:
    """The default filter ``entry`` carries, or None: none, or a malformed one (a column
    that is no plain name, a value that is no string or number, an ``unless`` or ``tables``
    that is no list of names). A mined preference is a rule's."""
    keys = RESOURCE_KEYS if entry.type == "rule" else RESOURCE_KEYS[:1]
    for key in keys:
        spec = entry.content_resources.get(key)
        if spec is None:
            continue
        if not isinstance(spec, Mapping):
            log.warning("%r: default filter %r is no mapping", entry.name, spec)
            return None
        column, value, op = spec.get("column"), spec.get("value"), spec.get("op", "=")
        unless, tables = spec.get("unless", []), spec.get("tables", [])
        breakdown = spec.get("breakdown", [])
        if not isinstance(column, str) or not column.isidentifier():
            log.warning("%r: default filter column %r is no column name", entry.name, column)
            return None
        if isinstance(value, bool) or not isinstance(value, str | int | float):
            log.warning("%r: default filter value %r is no literal", entry.name, value)
            return None
        if op not in OPERATORS:
            log.warning("%r: default filter op %r is none of %s", entry.name, op, OPERATORS)
            return None
        if not _names(unless) or not _names(tables) or not _names(breakdown):
            log.warning("%r: default filter unless/tables/breakdown %r, %r, %r: no lists of "
                        "names", entry.name, unless, tables, breakdown)  # fmt: skip
            return None
        return DefaultFilter(
            column, value, entry.name, tuple(unless), tuple(tables), op, tuple(breakdown)
        )
    return None


def _names(items: object) -> bool:
    return isinstance(items, list) and all(isinstance(i, str) and i.isidentifier() for i in items)


def filters_of(
    entries: Iterable[BaseUKF], named: Collection[str] = frozenset()
) -> list[DefaultFilter]:
    """The default filters of ``entries`` (what the retriever let through for a question),
    one per column (case-insensitive).

    A rule's applies whenever it is there (its triggers were checked), one with triggers
    (switched on by this user's profile or workspace) before one without, then in the order
    given. Any other entry's (a metric's rows: ``report_item_level1 = 'Revenue'``) applies
    only when the question names it (its id in ``named``), and not when two named entries
    filter the same column differently ("revenue minus cost of sales" needs both rows)."""
    entries = list(entries)
    found: dict[str, DefaultFilter] = {}
    for entry in sorted((e for e in entries if e.type == "rule"), key=lambda e: not e.triggers):
        default = filter_of(entry)
        if default is not None:
            found.setdefault(default.column.casefold(), default)
    by_column: dict[str, list[DefaultFilter]] = {}
    for entry in entries:
        default = filter_of(entry) if entry.type != "rule" and entry.id in named else None
        if default is not None:
            by_column.setdefault(default.column.casefold(), []).append(default)
    for column, defaults in by_column.items():
        if column not in found and len({d.value for d in defaults}) == 1:
            found[column] = defaults[0]
    return list(found.values())


def with_default_filters(
    sql: str,
    filters: Iterable[DefaultFilter],
    table_columns: Mapping[str, Collection[str]],
    dialect: str,
) -> Filtered | None:
    """``sql`` with each filter ANDed into every SELECT reading a table that has its column
    (``table_columns``: the tables' column names, by lower-cased table name), where the
    query mentions that column nowhere (a filter with a ``breakdown``: into every SELECT that
    breaks its rows down by one of those columns, where no WHERE or HAVING of the query names
    the column or one of them); None when nothing was added, or ``sql`` does not parse or
    cannot be written back in ``dialect`` as it was read.

    A table on the side of an outer join that may be missing gets the filter in that
    join's ``ON`` (in the WHERE it would drop the rows the join keeps without it); a scope
    with a RIGHT or FULL join is left alone. The column is written as the database spells
    it and qualified by the table's alias as the query spells it (quoted where it was).
    Comment lines before the statement stay as they were."""
    wanted = list(filters)
    statement = statement_only(sql)
    if not wanted or not statement:
        return None
    try:
        tree = sqlglot.parse_one(statement, read=dialect)
        scopes = traverse_scope(tree)
    except (SqlglotError, RecursionError) as exc:
        log.debug("default filters: cannot read %r: %s", sql, exc)
        return None
    spelled = {
        table.casefold(): {c.casefold(): c for c in names} for table, names in table_columns.items()
    }
    mentioned = {c.name.casefold() for c in tree.find_all(exp.Column)}
    chosen = {
        c.name.casefold() for node in tree.find_all(exp.Where, exp.Having) for c in _columns(node)
    }
    for join in tree.find_all(exp.Join):  # a join that picks rows by a value chose them too
        chosen |= {c.name.casefold() for c in _literal_compared(join.args.get("on"))}
    notes: list[str] = []
    for default in wanted:
        column = default.column.casefold()
        breakdown = {c.casefold() for c in default.breakdown}
        named = {column, *(c.casefold() for c in default.unless)}
        if (named | breakdown) & (chosen if breakdown else mentioned):
            continue
        if breakdown and _compares(tree, named | breakdown, default.value):
            continue  # "HQ against the regions": the query asks about the rows left out
        targets = _breakdown_selects(tree, breakdown) if breakdown else None
        tables = {t.casefold() for t in default.tables}
        added = 0
        for scope in scopes:
            select = scope.expression
            if not isinstance(select, exp.Select) or _has_right_or_full_join(select):
                continue
            if targets is not None and id(select) not in targets:
                continue
            for alias, source in scope.sources.items():
                if not isinstance(source, exp.Table):  # a derived table: its own scope
                    continue
                name = source.name.casefold()
                actual = spelled.get(name, {}).get(column)
                if actual is None or (tables and name not in tables):
                    continue
                comparison = exp.EQ if default.op == "=" else exp.NEQ
                condition = comparison(
                    this=exp.Column(
                        this=exp.to_identifier(actual, quoted=_needs_quotes(actual, dialect)),
                        table=_qualifier(source, alias),
                    ),
                    expression=_literal(default.value),
                )
                _and_into(select, source, condition)
                added += 1
        if added:
            notes.append(f"default filter added: {default.condition} ({default.rule})")
    if not notes:
        return None
    try:
        written = tree.sql(dialect=dialect, unsupported_level=ErrorLevel.RAISE)
    except (SqlglotError, RecursionError) as exc:
        log.debug("default filters: cannot write %r back: %s", sql, exc)
        return None
    # the model's comment lines before the statement (its reasoning header) are kept
    head = sql[: sql.rfind(statement)] if statement in sql else ""
    return Filtered(sql=head + written, notes=notes)


def filters_for(rag: RagContext) -> tuple[DefaultFilter, ...]:
    """The default filters of the knowledge ``rag`` retrieved for its question: its rules',
    and those of the entries the question names (a span). What the evidence's token budget
    left out of the prompt counts too: a rule the retriever admitted (its triggers passed)
    applies whether or not the prompt had room for its text (AutoFin's "else caliber A",
    behind the named and triggered knowledge, often has none)."""
    items = [*rag.evidence.items, *rag.evidence.dropped]
    named = {item.entry.id for item in items if "span" in item.reasons}
    return tuple(filters_of((item.entry for item in items), named))


def filtered_on(
    sql: str | None,
    filters: Iterable[DefaultFilter],
    database: Database,
    read_columns: Callable[[], Mapping[str, Collection[str]]] | None = None,
) -> Filtered | None:
    """:func:`with_default_filters` on ``database``'s schema (``read_columns``: how to read
    it, e.g. once per question; :func:`schema_columns` by default); None also when the
    schema or the query cannot be read (the filters never cost an answer)."""
    filters = list(filters)
    if not sql or not filters:
        return None
    try:
        columns = read_columns() if read_columns else schema_columns(database)
        return with_default_filters(sql, filters, columns, sqlglot_dialect(database.dialect))
    except Exception as exc:
        log.warning("default filters not added to %r: %s", sql[:200], exc)
        return None


def schema_columns(database: Database) -> dict[str, list[str]]:
    """The column names of every table of ``database``, by lower-cased table name (what
    :func:`with_default_filters` reads)."""
    return {
        name.lower(): [column.name for column in info.columns]
        for name, info in database.reflect().items()
    }


def _columns(node: exp.Expression) -> list[exp.Column]:
    return list(node.find_all(exp.Column))


def _literal_compared(node: exp.Expression | None) -> list[exp.Column]:
    """The columns ``node`` compares with a literal (``r.region_code = 'HQ'``)."""
    if node is None:
        return []
    comparisons = node.find_all(exp.EQ, exp.NEQ, exp.In, exp.Like)
    return [c for cmp in comparisons if cmp.find(exp.Literal) for c in _columns(cmp)]


def _compares(tree: exp.Expression, columns: set[str], value: object) -> bool:
    """Whether ``tree`` compares one of ``columns`` with ``value`` anywhere (a CASE, an ON)."""
    wanted = str(value).casefold()
    for node in tree.find_all(exp.EQ, exp.NEQ, exp.In):
        literals = {str(literal.this).casefold() for literal in node.find_all(exp.Literal)}
        if wanted in literals and any(c.name.casefold() in columns for c in _columns(node)):
            return True
    return False


def _breakdown_selects(tree: exp.Expression, columns: set[str]) -> set[int]:
    """The SELECTs (by id) that break their rows down by one of ``columns``, with the
    subqueries of their projections: the total a share divides by is of the same rows."""
    found: set[int] = set()
    for select in tree.find_all(exp.Select):
        if _breaks_down(select, columns):
            found.add(id(select))
            found |= {id(s) for e in select.expressions for s in e.find_all(exp.Select)}
    return found


def _breaks_down(select: exp.Select, columns: set[str]) -> bool:
    """Whether ``select`` itself (not a subquery of it) groups by one of ``columns`` or
    reads one in a CASE."""
    group = select.args.get("group")
    if group is not None and any(c.name.casefold() in columns for c in _columns(group)):
        return True
    return any(
        case.parent_select is select and any(c.name.casefold() in columns for c in _columns(case))
        for case in select.find_all(exp.Case)
    )


def _has_right_or_full_join(select: exp.Select) -> bool:
    return any(j.side in ("RIGHT", "FULL") for j in select.args.get("joins") or [])


def _and_into(select: exp.Select, source: exp.Table, condition: exp.Expression) -> None:
    """``condition`` ANDed into the ON of the LEFT JOIN that reads ``source``, or else into
    ``select``'s WHERE, its ANDs kept flat."""
    for join in select.args.get("joins") or []:
        if join.this is source and join.side == "LEFT":
            on = join.args.get("on")
            join.set("on", exp.and_(*_flat(on), condition) if on is not None else condition)
            return
    where = select.args.get("where")
    conditions = [*_flat(where.this), condition] if where is not None else [condition]
    select.set("where", exp.Where(this=exp.and_(*conditions)))


def _flat(condition: exp.Expression) -> list[exp.Expression]:
    return list(condition.flatten()) if isinstance(condition, exp.And) else [condition]


def _qualifier(source: exp.Table, alias: str) -> exp.Identifier:
    """The name a column of ``source`` is qualified with, as the query spells it."""
    node = source.args.get("alias")
    identifier = node.this if node is not None else source.this
    if isinstance(identifier, exp.Identifier):
        return identifier.copy()
    return exp.to_identifier(alias)


def _needs_quotes(name: str, dialect: str) -> bool:
    """Whether ``name`` must be quoted: not a plain lower-case word where PostgreSQL would
    fold it, or not a plain word anywhere."""
    if not name.isidentifier():
        return True
    return dialect == "postgres" and name != name.lower()


def _literal(value: str | int | float) -> exp.Expression:
    return exp.Literal.string(value) if isinstance(value, str) else exp.Literal.number(value)

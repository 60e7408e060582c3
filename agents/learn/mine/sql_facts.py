"""What one SQL statement shows: tables, columns, joins, filters, computations (sqlglot AST).

:func:`sql_facts` parses a statement in its dialect and lists, with every alias resolved to
its table (lower-cased names, as the profiled schema spells them):

- ``tables``: the base tables read (derived tables and CTEs are not tables);
- ``columns``: every ``(table, column)`` referenced; an unqualified column of a scope with one
  table belongs to it, else its table is ``None`` (the schema decides later);
- ``joins``: equalities between columns of two different tables, in ``JOIN ... ON`` or in
  ``WHERE`` (``FROM a, b WHERE a.x = b.y``);
- ``predicates``: a column compared with literals: ``=``, ``<>``, ``<``..``>=``, ``IN``,
  ``BETWEEN``, ``LIKE`` (a string cast to a date or time, ``DATE '2024-01-01'``, reads as
  the string);
- ``links``: a column tested against a subquery's one column (``a.x IN (SELECT b.y FROM
  b ...)``, ``a.x = (SELECT b.y ...)``): the semi-joins a query writes instead of a join;
- ``formulas``: computed expressions over columns (``SUM(a - b)``, ``population / area``),
  written with table names instead of aliases;
- ``group_by`` and ``order_by`` columns.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import sqlglot
from sqlglot import expressions as exp
from sqlglot.errors import SqlglotError

from kb.target.sql_guard import sqlglot_dialect

ColumnRef = tuple[str | None, str]
_COMPARISONS: dict[type[exp.Expression], str] = {
    exp.EQ: "=",
    exp.NEQ: "<>",
    exp.GT: ">",
    exp.GTE: ">=",
    exp.LT: "<",
    exp.LTE: "<=",
    exp.Like: "LIKE",
    exp.ILike: "ILIKE",
}
_Ref = Callable[[exp.Column], "ColumnRef | None"]
_FLIPPED = {">": "<", ">=": "<=", "<": ">", "<=": ">="}
_ARITHMETIC = (exp.Add, exp.Sub, exp.Mul, exp.Div, exp.Mod)
# dialects where a double-quoted word compared with a column is a string ("JetBlue Airways")
QUOTED_STRING_DIALECTS = frozenset({"sqlite", "mysql"})


class SqlFactsError(ValueError):
    """The statement does not parse (or is not a query); carries the SQL."""

    def __init__(self, sql: str, problem: str) -> None:
        super().__init__(f"cannot read SQL ({problem}): {sql[:300]!r}")
        self.sql = sql


@dataclass(frozen=True)
class JoinFact:
    """``left.left_column = right.right_column``, tables ordered by name."""

    left: str
    left_column: str
    right: str
    right_column: str

    @property
    def condition(self) -> str:
        return f"{self.left}.{self.left_column} = {self.right}.{self.right_column}"


@dataclass(frozen=True)
class PredicateFact:
    """A column compared with literal ``values`` (strings or numbers) by ``op``."""

    table: str | None
    column: str
    op: str
    values: tuple[str | float | int, ...]
    is_text: bool

    def condition(self, table: str | None = None) -> str:
        """SQL text with the column qualified by its table (``table`` fills a missing one)."""
        owner = self.table or table
        target = f"{owner}.{self.column}" if owner else self.column
        literals = [_literal(v) for v in self.values]
        if self.op == "IN":
            return f"{target} IN ({', '.join(literals)})"
        if self.op == "BETWEEN":
            return f"{target} BETWEEN {literals[0]} AND {literals[1]}"
        return f"{target} {self.op} {literals[0]}"


@dataclass(frozen=True)
class FormulaFact:
    """A computed expression: its SQL (aliases resolved), aggregate and the columns it reads."""

    sql: str
    aggregate: str | None
    columns: tuple[ColumnRef, ...]


@dataclass
class SqlFacts:
    """Everything :func:`sql_facts` read from one statement."""

    sql: str
    dialect: str
    tables: list[str] = field(default_factory=list)
    columns: list[ColumnRef] = field(default_factory=list)
    joins: list[JoinFact] = field(default_factory=list)
    links: list[JoinFact] = field(default_factory=list)
    predicates: list[PredicateFact] = field(default_factory=list)
    formulas: list[FormulaFact] = field(default_factory=list)
    group_by: list[ColumnRef] = field(default_factory=list)
    order_by: list[ColumnRef] = field(default_factory=list)


def _literal(value: str | float | int) -> str:
    if isinstance(value, str):
        return "'" + value.replace("'", "''") + "'"
    return str(value)


def _literal_value(node: exp.Expression | None) -> str | float | int | None:
    """The Python value of a literal (``-5`` and ``DATE '2024-01-01'`` included), else None."""
    if isinstance(node, exp.Cast) and node.to.is_type(*exp.DataType.TEMPORAL_TYPES):
        inner = node.this
        return str(inner.this) if isinstance(inner, exp.Literal) and inner.is_string else None
    if isinstance(node, exp.Neg) and isinstance(node.this, exp.Literal):
        inner = _literal_value(node.this)
        return -inner if isinstance(inner, int | float) else None
    if not isinstance(node, exp.Literal):
        return None
    if node.is_string:
        return str(node.this)
    text = str(node.this)
    try:
        return int(text)
    except ValueError:
        return float(text)


class Scopes:
    """Alias → table per SELECT, innermost first when resolving a column."""

    def __init__(self, tree: exp.Expression) -> None:
        self.ctes = {cte.alias_or_name.lower() for cte in tree.find_all(exp.CTE)}
        derived = {q.alias.lower() for q in tree.find_all(exp.Subquery) if q.alias}
        self.derived = self.ctes | derived
        self.output_names = {a.alias.lower() for a in tree.find_all(exp.Alias) if a.alias}
        self.aliases: dict[int, dict[str, str]] = {}
        for select in tree.find_all(exp.Select):
            self.aliases[id(select)] = self._own_tables(select)

    def _own_tables(self, select: exp.Select) -> dict[str, str]:
        found: dict[str, str] = {}
        for table in select.find_all(exp.Table):
            if table.find_ancestor(exp.Select) is not select:
                continue
            name = table.name.lower()
            if not name or name in self.ctes:
                continue
            found[table.alias_or_name.lower()] = name
        return found

    def is_derived(self, column: exp.Column) -> bool:
        """A column of a derived table or CTE, or a select alias: not a base column."""
        qualifier = column.table.lower()
        if qualifier:
            return qualifier in self.derived
        return column.name.lower() in self.output_names

    def table_of(self, column: exp.Column) -> str | None:
        qualifier = column.table.lower()
        select = column.find_ancestor(exp.Select)
        while select is not None:
            own = self.aliases.get(id(select), {})
            if qualifier and qualifier in own:
                return own[qualifier]
            if not qualifier and len(set(own.values())) == 1:
                return next(iter(own.values()))
            if not qualifier and own:
                return None  # several tables: the schema decides
            select = select.find_ancestor(exp.Select)
        return None


def sql_facts(sql: str, dialect: str = "sqlite") -> SqlFacts:
    """Read the facts of one query (see the module docstring); :class:`SqlFactsError` if the
    SQL does not parse as a query. ``dialect`` may be a SQLAlchemy backend name ("postgresql")."""
    dialect = sqlglot_dialect(dialect)
    try:
        tree = sqlglot.parse_one(sql, read=dialect)
    except SqlglotError as exc:
        raise SqlFactsError(sql, str(exc).splitlines()[0]) from None
    if tree is None or not isinstance(tree, exp.Query):
        raise SqlFactsError(sql, "not a SELECT query")
    if dialect in QUOTED_STRING_DIALECTS:
        quoted_values_as_strings(tree)
    scopes = Scopes(tree)
    facts = SqlFacts(sql=sql, dialect=dialect)
    facts.tables = sorted({t for own in scopes.aliases.values() for t in own.values()})

    def ref(column: exp.Column) -> ColumnRef | None:
        if scopes.is_derived(column):
            return None
        return (scopes.table_of(column), column.name.lower())

    def refs(node: exp.Expression) -> list[ColumnRef]:
        found = (ref(c) for c in node.find_all(exp.Column) if c.name)
        return list(dict.fromkeys(r for r in found if r is not None))

    facts.columns = refs(tree)
    facts.joins = _joins(tree, ref)
    facts.links = _links(tree, ref)
    facts.predicates = _predicates(tree, ref)
    facts.formulas = _formulas(tree, ref, scopes, dialect)
    for group in tree.find_all(exp.Group):
        facts.group_by += refs(group)
    for order in tree.find_all(exp.Order):
        facts.order_by += refs(order)
    return facts


def quoted_values_as_strings(tree: exp.Expression) -> None:
    """``col = "text"``: SQLite and MySQL read an unknown double-quoted name as a string, and
    queries written so (Spider's) mean one; sqlglot parses it as a column."""
    for node in tree.find_all(*_COMPARISONS, exp.In):
        operands = node.expressions if isinstance(node, exp.In) else [node.expression]
        if not isinstance(node.this, exp.Column):
            continue
        for operand in operands:
            if isinstance(operand, exp.Column) and not operand.table and operand.this.quoted:
                operand.replace(exp.Literal.string(operand.name))


def _joins(tree: exp.Expression, ref: _Ref) -> list[JoinFact]:
    found: dict[JoinFact, None] = {}
    for eq in tree.find_all(exp.EQ):
        left, right = eq.this, eq.expression
        if not (isinstance(left, exp.Column) and isinstance(right, exp.Column)):
            continue
        left_ref, right_ref = ref(left), ref(right)
        if left_ref is None or right_ref is None:
            continue
        (lt, lc), (rt, rc) = left_ref, right_ref
        if lt is None or rt is None or lt == rt:
            continue
        if (lt, lc) > (rt, rc):
            lt, lc, rt, rc = rt, rc, lt, lc
        found[JoinFact(lt, lc, rt, rc)] = None
    return list(found)


def _links(tree: exp.Expression, ref: _Ref) -> list[JoinFact]:
    found: dict[JoinFact, None] = {}
    for node in tree.find_all(exp.In, exp.EQ):
        outer = node.this
        inner = node.args.get("query") if isinstance(node, exp.In) else node.expression
        if isinstance(inner, exp.Subquery):
            inner = inner.this
        if not isinstance(outer, exp.Column) or not isinstance(inner, exp.Select):
            continue
        selected = inner.expressions
        if len(selected) != 1 or not isinstance(selected[0].unalias(), exp.Column):
            continue
        left_ref, right_ref = ref(outer), ref(selected[0].unalias())
        if left_ref is None or right_ref is None or None in (left_ref[0], right_ref[0]):
            continue
        (lt, lc), (rt, rc) = sorted([left_ref, right_ref], key=str)
        if lt != rt:
            found[JoinFact(str(lt), lc, str(rt), rc)] = None
    return list(found)


def _predicates(tree: exp.Expression, ref: _Ref) -> list[PredicateFact]:
    found: dict[PredicateFact, None] = {}
    for node in tree.find_all(*_COMPARISONS, exp.In, exp.Between):
        fact = _predicate(node, ref)
        if fact is not None:
            found[fact] = None
    return list(found)


def _predicate(node: exp.Expression, ref: _Ref) -> PredicateFact | None:
    column = node.this
    if isinstance(node, exp.In):
        values = [_literal_value(v) for v in node.expressions]
        op = "IN"
    elif isinstance(node, exp.Between):
        values = [_literal_value(node.args.get("low")), _literal_value(node.args.get("high"))]
        op = "BETWEEN"
    else:
        op = _COMPARISONS[type(node)]
        value = _literal_value(node.expression)
        if not isinstance(column, exp.Column) and isinstance(node.expression, exp.Column):
            column, value = node.expression, _literal_value(node.this)
            op = _FLIPPED.get(op, op)
        values = [value]
    if not isinstance(column, exp.Column) or not values or any(v is None for v in values):
        return None
    kept = tuple(v for v in values if v is not None)
    resolved = ref(column)
    if resolved is None:
        return None
    table, name = resolved
    return PredicateFact(table, name, op, kept, all(isinstance(v, str) for v in kept))


def _formulas(tree: exp.Expression, ref: _Ref, scopes: Scopes, dialect: str) -> list[FormulaFact]:
    """Arithmetic over columns (alone or inside an aggregate), outermost first."""
    found: dict[str, FormulaFact] = {}
    for node in tree.find_all(*_ARITHMETIC):
        parent = node.parent
        while isinstance(parent, exp.Paren):
            parent = parent.parent
        if isinstance(parent, _ARITHMETIC):
            continue
        refs = [ref(c) for c in node.find_all(exp.Column)]
        columns = tuple(dict.fromkeys(r for r in refs if r is not None))
        if not columns or None in refs:  # over a derived column: not a base formula
            continue
        aggregate = node.find_ancestor(exp.AggFunc)
        top: exp.Expression = aggregate if aggregate is not None else node
        text = _qualified(top, scopes, dialect)
        found.setdefault(
            text, FormulaFact(text, aggregate.key.upper() if aggregate else None, columns)
        )
    return list(found.values())


def _qualified(node: exp.Expression, scopes: Scopes, dialect: str) -> str:
    """``node`` as SQL with each column qualified by its table name (not its alias)."""
    copy = node.copy()
    originals = list(node.find_all(exp.Column))
    for original, column in zip(originals, list(copy.find_all(exp.Column)), strict=True):
        table = scopes.table_of(original)
        column.set("table", exp.to_identifier(table) if table else None)
        column.set("this", exp.to_identifier(original.name.lower()))
    return copy.sql(dialect=dialect)

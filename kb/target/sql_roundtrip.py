"""Parse SQL and write it back with the same meaning, for the read-only guard.

The guard executes sqlglot's regeneration of a query, not the text it was given, so the
round trip must not change what the query means or how the database plans it. sqlglot is built
to transpile between dialects; writing a dialect back to itself needs a few corrections, made
here as small subclasses of sqlglot's SQLite parser and generator (nothing is registered):

- comma joins stay comma joins (sqlglot's SQLite parser turns them into ``CROSS JOIN``, which
  SQLite's planner never reorders);
- CTE column lists stay (``WITH c(n) AS ...``; sqlglot drops them for SQLite);
- ``json_extract(x, p)`` stays a function call (the ``->`` operator it would become returns
  JSON text, not an SQL value).

Anything else the generator cannot write raises ``UnsupportedError``; ``same_query`` lets the
guard confirm that the written SQL parses back to the tree it checked.
"""

from __future__ import annotations

from sqlglot import exp
from sqlglot.dialects.dialect import Dialect
from sqlglot.dialects.sqlite import SQLite
from sqlglot.errors import ErrorLevel


class _SQLiteParser(SQLite.Parser):
    JOINS_HAVE_EQUAL_PRECEDENCE = False  # only marks comma joins as CROSS in sqlglot


class _SQLiteGenerator(SQLite.Generator):
    def tablealias_sql(self, expression: exp.TableAlias) -> str:
        if not isinstance(expression.parent, exp.CTE):
            return super().tablealias_sql(expression)
        columns = self.expressions(expression, key="columns", flat=True)
        name = self.sql(expression, "this")
        return f"{name}({columns})" if columns else name

    def jsonextract_sql(self, expression: exp.JSONExtract) -> str:
        if "only_json_types" in expression.args:  # written as an arrow
            return super().jsonextract_sql(expression)
        return self.function_fallback_sql(expression)


def parse_sql(sql: str, read: str) -> list[exp.Expression | None]:
    """The statements of ``sql`` in sqlglot dialect ``read`` (None for empty ones).

    Raises:
        sqlglot.errors.ParseError, sqlglot.errors.TokenError: ``sql`` cannot be parsed.
    """
    dialect = Dialect.get_or_raise(read)
    parser = _SQLiteParser if read == "sqlite" else dialect.parser_class
    return parser(dialect=dialect).parse(dialect.tokenize(sql), sql)


def write_sql(tree: exp.Expression, read: str) -> str:
    """``tree`` as one line of ``read`` SQL, without comments, function names as written.

    Raises:
        sqlglot.errors.UnsupportedError: the generator would have to drop or change something.
    """
    dialect = Dialect.get_or_raise(read)
    generator = _SQLiteGenerator if read == "sqlite" else dialect.generator_class
    writer = generator(
        dialect=dialect,
        comments=False,
        normalize_functions=False,  # keeps quoted function names as written
        unsupported_level=ErrorLevel.RAISE,
    )
    return writer.generate(tree)


def same_query(left: exp.Expression, right: exp.Expression) -> bool:
    """True when two trees are equal up to spellings that write alike (``$$x$$`` and ``'x'``)."""
    return _canonical(left) == _canonical(right)


def _canonical(tree: exp.Expression) -> exp.Expression:
    def plain(node: exp.Expression) -> exp.Expression:
        return exp.Literal.string(node.this) if isinstance(node, exp.RawString) else node

    return tree.transform(plain)

"""The question's period where the model wrote another: when the knowledge base's calendar
names its period column (``period_column``, :mod:`agents.rag.calendar`) and the question's
time words settle one period (:func:`agents.rag.question_facts.period_pin`: one time window,
not month by month), a query that filters that column on a single other period reads the
question's, without a model.

The prompt already states the resolved period ("'the current fiscal quarter to date' is
fiscal quarter FY2025 Q2 to date: for its total use the qtd_ columns at period = '202409'"),
yet the 1.5B wrote another one period on 10 of the 273 unseen AutoFin test answers (copying
an example's, or counting the calendar year), four of them at a confidence of 0.7 or more;
held to the question's, 9 of the 10 became right and none went wrong
(``python -m bench.replay_filters``).

Only the plainest case is held: every comparison of the column in the query is an equality
with a literal, and all of them name the same period. A query that reads the column any
other way (``IN``, ``BETWEEN``, a range, a join on it) or names two periods (month over
month, a year against the one before) is left as written: which of its periods is the
question's is not for code to guess.
"""

from __future__ import annotations

import sqlglot
from sqlglot import exp
from sqlglot.errors import ErrorLevel, SqlglotError

from agents.rag.agent import RagContext
from agents.rag.question_facts import PeriodPin
from agents.sql.default_filters import Filtered
from agents.sql.extract import statement_only

# how a query may read the period column other than by equality with a literal
_OTHER_READS = (exp.In, exp.Between, exp.GT, exp.GTE, exp.LT, exp.LTE, exp.NEQ, exp.Like)


def pin_for(rag: RagContext) -> PeriodPin | None:
    """The period ``rag``'s question pins (None when its time words settle none)."""
    return rag.facts.period if rag.facts is not None else None


def with_pinned_period(sql: str, pin: PeriodPin, dialect: str) -> Filtered | None:
    """``sql`` reading ``pin.period`` where it filters ``pin.column`` on one other period
    (see the module docstring); None when nothing changed or ``sql`` cannot be read or
    written back."""
    statement = statement_only(sql)
    if not statement:
        return None
    try:
        tree = sqlglot.parse_one(statement, read=dialect)
    except (SqlglotError, RecursionError):
        return None
    literals = _period_literals(tree, pin.column.casefold())
    if not literals:
        return None
    written_periods = {literal.this for literal in literals}
    if len(written_periods) != 1 or pin.period in written_periods:
        return None
    (old,) = written_periods
    for literal in literals:
        literal.replace(exp.Literal.string(pin.period))
    try:
        written = tree.sql(dialect=dialect, unsupported_level=ErrorLevel.RAISE)
    except (SqlglotError, RecursionError):
        return None
    head = sql[: sql.rfind(statement)] if statement in sql else ""
    note = f"period '{pin.period}' for '{old}' (\"{pin.phrase}\" is period '{pin.period}')"
    return Filtered(sql=head + written, notes=[note])


def _period_literals(tree: exp.Expression, column: str) -> list[exp.Literal]:
    """The literals ``column`` is compared with for equality; empty when the query reads
    the column in a predicate of another kind or compares it with something else."""
    found: list[exp.Literal] = []
    for node in tree.find_all(exp.Column):
        if node.name.casefold() != column:
            continue
        parent = node.parent
        if isinstance(parent, exp.Paren):
            parent = parent.parent
        if isinstance(parent, _OTHER_READS):
            return []
        if not isinstance(parent, exp.EQ):
            continue  # projected, grouped or ordered by: not a filter
        other = parent.expression if parent.this is node else parent.this
        if isinstance(other, exp.Paren):
            other = other.this
        if not isinstance(other, exp.Literal):
            return []  # a join on the period, or a comparison with an expression
        found.append(other)
    return found

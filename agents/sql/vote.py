"""Test-time scaling: majority vote over the execution results of several candidates.

Candidates that failed (no SQL, a database error) are dropped. The others are grouped by a
fingerprint of their results:

- values are normalised: floats rounded to ``digits`` significant digits (so 0.30000000000000004
  and 0.3 agree), integral floats become integers, and each row's values are compared as a
  multiset (``SELECT a, b`` agrees with ``SELECT b, a``);
- rows are compared in order only when the query has a top-level ``ORDER BY``, else as a
  multiset.

The largest group wins; among equal groups a result with data beats an empty or all-NULL one,
then the configured tie-break decides. Confidence is the winning group's share of *all*
candidates, so failures count against it.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import sqlglot
from sqlglot import exp

from agents.answer import Candidate
from kb.target.results import Results
from kb.target.sql_guard import sqlglot_dialect

TieBreak = Literal["first", "fewest_repairs", "shortest"]
TIE_BREAKS: tuple[str, ...] = ("first", "fewest_repairs", "shortest")


@dataclass
class VoteOutcome:
    """The winner (None when every candidate failed), its confidence and the groups."""

    winner: Candidate | None
    confidence: float
    groups: list[list[Candidate]] = field(default_factory=list)
    considered: int = 0

    @property
    def support(self) -> int:
        return len(self.groups[0]) if self.groups else 0


def is_ordered(sql: str, dialect: str = "sqlite") -> bool:
    """True when the query's outermost SELECT (or set operation) has an ORDER BY."""
    try:
        tree = sqlglot.parse_one(sql, read=sqlglot_dialect(dialect))
    except sqlglot.errors.ParseError:
        return "order by" in sql.lower()
    return bool(tree.args.get("order")) if isinstance(tree, exp.Query) else False


def fingerprint(results: Results, *, ordered: bool, digits: int = 6) -> str:
    """A key equal for results that show the same answer."""
    rows = [sorted((_norm(v, digits) for v in row), key=_key) for row in results.rows]
    if not ordered:
        rows.sort(key=_key)
    payload = json.dumps(
        {"rows": rows, "width": len(results.columns), "truncated": results.truncated},
        default=str,
        separators=(",", ":"),
    )
    return hashlib.sha256(payload.encode()).hexdigest()[:16]


def vote(
    candidates: Sequence[Candidate],
    *,
    tie_break: TieBreak = "first",
    dialect: str = "sqlite",
    digits: int = 6,
) -> VoteOutcome:
    """Majority vote over ``candidates`` (see the module docstring)."""
    if tie_break not in TIE_BREAKS:
        raise ValueError(f"unknown tie-break {tie_break!r}; one of {TIE_BREAKS}")
    groups: dict[str, list[Candidate]] = {}
    for candidate in candidates:
        if not candidate.ok or candidate.results is None:
            continue
        candidate.fingerprint = fingerprint(
            candidate.results, ordered=is_ordered(candidate.sql, dialect), digits=digits
        )
        groups.setdefault(candidate.fingerprint, []).append(candidate)
    if not groups:
        return VoteOutcome(None, 0.0, [], len(candidates))
    order = {id(c): i for i, c in enumerate(candidates)}
    for members in groups.values():
        members.sort(key=lambda c: _tie_key(c, tie_break, order))
    ranked = sorted(
        groups.values(),
        key=lambda g: (-len(g), not g[0].results.has_data, _tie_key(g[0], tie_break, order)),
    )
    winner = ranked[0][0]
    return VoteOutcome(winner, len(ranked[0]) / len(candidates), ranked, len(candidates))


def agreement(candidates: Sequence[Candidate], dialect: str = "sqlite") -> Candidate | None:
    """The first candidate whose non-empty result another candidate shares, else None."""
    outcome = vote(candidates, dialect=dialect)
    if outcome.winner is None or outcome.support < 2:
        return None
    return outcome.winner if outcome.winner.results.has_data else None


def _tie_key(candidate: Candidate, tie_break: str, order: dict[int, int]) -> tuple:
    position = order.get(id(candidate), 0)
    if tie_break == "fewest_repairs":
        return (candidate.repairs, position)
    if tie_break == "shortest":
        return (len(candidate.sql), position)
    return (position,)


def _norm(value: Any, digits: int) -> Any:
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, float):
        if math.isnan(value) or math.isinf(value):
            return str(value)
        if value.is_integer() and abs(value) < 1e15:
            return int(value)
        rounded = float(f"{value:.{digits}g}")
        return int(rounded) if rounded.is_integer() else rounded
    if isinstance(value, (list, tuple)):
        return [_norm(v, digits) for v in value]
    return value


def _key(value: Any) -> str:
    return json.dumps(value, default=str, sort_keys=True)

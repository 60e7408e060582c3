"""Signals that read only an answer's SQL, added to runs recorded before the signal existed.

A new confidence signal counts only once the calibrator is refitted on answers that carry
it, and the refit's sets are recordings that took hours. A signal computed from the
predicted SQL alone (no retrieval, no model) is the same whether computed at answer time or
afterwards, so this writes a copy of a ``bench run`` folder whose answers carry the SQL-only
signals they lack (``OUT/results.jsonl``; the run's other files are linked)::

    python -m bench.backfill_signals --run bench/out/s55-spider300-greedy \\
        --out bench/out/s55-spider300-greedy-bf

An answer that already carries a signal keeps its value; one without recorded signals
(a timeout, a failed prediction) or whose SQL does not parse is copied as it is. Signals:
``unlinked_joins`` (:mod:`agents.sql.join_check`).
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Callable
from pathlib import Path

from sqlglot import exp

from agents.confidence.sql_shape import parse_statement
from agents.sql.extract import statement_only
from agents.sql.join_check import unlinked_joins
from bench.run_copy import copy_run

SqlSignal = Callable[[str, str, exp.Expression], float]
SQL_ONLY_SIGNALS: dict[str, SqlSignal] = {
    "unlinked_joins": lambda sql, dialect, tree: float(
        len(unlinked_joins(sql, dialect, tree=tree))
    ),
}


def backfill(run: Path, out: Path, dialect: str = "sqlite") -> dict[str, int]:
    """Writes the copy of ``run`` into ``out``; returns how many answers gained each signal
    (and ``answers``, how many lines were read)."""
    gained = dict.fromkeys(SQL_ONLY_SIGNALS, 0)

    def add_missing(row: dict) -> None:
        for name in _fill(row, dialect):
            gained[name] += 1

    return {"answers": copy_run(run, out, add_missing), **gained}


def _fill(row: dict, dialect: str) -> list[str]:
    """Adds the missing SQL-only signals to ``row`` in place; returns their names."""
    signals = (row.get("system_metadata") or {}).get("signals")
    sql = row.get("predicted_sql")
    if signals is None or not sql:
        return []
    missing = [name for name in SQL_ONLY_SIGNALS if name not in signals]
    if not missing:
        return []
    statement = statement_only(sql)
    tree = parse_statement(statement, dialect)
    if tree is None:
        return []
    for name in missing:
        signals[name] = SQL_ONLY_SIGNALS[name](statement, dialect, tree)
    return missing


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.backfill_signals",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--run", type=Path, required=True, help="a `bench run` folder")
    parser.add_argument("--out", type=Path, required=True, help="where the copy goes")
    parser.add_argument("--dialect", default="sqlite", help="the SQL's dialect")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    try:
        counts = backfill(args.run, args.out, args.dialect)
    except (FileNotFoundError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    answers = counts.pop("answers")
    gained = ", ".join(f"{name} {count}" for name, count in counts.items())
    print(f"{answers} answers copied to {args.out}; signals added: {gained}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

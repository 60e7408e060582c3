"""A breakdown cut to its top rows by LIMIT, read whole for the analysis.

Asked "analyse the imbalance of tickets across callers", a small model answers the way a
lookup would: ``SELECT caller_id, COUNT(*) AS n FROM incidents GROUP BY caller_id ORDER BY n
DESC LIMIT 1``. The row is right, but one row is no distribution: the outlier and ranking
tools need every caller to say that one stands out, and by how much. :func:`whole_breakdown`
runs a grouped query's LIMIT (and OFFSET) away, its order kept, and keeps the result when it
holds more rows and all of them (a result cut at the analysis's row cap is not kept: a long
tail's top rows would bias the outliers). A sub-question that asks for a top ("the top 5
callers", "the 3 busiest agents": :data:`ASKS_A_TOP`) keeps its LIMIT.
"""

from __future__ import annotations

import logging
import re

from agents.analysis.models import Evidence
from agents.analysis.series_repair import one_select, replaced
from kb.target.database import Database
from kb.target.sql_guard import sqlglot_dialect

log = logging.getLogger(__name__)
ASKS_A_TOP = re.compile(  # "the top 5 callers", "the 3 busiest agents": the LIMIT was asked for
    r"\b(?:top|first|last|bottom)\s+(?:\d+|two|three|four|five|ten)\b|"
    r"\b(?:\d+|two|three|four|five|ten)\s+(?:most|least|highest|lowest|largest|smallest|"
    r"biggest|best|worst|busiest|\w+est)\b",
    re.I,
)


def unlimited(sql: str, dialect: str) -> str | None:
    """``sql`` without its LIMIT and OFFSET when it is one grouped SELECT that has a LIMIT;
    None otherwise."""
    tree = one_select(sql, dialect)
    if tree is None or not tree.args.get("group") or not tree.args.get("limit"):
        return None
    tree.set("limit", None)
    tree.set("offset", None)
    return tree.sql(dialect=dialect)


def whole_breakdown(
    item: Evidence, database: Database, *, max_rows: int, timeout_s: float
) -> Evidence:
    """``item`` answered by its query without the LIMIT (:func:`unlimited`) when that runs
    and returns more rows; ``item`` itself otherwise."""
    if item.error is not None or not item.sql or ASKS_A_TOP.search(item.question):
        return item
    sql = unlimited(item.sql, sqlglot_dialect(database.dialect))
    if sql is None:
        return item
    results = database.execute(sql, max_rows=max_rows, timeout_s=timeout_s)
    if not results.ok or results.truncated or results.row_count <= item.row_count:
        return item  # cut at the row cap, a long tail's top rows would bias the outliers
    log.info(
        "breakdown %s: %d rows without the LIMIT (was %d)",
        item.id,
        results.row_count,
        item.row_count,
    )
    why = f"the LIMIT taken out: every group of the breakdown ({results.row_count} rows)"
    return replaced(item, sql, results, why)

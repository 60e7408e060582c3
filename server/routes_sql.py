"""Running a user's SQL read-only over HTTP: ``POST /v1/sql`` (permission ``ask``).

The web page's "Re-run read-only" sends the SQL an analyst edited here before correcting an
answer with it. The query runs on the deployment's target exactly as the corrected SQL of
feedback does: :meth:`kb.target.database.Database.execute` (the read-only guard, the target's
time limit, a row cap of at most ``ALMANAC_TARGET_MAX_ROWS``), in the SQL pool (429 when full),
so a slow query holds no request handler thread. A statement that writes, does not parse or
fails answers 422 with the reason; no target configured answers 409.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, HTTPException, Request
from fastapi.responses import Response
from pydantic import BaseModel, ConfigDict, Field

from kb.target.results import Results
from server.auth import Identity, Permission
from server.deps import get_state, require
from server.responses import FastJSONResponse

router = APIRouter(tags=["ask"])
Asker = Annotated[Identity, Depends(require(Permission.ASK))]
MAX_SQL_CHARS = 20_000  # as the corrected SQL of feedback


class SqlRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    sql: str = Field(min_length=1, max_length=MAX_SQL_CHARS)
    max_rows: int | None = Field(
        default=None,
        ge=1,
        description="rows returned at most (default and bound: ALMANAC_TARGET_MAX_ROWS)",
    )


@router.post("/v1/sql", summary="Run one read-only SQL query on the target")
async def run_sql(request: Request, identity: Asker, body: SqlRequest) -> Response:
    state = get_state(request)
    target = state.target
    if target is None:
        raise HTTPException(409, "no target database is configured (ALMANAC_TARGET_URL)")
    if not body.sql.strip():
        raise HTTPException(422, "the SQL is empty")
    cap = min(body.max_rows or state.settings.target_max_rows, state.settings.target_max_rows)
    results: Results = await state.asks.sql_pool.run(
        identity.key_id, lambda: target.execute(body.sql, max_rows=cap)
    )
    if not results.ok:
        raise HTTPException(422, f"the SQL was not run ({results.error_kind}): {results.error}")
    return FastJSONResponse(
        {
            "sql": results.sql,
            "columns": list(results.columns),
            "rows": [list(row) for row in results.rows],
            "row_count": results.row_count,
            "truncated": results.truncated,
            "max_rows": cap,
            "seconds": round(results.elapsed, 4),
        }
    )

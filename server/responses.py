"""Responses: JSON rendered by pydantic-core (fast; datetimes as ISO 8601), and the
server-sent events of the streaming routes."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import pydantic_core
from fastapi.responses import JSONResponse, StreamingResponse


class FastJSONResponse(JSONResponse):
    def render(self, content: Any) -> bytes:
        return pydantic_core.to_json(content)


def event_stream(events: AsyncIterator[dict[str, Any]]) -> StreamingResponse:
    """Server-sent events, one per ``event`` dict (``event: <stage>`` and its JSON)."""

    async def encoded() -> AsyncIterator[str]:
        async for event in events:
            yield f"event: {event['stage']}\ndata: {json.dumps(event, default=str)}\n\n"

    return StreamingResponse(encoded(), media_type="text/event-stream")

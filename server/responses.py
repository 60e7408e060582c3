"""A JSON response rendered by pydantic-core (fast; datetimes as ISO 8601)."""

from __future__ import annotations

from typing import Any

import pydantic_core
from fastapi.responses import JSONResponse


class FastJSONResponse(JSONResponse):
    def render(self, content: Any) -> bytes:
        return pydantic_core.to_json(content)

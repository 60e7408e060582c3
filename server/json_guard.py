"""Refuse request bodies whose JSON cannot be stored or sent back (422), before any route.

A JSON body (or a JSON Lines import) may parse and still break the server further on: a lone
surrogate (``{"question": "abc \\ud800 def"}``) made the 422 handler itself fail while echoing
it, and would fail any store write; ``NaN``, ``Infinity`` and ``1e999`` cannot be written
back; integers beyond 64 bits overflow the store; deep nesting overflows the serializers.
:class:`JSONGuardMiddleware` reads the body (the body limit stays outside it), and when it
holds a suspect token (:func:`kb.strict_json.suspect`, one regular expression search) parses
it strictly, as one JSON document or else line by line, and answers 422 with a short message
(:class:`kb.strict_json.StrictJSONError`) that never echoes the value. Bodies that are not
JSON at all are left to the route, which reports them its own way (400 or 422).
"""

from __future__ import annotations

from fastapi import HTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from kb.strict_json import StrictJSONError, loads_strict, suspect
from server.errors import send_json

BODY_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})


class JSONGuardMiddleware:
    """422 for a request body holding JSON that :func:`kb.strict_json.loads_strict` refuses."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] not in BODY_METHODS:
            await self.app(scope, receive, send)
            return
        try:
            body, more = await _read_body(receive)
        except HTTPException as exc:  # the body limit, raised while the body streams in
            await send_json(send, exc.status_code, {"detail": exc.detail})
            return
        if more is not None:  # the client went away before the body ended
            return
        problem = body_problem(body)
        if problem is not None:
            await send_json(send, 422, {"detail": f"request body: {problem}"})
            return
        await self.app(scope, _replay(body, receive), send)


def body_problem(body: bytes) -> str | None:
    """Why ``body`` is refused, or None (also for bodies that are not JSON or JSON Lines)."""
    if not body or not suspect(body):
        return None
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        return None
    try:
        loads_strict(text)
        return None
    except StrictJSONError as exc:
        return str(exc)
    except ValueError:  # not one JSON document: perhaps JSON Lines
        pass
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            loads_strict(line)
        except StrictJSONError as exc:
            return f"line {number}: {exc}"
        except ValueError:
            continue
    return None


async def _read_body(receive: Receive) -> tuple[bytes, Message | None]:
    """The whole body, and the message that ended reading early (a disconnect), if any."""
    chunks: list[bytes] = []
    while True:
        message = await receive()
        if message["type"] != "http.request":
            return b"".join(chunks), message
        chunks.append(message.get("body", b""))
        if not message.get("more_body", False):
            return b"".join(chunks), None


def _replay(body: bytes, receive: Receive) -> Receive:
    """A receive that hands the app the body already read, then listens to the client."""
    sent = False

    async def replay() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replay

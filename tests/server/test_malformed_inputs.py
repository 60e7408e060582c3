"""No malformed input gives a 500 or resets the connection, on any route.

A fixed corpus (:mod:`perf.malformed`: lone surrogates, NaN, huge integers, deep nesting,
non-UTF-8 bytes, wrong content types, odd path segments, query values and headers) is sent
to every route of the app (enumerated from the app itself, so a new route is covered without
touching this file) over one keep-alive connection to a real uvicorn server, and the fuzzer
(:mod:`perf.fuzz`) runs briefly against the same server.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from perf.fuzz import run
from perf.fuzz_target import FuzzTarget, Operation, fuzz_server, operations
from perf.malformed import (
    HEADER_SETS,
    LONG,
    PATH_VALUES,
    QUERY_VALUES,
    RAW_BODIES,
    VALUE_TEXTS,
)

pytestmark = pytest.mark.slow
MAX_ANSWER_BYTES = 16_384  # a refusal names the input; it never echoes it whole


@pytest.fixture(scope="module")
def target() -> Iterator[FuzzTarget]:
    with fuzz_server() as running:
        yield running


@pytest.fixture(scope="module")
def ops(target: FuzzTarget) -> list[Operation]:
    found = operations(target.app)
    assert {("POST", "/v1/ask"), ("GET", "/v1/knowledge"), ("POST", "/v1/jobs")} <= {
        (op.method, op.path) for op in found
    }
    return found


class Sender:
    """One keep-alive connection; every answer is checked as it comes."""

    def __init__(self, target: FuzzTarget) -> None:
        self.target = target
        self.client = httpx.Client(base_url=target.base, timeout=60)
        self.problems: list[str] = []
        self.sent = 0

    def send(
        self,
        method: str,
        url: str,
        *,
        role: str | None = "admin",
        headers: dict[str, str] | None = None,
        body: bytes | None = None,
        content_type: str | None = None,
    ) -> None:
        raw = dict(headers or {})
        if role and "Authorization" not in raw and "X-API-Key" not in raw:
            raw["Authorization"] = f"Bearer {self.target.keys[role]}"
        if content_type and "Content-Type" not in raw:
            raw["Content-Type"] = content_type
        encoded = [(k.encode("latin-1"), v.encode("latin-1")) for k, v in raw.items()]
        what = f"{method} {url[:200]} {list(raw)} {(body or b'')[:120]!r}"
        self.sent += 1
        try:
            reply = self.client.request(method, url, headers=encoded, content=body)
        except httpx.TransportError as exc:
            self.problems.append(f"connection {type(exc).__name__}: {what}")
            return
        if reply.status_code >= 500 and reply.status_code not in (501, 503):
            self.problems.append(f"{reply.status_code} {reply.text[:200]}: {what}")
        if reply.headers.get("connection", "").lower() == "close":
            self.problems.append(f"connection closed after {reply.status_code}: {what}")
        if reply.status_code >= 400 and (
            len(reply.content) > MAX_ANSWER_BYTES or LONG in reply.text
        ):
            self.problems.append(f"{reply.status_code} echoes {len(reply.content)} bytes: {what}")

    def close(self) -> None:
        self.client.close()


@pytest.fixture()
def sender(target: FuzzTarget) -> Iterator[Sender]:
    running = Sender(target)
    yield running
    running.close()
    assert not running.problems, f"{len(running.problems)} of {running.sent}:\n" + "\n".join(
        running.problems[:40]
    )


def _path(op: Operation, target: FuzzTarget, override: dict[str, str] | None = None) -> str:
    path = op.path
    for name in op.path_params:
        value = (override or {}).get(name) or (target.ids.get(name) or ["x"])[0]
        path = path.replace("{" + name + "}", value)
    return path


def _with_value(op: Operation, index: int, value_text: str) -> bytes:
    """A body for ``op`` whose field number ``index`` (cycling through the schema's
    properties) holds ``value_text`` verbatim."""
    schema = op.body or {}
    while "$ref" in schema:
        schema = op.schemas[schema["$ref"].rsplit("/", 1)[-1]]
    names = sorted(schema.get("properties", {})) or ["question"]
    name = names[index % len(names)]
    minimal: dict[str, Any] = {"question": "how many sales?", "mode": "string", "query": "x"}
    minimal.update({"type": "knowledge", "name": "fuzzed"} if "name" in names else {})
    fields = {k: v for k, v in minimal.items() if k in names and k != name}
    text = json.dumps(fields)[:-1] + ("," if fields else "") + f"{json.dumps(name)}:{value_text}}}"
    if op.content_type == "application/x-ndjson":
        return (json.dumps({"type": "knowledge", "name": "ok"}) + "\n" + text).encode()
    return text.encode()


def test_malformed_path_values_on_every_route(target, ops, sender):
    for op in ops:
        for name in op.path_params:
            for value in PATH_VALUES:
                sender.send(op.method, _path(op, target, {name: value}), body=b"{}")


def test_malformed_query_values_on_every_route(target, ops, sender):
    for op in ops:
        names = [*op.query, "limit", "offset"]
        for name in dict.fromkeys(names):
            for value in QUERY_VALUES:
                sender.send(op.method, f"{_path(op, target)}?{name}={value}")
            sender.send(op.method, f"{_path(op, target)}?{name}=1&{name}=2&{name}=%00")


def test_malformed_bodies_on_every_route(target, ops, sender):
    for op in ops:
        if op.method not in ("POST", "PATCH", "PUT", "DELETE"):
            continue
        for content_type, body in RAW_BODIES:
            sender.send(op.method, _path(op, target), body=body, content_type=content_type)
        for index, value_text in enumerate(VALUE_TEXTS):
            body = _with_value(op, index, value_text)
            sender.send(op.method, _path(op, target), body=body, content_type=op.content_type)


def test_malformed_headers_on_every_route(target, ops, sender):
    for op in ops:
        for headers in HEADER_SETS:
            sender.send(op.method, _path(op, target), headers=headers, body=b"{}")
        for role in ("analyst", "ml", "ops", "ops@ws", None):
            sender.send(op.method, _path(op, target), role=role, body=b'{"a":"\\ud800"}')


def test_the_fuzzer_finds_no_500(target):
    report = run(target, requests=300, seconds=240, seed=20)
    assert report.sent == 300
    assert report.server_errors == 0, report.render()
    assert report.by_class["2xx"] > 0 and report.by_class["4xx"] > 0, report.render()


def _integer_schemas(schema: dict[str, Any]) -> list[dict[str, Any]]:
    if schema.get("type") == "integer":
        return [schema]
    return [s for sub in schema.get("anyOf", []) for s in _integer_schemas(sub)]


def test_every_integer_query_parameter_has_bounds(ops):
    """A new ``int`` query parameter without ``le=`` fails here (a 31-digit offset was a 500)."""
    unbounded = [
        f"{op.method} {op.path} ?{name}"
        for op in ops
        for name, schema in op.query.items()
        for integer in _integer_schemas(schema)
        if "maximum" not in integer or "minimum" not in integer
    ]
    assert not unbounded, unbounded

"""Fuzz every route of a running Almanac app with generated requests; report every 500.

    python -m perf.fuzz [--requests 10000] [--seconds 600] [--seed 0]

Starts the server of :mod:`perf.fuzz_target` in this process (uvicorn on a loopback port,
a fresh store, a scripted model, a key for every role) and sends it ``--requests``
requests, one at a time over one keep-alive connection, stopping early after ``--seconds``.
Each request is drawn by Hypothesis (seeded with ``--seed``, so a run can be repeated): a
route of the app's OpenAPI description, a key of any role (or none, or a malformed
``Authorization``), path and query values that fit their schema or come from the malformed
corpus (:mod:`perf.malformed`), and a body built from the route's JSON schema, sometimes with
one field replaced by a malformed JSON value (a lone surrogate, NaN, a 31-digit integer, deep
nesting) or replaced whole by a malformed raw body.

Prints the count of requests, of each status class, of connection errors, and every 500 (and
connection error) with its request and the server's logged exception. Exits 1 when there was
any. Hypothesis is in the ``dev`` extra.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

import httpx
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import seed as hypothesis_seed
from hypothesis import strategies as st

from perf.fuzz_target import FuzzTarget, Operation, fuzz_server, operations
from perf.malformed import HEADER_SETS, PATH_VALUES, QUERY_VALUES, RAW_BODIES, VALUE_TEXTS

KEY_CHOICES = (*("admin",) * 8, *("ops", "ops@ws", "analyst", "ml") * 2, None, "invalid")
MARKER = "\x00almanac-fuzz-marker\x00"
MAX_DEPTH = 4
CLIP = 300


@dataclass(frozen=True)
class FuzzRequest:
    method: str
    url: str
    headers: dict[str, str]
    body: bytes | None

    def raw_headers(self) -> list[tuple[bytes, bytes]]:
        """As sent: latin-1 bytes (httpx would refuse a non-ASCII ``str``)."""
        return [(k.encode("latin-1"), v.encode("latin-1")) for k, v in self.headers.items()]

    def describe(self) -> str:
        headers = {
            k: ("<key>" if k == "Authorization" and "alm_" in v else v)
            for k, v in self.headers.items()
        }
        body = "" if self.body is None else f" body({len(self.body)} bytes)={self.body[:CLIP]!r}"
        return f"{self.method} {self.url[:CLIP]} headers={headers}{body}"


@dataclass
class FuzzReport:
    sent: int = 0
    by_class: Counter[str] = field(default_factory=Counter)
    by_status: Counter[int] = field(default_factory=Counter)
    failures: list[str] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def server_errors(self) -> int:
        return self.by_status[500] + self.by_class["connection error"]

    def render(self) -> str:
        classes = ", ".join(f"{name}: {n}" for name, n in sorted(self.by_class.items()))
        statuses = ", ".join(f"{code}: {n}" for code, n in sorted(self.by_status.items()))
        lines = [
            f"requests: {self.sent} in {self.seconds:.1f} s",
            f"by class: {classes}",
            f"by status: {statuses}",
            f"500s and connection errors: {self.server_errors}",
            *self.failures,
        ]
        return "\n".join(lines)


# ------------------------------------------------------------------- schema → strategy
def json_leaf() -> st.SearchStrategy[Any]:
    return st.one_of(
        st.none(),
        st.booleans(),
        st.integers(-(2**40), 2**40),
        st.floats(allow_nan=False, allow_infinity=False),
        st.text(max_size=20),
    )


def any_json(depth: int = 0) -> st.SearchStrategy[Any]:
    if depth >= MAX_DEPTH:
        return json_leaf()
    inner = any_json(depth + 1)
    return st.one_of(
        json_leaf(),
        st.lists(inner, max_size=3),
        st.dictionaries(st.text(max_size=10), inner, max_size=3),
    )


def from_schema(
    schema: dict[str, Any], schemas: dict[str, Any], depth: int = 0
) -> st.SearchStrategy[Any]:
    """Values that (mostly) fit ``schema``: a small JSON Schema subset, as OpenAPI uses it."""
    if depth > MAX_DEPTH:
        return json_leaf()
    if "$ref" in schema:
        return st.deferred(
            lambda: from_schema(schemas[schema["$ref"].rsplit("/", 1)[-1]], schemas, depth + 1)
        )
    for combined in ("anyOf", "oneOf"):
        if combined in schema:
            return st.one_of([from_schema(s, schemas, depth) for s in schema[combined]])
    if "allOf" in schema:
        return from_schema(schema["allOf"][0], schemas, depth)
    if "const" in schema:
        return st.just(schema["const"])
    if "enum" in schema:
        return st.sampled_from(schema["enum"])
    kind = schema.get("type")
    if isinstance(kind, list):
        return st.one_of([from_schema({**schema, "type": k}, schemas, depth) for k in kind])
    build = _BUILDERS.get(kind or "")
    return build(schema, schemas, depth) if build else any_json(depth)


def _string(
    schema: dict[str, Any], _schemas: dict[str, Any], _depth: int
) -> st.SearchStrategy[Any]:
    if "pattern" in schema and re.fullmatch(r"\^\([\w|]+\)\$", schema["pattern"]):
        return st.sampled_from(schema["pattern"][2:-2].split("|"))
    if schema.get("format") == "date-time":
        return st.datetimes().map(lambda d: d.isoformat() + "Z")
    low = schema.get("minLength", 0)
    high = max(low, min(schema.get("maxLength", 40), 40))
    return st.text(min_size=low, max_size=high)


def _integer(
    schema: dict[str, Any], _schemas: dict[str, Any], _depth: int
) -> st.SearchStrategy[Any]:
    low = schema.get("minimum", -(2**31))
    high = schema.get("maximum", 2**31)
    edges = [v for v in (low - 1, high + 1) if abs(v) < 2**63]
    return st.one_of(st.integers(low, high), st.sampled_from(edges or [0]))


def _number(
    schema: dict[str, Any], _schemas: dict[str, Any], _depth: int
) -> st.SearchStrategy[Any]:
    return st.floats(
        schema.get("minimum"), schema.get("maximum"), allow_nan=False, allow_infinity=False
    )


def _array(schema: dict[str, Any], schemas: dict[str, Any], depth: int) -> st.SearchStrategy[Any]:
    items = from_schema(schema.get("items", {}), schemas, depth + 1)
    return st.lists(
        items, min_size=schema.get("minItems", 0), max_size=max(3, schema.get("minItems", 0))
    )


def _object(schema: dict[str, Any], schemas: dict[str, Any], depth: int) -> st.SearchStrategy[Any]:
    properties = schema.get("properties", {})
    required = set(schema.get("required", ()))
    fixed = st.fixed_dictionaries(
        {k: from_schema(v, schemas, depth + 1) for k, v in properties.items() if k in required},
        optional={
            k: from_schema(v, schemas, depth + 1)
            for k, v in properties.items()
            if k not in required
        },
    )
    extra = schema.get("additionalProperties")
    if not extra:
        return fixed
    values = any_json(depth + 1) if extra is True else from_schema(extra, schemas, depth + 1)
    more = st.dictionaries(st.text(max_size=12), values, max_size=3)
    return st.tuples(more, fixed).map(lambda pair: {**pair[0], **pair[1]})


_BUILDERS: dict[str, Callable[[dict[str, Any], dict[str, Any], int], st.SearchStrategy[Any]]] = {
    "string": _string,
    "integer": _integer,
    "number": _number,
    "boolean": lambda _s, _d, _n: st.booleans(),
    "null": lambda _s, _d, _n: st.none(),
    "array": _array,
    "object": _object,
}


# ------------------------------------------------------------------------ requests
def _encoded_json(value: Any, malformed: str | None) -> str:
    text = json.dumps(value)
    return text.replace(json.dumps(MARKER), malformed) if malformed is not None else text


def _with_marker(value: Any, data: st.DataObject, schema: dict[str, Any]) -> Any:
    """``value`` with one field (one the schema names, when it names any) set to MARKER."""
    if not isinstance(value, dict):
        return MARKER
    names = sorted(set(schema.get("properties", {})) | set(value)) or ["x"]
    return {**value, data.draw(st.sampled_from(names)): MARKER}


def draw_body(op: Operation, data: st.DataObject) -> tuple[str | None, bytes]:
    """A body for ``op``: fitting its schema, with one malformed field, or malformed whole."""
    choice = data.draw(st.sampled_from(("fit", "fit", "field", "field", "raw")))
    if choice == "raw" or op.body is None:
        return data.draw(st.sampled_from(RAW_BODIES))
    body_schema = _resolved(op.body, op.schemas)
    value = data.draw(from_schema(op.body, op.schemas))
    malformed = None
    if choice == "field":
        value = _with_marker(value, data, body_schema)
        malformed = data.draw(st.sampled_from(VALUE_TEXTS))
    if op.content_type == "application/x-ndjson":
        more = data.draw(st.lists(from_schema(op.body, op.schemas), max_size=3))
        lines = [_encoded_json(value, malformed), *(json.dumps(v) for v in more)]
        return op.content_type, "\n".join(lines).encode()
    return op.content_type, _encoded_json(value, malformed).encode()


def _resolved(schema: dict[str, Any], schemas: dict[str, Any]) -> dict[str, Any]:
    while "$ref" in schema:
        schema = schemas[schema["$ref"].rsplit("/", 1)[-1]]
    return schema


def _query_value(schema: dict[str, Any], op: Operation, data: st.DataObject) -> list[str]:
    if data.draw(st.booleans()):
        return [data.draw(st.sampled_from(QUERY_VALUES))]
    value = data.draw(from_schema(schema, op.schemas))
    values = value if isinstance(value, list) else [value]
    return [quote(json.dumps(v) if not isinstance(v, str) else v, safe="") for v in values]


def draw_request(op: Operation, target: FuzzTarget, data: st.DataObject) -> FuzzRequest:
    path = op.path
    for name in op.path_params:
        known = target.ids.get(name, [])
        pool = (*known, *known, *PATH_VALUES) if known else PATH_VALUES
        value = data.draw(st.one_of(st.sampled_from(pool), st.text(max_size=12).map(quote)))
        path = path.replace("{" + name + "}", value or "x")
    pairs: list[str] = []
    for name, schema in op.query.items():
        if data.draw(st.booleans()):
            pairs += [f"{name}={v}" for v in _query_value(schema, op, data)]
    if data.draw(st.integers(0, 9)) == 0:
        pairs.append(f"unknown={data.draw(st.sampled_from(QUERY_VALUES))}")
    url = path + ("?" + "&".join(pairs) if pairs else "")
    headers: dict[str, str] = {}
    if data.draw(st.integers(0, 19)) == 0:
        headers.update(data.draw(st.sampled_from(HEADER_SETS)))
    else:
        who = data.draw(st.sampled_from(KEY_CHOICES))
        key = "alm_invalid_key" if who == "invalid" else target.keys.get(who) if who else None
        if key:
            headers["Authorization"] = f"Bearer {key}"
    body = None
    if op.method in ("POST", "PUT", "PATCH") or (
        op.method == "DELETE" and data.draw(st.booleans())
    ):
        content_type, body = draw_body(op, data)
        if content_type is not None and "Content-Type" not in headers:
            headers["Content-Type"] = content_type
    return FuzzRequest(op.method, url, headers, body)


def send(
    client: httpx.Client, request: FuzzRequest, target: FuzzTarget, report: FuzzReport
) -> None:
    report.sent += 1
    try:
        reply = client.request(
            request.method, request.url, headers=request.raw_headers(), content=request.body
        )
    except httpx.LocalProtocolError as exc:  # this client refused to send it: no test
        report.by_class["not sent"] += 1
        report.failures.append(f"NOT SENT {exc}: {request.describe()}")
        return
    except httpx.TransportError as exc:
        report.by_class["connection error"] += 1
        report.failures.append(f"CONNECTION {type(exc).__name__}: {request.describe()}")
        return
    report.by_class[f"{reply.status_code // 100}xx"] += 1
    report.by_status[reply.status_code] += 1
    if reply.status_code == 500:
        logged = _logged_error(reply.text, target)
        report.failures.append(f"500 {request.describe()}\n    -> {reply.text[:CLIP]}{logged}")


def _logged_error(answer: str, target: FuzzTarget) -> str:
    found = re.search(r"internal error ([0-9a-f]+)", answer)
    for record in reversed(target.errors):
        if found and found.group(1) in record.getMessage() and record.exc_info:
            kind, exc = record.exc_info[0], record.exc_info[1]
            return f"\n    logged: {kind.__name__ if kind else '?'}: {str(exc)[:CLIP]}"
    return ""


# --------------------------------------------------------------------------- running
def run(target: FuzzTarget, requests: int, seconds: float, seed: int) -> FuzzReport:
    """Send up to ``requests`` generated requests within ``seconds``."""
    ops = operations(target.app)
    report = FuzzReport()
    started = time.monotonic()
    deadline = started + seconds
    with httpx.Client(base_url=target.base, timeout=60.0) as client:
        round_ = 0
        while report.sent < requests and time.monotonic() < deadline:

            @hypothesis_seed(seed * 1000 + round_)
            @settings(
                max_examples=requests - report.sent,
                phases=[Phase.generate],
                database=None,
                deadline=None,
                suppress_health_check=list(HealthCheck),
            )
            @given(st.data())
            def one(data: st.DataObject) -> None:
                if report.sent >= requests or time.monotonic() > deadline:
                    return
                op = data.draw(st.sampled_from(ops))
                send(client, draw_request(op, target, data), target, report)

            one()
            round_ += 1
    report.seconds = time.monotonic() - started
    return report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=10_000)
    parser.add_argument("--seconds", type=float, default=600.0)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    with fuzz_server() as target:
        routes = operations(target.app)
        print(f"fuzzing {len(routes)} routes: " + ", ".join(f"{o.method} {o.path}" for o in routes))
        report = run(target, args.requests, args.seconds, args.seed)
    print(report.render())
    return 1 if report.server_errors else 0


if __name__ == "__main__":
    sys.exit(main())

"""Malformed inputs that have crashed, or could crash, an HTTP JSON API: a fixed corpus.

The malformed-input test (``tests/server/test_malformed_inputs.py``) sends each of them to
every route; the fuzzer (:mod:`perf.fuzz`) mixes them into generated requests. Each list holds
what one part of a request can carry: a JSON value inside a body, a whole raw body (with its
content type), a path segment, a query value, a header.
"""

from __future__ import annotations

LONG = "x" * 20_000


def _nested(depth: int, leaf: str = "1") -> bytes:
    return ("[" * depth + leaf + "]" * depth).encode()


def _nested_objects(depth: int) -> bytes:
    return ('{"a":' * depth + "1" + "}" * depth).encode()


# JSON values a field may be given, written as JSON text (so NaN and lone surrogates survive)
VALUE_TEXTS: tuple[str, ...] = (
    '"abc \\ud800 def"',  # a lone high surrogate
    '"\\udfff"',  # a lone low surrogate
    '"\\ud83d\\ude00 ok"',  # a valid pair (an emoji): must be accepted
    "NaN",
    "Infinity",
    "-Infinity",
    "1e999",
    "-1e999",
    "1" * 31,
    "-" + "9" * 25,
    "9223372036854775808",  # 2**63
    "-9223372036854775809",
    "1" * 5000,  # past Python's int-string limit
    "1.5e-400",  # underflows to 0.0: fine
    "0",
    "-1",
    "true",
    "null",
    '""',
    "[]",
    "{}",
    '"\\u0000"',
    '"\\u202e\\u200b"',
    f'"{LONG}"',
    '["' + '","'.join(["a"] * 3000) + '"]',
    '{"$ref": "#"}',
    '"../../etc/passwd"',
    '"\'; DROP TABLE knowledge; --"',
    '"<script>alert(1)</script>"',
    _nested(300).decode(),
    _nested_objects(100).decode(),
)

# whole request bodies: (content type or None, raw bytes)
RAW_BODIES: tuple[tuple[str | None, bytes], ...] = (
    ("application/json", b'{"question":"abc \\ud800 def"}'),
    ("application/json", b'{"mode":"string","query":"\\ud800"}'),
    ("application/json", b'{"\\ud800":1}'),
    ("application/json", b"NaN"),
    ("application/json", b'{"limit": NaN, "n": Infinity}'),
    ("application/json", b""),
    ("application/json", b"{"),
    ("application/json", b'{"a":1,}'),
    ("application/json", b"null"),
    ("application/json", b"[]"),
    ("application/json", b'"just a string"'),
    ("application/json", b"123"),
    ("application/json", b"\xff\xfe\x00"),  # not UTF-8
    ("application/json", b'{"question":"\xed\xa0\x80"}'),  # a surrogate encoded as UTF-8 bytes
    ("application/json", b"\xef\xbb\xbf{}"),  # a UTF-8 byte order mark
    ("application/json", "{}".encode("utf-16")),
    ("application/json", b"{}\x00"),
    ("application/json", _nested(100_000)),
    ("application/json", _nested(5_000)),
    ("application/json", _nested_objects(300)),
    ("application/json", b'{"a":' + b"1" * 5000 + b"}"),
    ("application/json", b'{"a":1e400}'),
    ("application/json", b'{"a":' * 50 + b"1" + b"}" * 49),  # truncated
    ("application/json", b'{"x":"' + b"y" * 500_000 + b'"}'),
    ("application/json", b'{"a":1,"a":2}'),
    ("application/json; charset=latin-1", b'{"question":"caf\xe9"}'),
    ("application/json", b'{"type":"knowledge","name":"x","priority":' + b"9" * 30 + b"}"),
    ("text/plain", b'{"question":"hi"}'),
    ("application/x-www-form-urlencoded", b"question=hi&a=%FF"),
    ("multipart/form-data", b"--x\r\n"),
    ("multipart/form-data; boundary=x", b"--x\r\nContent-Disposition: form-data\r\n\r\n--x--"),
    ("application/xml", b"<a>&lt;</a>"),
    ("application/x-ndjson", b'{"type":"knowledge","name":"a"}\n{"name":"\\ud800"}\n'),
    ("application/x-ndjson", b'{"type":"knowledge","name":"a","priority":NaN}\n'),
    ("application/x-ndjson", b"\n\n\n"),
    (
        "application/x-ndjson",
        b'{"type":"knowledge","name":"deep","metadata":' + _nested(400) + b"}",
    ),
    ("a/b/c;;;=", b"{}"),
    (None, b'{"question":"hi"}'),
    (None, b"\x00\x01\x02"),
)

# path segments (already percent-encoded where needed)
PATH_VALUES: tuple[str, ...] = (
    "x",
    "0",
    "-1",
    "9" * 40,
    "%00",
    "%FF%FE",
    "%ED%A0%80",  # a surrogate, UTF-8 encoded
    "%C0%AF",  # an overlong slash
    "..%2F..%2Fetc%2Fpasswd",
    "%20",
    "null",
    "%F0%9F%98%80",
    "a" * 4000,
    "%25",
    "NaN",
)

# query values (already percent-encoded where needed)
QUERY_VALUES: tuple[str, ...] = (
    "1000000000000000000000000000000",
    "-1000000000000000000000000000000",
    "9223372036854775808",
    "-1",
    "0",
    "NaN",
    "inf",
    "1e999",
    "1.5",
    "",
    "%00",
    "%FF%FE",
    "%ED%A0%80",
    "true",
    "all",
    "x" * 5000,
    "[]",
    "%5B%7B%7D%5D",
    "'%20OR%201=1--",
)

# header sets sent in place of a well-formed key (the value must be latin-1 encodable)
HEADER_SETS: tuple[dict[str, str], ...] = (
    {"Authorization": "Bearer"},
    {"Authorization": "Bearer  alm_a_b c"},
    {"Authorization": "Basic YWRtaW46YWRtaW4="},
    {"Authorization": "Bearer alm_x_y"},
    {"Authorization": "Bearer alm_" + "a" * 8000},
    {"Authorization": "Bearer alm_\xff\xfe_\xe9"},
    {"Authorization": "bEaReR\talm_x"},
    {"X-API-Key": ""},
    {"X-API-Key": "alm_\xe9"},
    {"X-API-Key": "' OR 1=1 --"},
    {"Accept": "application/xml"},
    {"Accept-Encoding": "gzip;q=NaN, br;q=-1"},
    {"Content-Type": "application/json; charset=\xe9"},
    {"Range": "bytes=0-1,-5"},
    {"X-Forwarded-For": "\xff"},
    {"Cookie": "a=" + "b" * 4000},
)

"""kb.strict_json: JSON that can be stored and sent back, or a short StrictJSONError."""

from __future__ import annotations

import json

import pytest

from kb.strict_json import MAX_DEPTH, StrictJSONError, loads_strict


@pytest.mark.parametrize(
    ("text", "words"),
    [
        (r'{"question":"abc \ud800 def"}', "the string at question holds a lone UTF-16 surrogate"),
        (r'{"a":[1,{"b":"\udfff"}]}', "a[1].b"),
        (r'{"\ud800":1}', "a key holds"),
        ("NaN", "NaN is not a JSON number"),
        ('{"n": -Infinity}', "-Infinity"),
        ("[1e999]", "not finite"),
        ("1" * 31, "31 digits"),
        ("1" * 5000, "5000 digits"),
        ("9223372036854775808", "out of range"),
        ("[" * (MAX_DEPTH + 2) + "]" * (MAX_DEPTH + 2), "nested deeper"),
        ("[" * 100_000 + "]" * 100_000, "nested deeper"),  # past the parser's own recursion
    ],
)
def test_refused_with_a_short_message(text, words):
    with pytest.raises(StrictJSONError) as caught:
        loads_strict(text)
    assert words in str(caught.value) and len(str(caught.value)) < 200


@pytest.mark.parametrize(
    "text",
    [
        '{"a": 1, "b": [true, null, "x"]}',
        r'"\ud83d\ude00"',  # a valid surrogate pair
        "-9223372036854775808",
        "1.5e300",
        "1e-400",
        '"NaN and Infinity are fine inside strings, and so is 12345678901234567890"',
        "[" * MAX_DEPTH + "]" * MAX_DEPTH,
    ],
)
def test_accepted_as_json_loads_reads_it(text):
    assert loads_strict(text) == json.loads(text)


def test_malformed_json_is_still_a_decode_error():
    with pytest.raises(json.JSONDecodeError):
        loads_strict(r'{"a": "\ud800"')  # suspect, parsed strictly, and still malformed

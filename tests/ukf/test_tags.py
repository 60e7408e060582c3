import pytest

from ukf import MalformedTagError, format_tag, parse_tag, tag_values, tags_by_slot
from ukf.tags import normalize_tags, sanitize_tag_value


def test_a_tag_parses_into_slot_and_value():
    assert parse_tag("[TABLE:orders]") == ("TABLE", "orders")
    assert str(parse_tag("[ table :orders ]")) == "[TABLE:orders]"


def test_the_first_colon_separates_slot_and_value():
    assert parse_tag("[TIME:2025-01-01T10:00]").value == "2025-01-01T10:00"


@pytest.mark.parametrize("bad", ["orders", "[TABLE]", "[:x]", "[TABLE:]", "[1A:x]", "TABLE:x"])
def test_malformed_tags_are_refused_with_the_tag_in_the_message(bad):
    with pytest.raises(MalformedTagError, match=repr(bad).replace("[", r"\[")):
        parse_tag(bad)


def test_tags_are_normalised_deduplicated_and_sorted():
    assert normalize_tags(["[table:b]", "[TABLE:a]", "[TABLE:b]"]) == ("[TABLE:a]", "[TABLE:b]")


def test_helpers_group_and_select_values():
    tags = ["[DATABASE:x]", "[TABLE:a]", "[TABLE:b]"]
    assert tag_values(tags, "table") == ["a", "b"]
    assert tags_by_slot(tags) == {"DATABASE": ["x"], "TABLE": ["a", "b"]}
    assert format_tag("column", "amt") == "[COLUMN:amt]"


def test_any_value_can_be_made_tag_safe():
    assert sanitize_tag_value("a]\n b") == "a) b"
    assert sanitize_tag_value("   ") == "(blank)"
    assert parse_tag(format_tag("ENUM", sanitize_tag_value("x]y"))).value == "x)y"

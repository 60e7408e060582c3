"""Built-in triggers: conditions on the question's context that switch knowledge on.

A UKF stores ``triggers`` as ``{name: arguments}``; arguments are plain JSON. The context is a
mapping with ``query_time`` (datetime or ISO string), ``user_profile`` (dict), ``workspace``
and ``user``. A trigger that needs a value the context lacks answers False.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from ukf.registry import trigger


def query_time_of(context: Mapping[str, Any]) -> datetime | None:
    """The context's ``query_time`` as an aware datetime (ISO strings parsed; naive = UTC)."""
    value = context.get("query_time")
    if isinstance(value, str):
        value = datetime.fromisoformat(value)
    if isinstance(value, datetime) and value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    return value if isinstance(value, datetime) else None


def _as_list(value: Any) -> list[Any]:
    return list(value) if isinstance(value, list | tuple | set) else [value]


@trigger("always")
def always(_ukf: Any, _context: Mapping[str, Any]) -> bool:
    return True


@trigger("query_time_window")
def query_time_window(
    _ukf: Any,
    context: Mapping[str, Any],
    *,
    after: str | None = None,
    before: str | None = None,
    day_of_month_from: int | None = None,
    day_of_month_to: int | None = None,
    months: list[int] | None = None,
    weekdays: list[int] | None = None,
) -> bool:
    """Query time within bounds: ISO ``after``/``before``, a day-of-month range, months, weekdays.

    Example: "before the 10th, *this month* means the previous month" is
    ``{"query_time_window": {"day_of_month_to": 9}}``.
    """
    when = query_time_of(context)
    if when is None:
        return False
    checks = [
        after is None or when >= query_time_of({"query_time": after}),
        before is None or when < query_time_of({"query_time": before}),
        day_of_month_from is None or when.day >= day_of_month_from,
        day_of_month_to is None or when.day <= day_of_month_to,
        months is None or when.month in months,
        weekdays is None or when.weekday() in weekdays,
    ]
    return all(checks)


@trigger("user_profile_match")
def user_profile_match(_ukf: Any, context: Mapping[str, Any], **expected: Any) -> bool:
    """Every ``key: value`` (or ``key: [values]``) matches the user profile, case-insensitively."""
    profile = context.get("user_profile") or {}
    for key, allowed in expected.items():
        if key not in profile:
            return False
        wanted = {str(v).casefold() for v in _as_list(allowed)}
        if str(profile[key]).casefold() not in wanted:
            return False
    return True


@trigger("workspace_in")
def workspace_in(_ukf: Any, context: Mapping[str, Any], *, workspaces: list[str]) -> bool:
    return context.get("workspace") in set(workspaces)

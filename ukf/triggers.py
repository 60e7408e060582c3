"""Built-in triggers: conditions on the question's context that switch knowledge on.

A UKF stores ``triggers`` as ``{name: arguments}``; arguments are plain JSON. Each trigger is
called as ``trigger(entry, context, **arguments)`` with the question's
:class:`~ukf.context.QueryContext` (query time, user profile, reader). A trigger that needs a
value the context lacks answers False.
"""

from __future__ import annotations

from typing import Any

from ukf.context import QueryContext, parse_time
from ukf.registry import trigger


def _as_list(value: Any) -> list[Any]:
    return list(value) if isinstance(value, list | tuple | set) else [value]


@trigger("always")
def always(_ukf: Any, _context: QueryContext) -> bool:
    return True


@trigger("query_time_window")
def query_time_window(
    _ukf: Any,
    context: QueryContext,
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
    when = context.aware_query_time
    if when is None:
        return False
    checks = [
        after is None or when >= parse_time(after),
        before is None or when < parse_time(before),
        day_of_month_from is None or when.day >= day_of_month_from,
        day_of_month_to is None or when.day <= day_of_month_to,
        months is None or when.month in months,
        weekdays is None or when.weekday() in weekdays,
    ]
    return all(checks)


@trigger("user_profile_match")
def user_profile_match(_ukf: Any, context: QueryContext, **expected: Any) -> bool:
    """Every ``key: value`` (or ``key: [values]``) matches the user profile, case-insensitively."""
    profile = context.user_profile
    for key, allowed in expected.items():
        if key not in profile:
            return False
        wanted = {str(v).casefold() for v in _as_list(allowed)}
        if str(profile[key]).casefold() not in wanted:
            return False
    return True


@trigger("workspace_in")
def workspace_in(_ukf: Any, context: QueryContext, *, workspaces: list[str]) -> bool:
    return context.workspace in set(workspaces)

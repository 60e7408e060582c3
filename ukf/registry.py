"""Registries of composers, triggers and UKF types.

Stored knowledge refers to composers and triggers by **name** only; the functions live in code
and are registered with the decorators below. Loading a knowledge base therefore never executes
anything that came from the data.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from ukf.errors import UnknownComposerError, UnknownTriggerError, UnknownTypeError

if TYPE_CHECKING:
    from ukf.base import BaseUKF
    from ukf.context import QueryContext

Composer = Callable[..., str]
"""``composer(ukf, **context) -> str``."""
Trigger = Callable[..., bool]
"""``trigger(ukf, context, **arguments) -> bool``."""

_COMPOSERS: dict[str, Composer] = {}
_TRIGGERS: dict[str, Trigger] = {}
_TYPES: dict[str, type[BaseUKF]] = {}


def composer(name: str) -> Callable[[Composer], Composer]:
    """Register a composer under ``name``: ``@composer("table")``."""

    def register(function: Composer) -> Composer:
        _COMPOSERS[name] = function
        return function

    return register


def trigger(name: str) -> Callable[[Trigger], Trigger]:
    """Register a trigger under ``name``: ``@trigger("query_time_window")``."""

    def register(function: Trigger) -> Trigger:
        _TRIGGERS[name] = function
        return function

    return register


def get_composer(name: str) -> Composer:
    try:
        return _COMPOSERS[name]
    except KeyError:
        raise UnknownComposerError(
            f"unknown composer {name!r}; registered: {sorted(_COMPOSERS)}"
        ) from None


def get_trigger(name: str) -> Trigger:
    try:
        return _TRIGGERS[name]
    except KeyError:
        raise UnknownTriggerError(
            f"unknown trigger {name!r}; registered: {sorted(_TRIGGERS)}"
        ) from None


def register_type(type_name: str, cls: type[BaseUKF]) -> None:
    """Map a UKF ``type`` string to its template class (done by ``BaseUKF`` subclassing)."""
    existing = _TYPES.get(type_name)
    if existing is not None and existing.__qualname__ != cls.__qualname__:
        raise ValueError(f"UKF type {type_name!r} already registered by {existing.__qualname__}")
    _TYPES[type_name] = cls


def type_for(type_name: object) -> type[BaseUKF]:
    """The template class for ``type_name``; raise :class:`UnknownTypeError` otherwise."""
    try:
        return _TYPES[type_name]  # type: ignore[index]
    except (KeyError, TypeError):
        raise UnknownTypeError(
            f"unknown UKF type {type_name!r} in field 'type'; known: {sorted(_TYPES)}"
        ) from None


def type_names() -> list[str]:
    return sorted(_TYPES)


def evaluate_triggers(ukf: BaseUKF, context: QueryContext) -> bool:
    """True when every trigger named on ``ukf`` accepts ``context`` (no triggers: True)."""
    return all(get_trigger(name)(ukf, context, **args) for name, args in ukf.triggers.items())

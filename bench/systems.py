"""Systems under benchmark: anything that turns a question into SQL.

A system implements :class:`System`: ``predict(example, dialect)`` returns a
:class:`Prediction`. Systems that learn while they run (lifelong learning) also implement
``observe(example, prediction, gold_revealed)``, which the streaming runner calls after each
question. Systems are registered by name with :func:`register_system`; the agent systems are
registered by the agents package later. ``gold`` answers with the gold SQL (a harness check:
it must score 1.0).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol, runtime_checkable

from pydantic import BaseModel, Field

from bench.datasets import Example


class Prediction(BaseModel):
    """A system's answer to one question.

    ``alternatives`` are other answers the system produced on the way, by name (a voting
    system's greedy candidate, say): the runner scores each like the answer, so one run
    compares the vote with what a single greedy draw would have answered, question by question.
    """

    sql: str | None = None
    error: str | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)
    alternatives: dict[str, str] = Field(default_factory=dict)


@runtime_checkable
class System(Protocol):
    name: str

    def predict(self, example: Example, dialect: str) -> Prediction: ...


@runtime_checkable
class LearningSystem(System, Protocol):
    def observe(self, example: Example, prediction: Prediction, gold_revealed: bool) -> None: ...


SystemFactory = Callable[..., System]
_SYSTEMS: dict[str, SystemFactory] = {}


def register_system(name: str) -> Callable[[SystemFactory], SystemFactory]:
    """Register a system factory under ``name``: ``@register_system("gold")``."""

    def register(factory: SystemFactory) -> SystemFactory:
        _SYSTEMS[name] = factory
        return factory

    return register


def make_system(name: str, **options: Any) -> System:
    """Build the system registered as ``name``."""
    _register_builtin()
    try:
        factory = _SYSTEMS[name]
    except KeyError:
        raise KeyError(f"unknown system {name!r}; registered: {sorted(_SYSTEMS)}") from None
    return factory(**options)


def system_names() -> list[str]:
    _register_builtin()
    return sorted(_SYSTEMS)


def _register_builtin() -> None:
    """Import the LLM systems (registered on import; they load models only when built)."""
    import bench.agent_systems  # noqa: F401


@register_system("gold")
class GoldSystem:
    """Answers with the canonical gold SQL: every metric must come out at 1.0."""

    name = "gold"

    def __init__(self, **_options: Any) -> None:
        """Model options of the LLM systems do not apply."""

    def predict(self, example: Example, dialect: str) -> Prediction:
        return Prediction(sql=example.gold_for(dialect)[0])

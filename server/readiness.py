"""What the server still warms up after start, per component (:class:`Readiness`), and the
warm-up itself (:class:`WarmUp`, started by the app's lifespan).

Components, registered when the warm-up starts:

- ``indices``: the first build of the index set;
- ``model:<tier>``: each ask tier's model, loaded at start (``ALMANAC_WARM_ON_START``);
- ``prefill``: the target's shared prompt prefix prefilled into those models (``agents.warm``).

Each is ``starting`` (not begun: waiting for another), ``warming`` (under way), then ``ready``,
``skipped`` (nothing to do) or ``failed`` (with the error). The overall status
(:meth:`Readiness.overall`, what ``/v1/health`` says) is ``starting`` while the indices build,
``warming`` while a model loads or the prefill runs, and ``ready`` when a question is answered
at once; ``degraded`` when the indices or a model failed (a failed prefill only costs speed).

Every change wakes the threads that wait for one (:meth:`Readiness.wait_settled`,
:meth:`Readiness.wait_changed`): questions that arrive during the warm-up, the line printed
when the server is ready.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum
from typing import TYPE_CHECKING, Any

from agents.warm import WarmReport, warm_pipeline
from indices.index_set import IndexSet

if TYPE_CHECKING:
    from server.ask_service import AskService

log = logging.getLogger(__name__)
INDICES, PREFILL, MODEL_PREFIX = "indices", "prefill", "model:"


class Phase(StrEnum):
    STARTING = "starting"
    WARMING = "warming"
    READY = "ready"
    SKIPPED = "skipped"
    FAILED = "failed"

    @property
    def settled(self) -> bool:
        """Whether nothing more will happen to the component."""
        return self in (Phase.READY, Phase.SKIPPED, Phase.FAILED)


@dataclass(frozen=True)
class Component:
    """One component's phase, since when (seconds after start), and why (failed, skipped)."""

    name: str
    phase: Phase
    after_s: float
    detail: str | None = None

    @property
    def essential(self) -> bool:
        """Whether questions fail without it (the prefill only saves time)."""
        return self.name != PREFILL

    def to_json(self) -> dict[str, Any]:
        body: dict[str, Any] = {"state": self.phase.value, "after_s": round(self.after_s, 1)}
        if self.detail:
            body["detail"] = self.detail
        return body


def model_component(tier: str) -> str:
    return f"{MODEL_PREFIX}{tier}"


class Readiness:
    """The components' phases (thread-safe); ``started`` is the server's start
    (``time.monotonic()``, default now)."""

    def __init__(self, started: float | None = None) -> None:
        self.started = time.monotonic() if started is None else started
        self._components: dict[str, Component] = {}
        self._version = 0
        self._cond = threading.Condition()

    def add(self, name: str) -> None:
        """Register ``name`` as ``starting`` (kept as it is when already registered)."""
        with self._cond:
            if name not in self._components:
                self._set(name, Phase.STARTING, None)

    def mark(self, name: str, phase: Phase, detail: str | None = None) -> None:
        """Move ``name`` to ``phase`` (registering it when new)."""
        with self._cond:
            self._set(name, phase, detail)

    def _set(self, name: str, phase: Phase, detail: str | None) -> None:
        after = time.monotonic() - self.started
        self._components[name] = Component(name, phase, after, detail)
        self._version += 1
        self._cond.notify_all()

    def components(self) -> list[Component]:
        """Every component, in the order registered."""
        with self._cond:
            return list(self._components.values())

    def get(self, name: str) -> Component | None:
        with self._cond:
            return self._components.get(name)

    def overall(self) -> str:
        """``starting``, ``warming``, ``ready`` or ``degraded`` (see the module docstring)."""
        return overall_of(self.components())

    def wait_settled(self, names: Iterable[str], until: float | None = None) -> list[str]:
        """Wait until every registered one of ``names`` is settled, at most until ``until``
        (``time.monotonic()``; None: no limit); the names still unsettled (empty: none)."""
        wanted = list(names)
        with self._cond:
            while pending := self._unsettled(wanted):
                left = None if until is None else until - time.monotonic()
                if left is not None and left <= 0:
                    return pending
                self._cond.wait(left)
            return []

    def _unsettled(self, names: list[str]) -> list[str]:
        found = (self._components.get(name) for name in names)
        return [c.name for c in found if c is not None and not c.phase.settled]

    def wait_changed(self, seen: int, timeout: float | None = None) -> int:
        """Wait until the state has moved past version ``seen`` (0: the start); the version now."""
        with self._cond:
            self._cond.wait_for(lambda: self._version != seen, timeout)
            return self._version

    def describe(self) -> dict[str, dict[str, Any]]:
        """The components for ``/v1/health``: ``{name: {state, after_s[, detail]}}``."""
        return {c.name: c.to_json() for c in self.components()}


def overall_of(components: Iterable[Component]) -> str:
    """The overall status of ``components`` (see the module docstring)."""
    found = {c.name: c for c in components}
    if any(c.essential and c.phase is Phase.FAILED for c in found.values()):
        return "degraded"
    indices = found.get(INDICES)
    if indices is not None and not indices.phase.settled:
        return "starting"
    if any(not c.phase.settled for c in found.values()):
        return "warming"
    return "ready"


class WarmUp:
    """The server's warm-up, each step recorded in ``readiness``: follow the first build of
    ``indices``; with models, load each of the ask tiers' models (``asks.llms``), then, once
    the indices are built, prefill them with the target's shared prompt prefix
    (:func:`agents.warm.warm_pipeline`), each call taking the warm-up's turn at the LLM gate
    (after every question in progress: a question asked meanwhile is served first)."""

    def __init__(self, readiness: Readiness, indices: IndexSet, asks: AskService) -> None:
        self.readiness, self.indices, self.asks = readiness, indices, asks

    def start(self, *, models: bool) -> list[threading.Thread]:
        """Register the components, then warm up in daemon threads; ``models``: load and
        prefill the models too (when a target and LLM tiers are configured)."""
        self.readiness.add(INDICES)
        self.readiness.mark(INDICES, Phase.WARMING)
        threads = [threading.Thread(target=self._follow_indices, name="almanac-ready-indices")]
        if models and self.asks.target is not None and self.asks.llms is not None:
            for name in self.asks.ask_tiers():
                self.readiness.add(model_component(name))
            self.readiness.add(PREFILL)
            threads.append(threading.Thread(target=self._run_logged, name="almanac-warm"))
        for thread in threads:
            thread.daemon = True
            thread.start()
        return threads

    def _follow_indices(self) -> None:
        self.indices.wait_settled()
        status = self.indices.status()
        if status["ready"]:
            self.readiness.mark(INDICES, Phase.READY)
        elif status["error"]:
            self.readiness.mark(INDICES, Phase.FAILED, status["error"])

    def _run_logged(self) -> None:
        try:
            self.run()
        except Exception as exc:
            log.exception("warming the models failed; the first question will be slower")
            self.readiness.mark(PREFILL, Phase.FAILED, f"{type(exc).__name__}: {exc}")

    def run(self) -> WarmReport | None:
        """Load the models (a failure is marked and logged), then prefill them."""
        for name in self.asks.ask_tiers():
            self._load(name)
        self.indices.wait_settled()
        if not self.indices.status()["ready"]:
            self.readiness.mark(PREFILL, Phase.SKIPPED, "the indices are not built")
            return None
        self.readiness.mark(PREFILL, Phase.WARMING)
        report = warm_pipeline(self.asks.pipeline(), self.asks.warm_up_tiers())
        if report.error:
            self.readiness.mark(PREFILL, Phase.FAILED, report.error)
        elif not report.models:
            reason = "no prompt prefix shared by every question (schema sliced or not profiled)"
            self.readiness.mark(PREFILL, Phase.SKIPPED, reason)
        else:
            self.readiness.mark(PREFILL, Phase.READY)
        return report

    def _load(self, name: str) -> None:
        assert self.asks.llms is not None
        component = model_component(name)
        self.readiness.mark(component, Phase.WARMING)
        try:
            self.asks.llms.get(name)
        except Exception as exc:
            log.exception("loading the model of LLM tier %s failed", name)
            self.readiness.mark(component, Phase.FAILED, f"{type(exc).__name__}: {exc}")
        else:
            self.readiness.mark(component, Phase.READY)

"""Prometheus metrics, kept in memory and rendered as text (exposition format 0.0.4).

What is measured:

- ``almanac_http_requests_total{method,route,status}`` and
  ``almanac_http_request_duration_seconds{method,route}`` (histogram), by route template;
- ``almanac_stage_duration_seconds{stage}``: stages of a request or job (``search.string``,
  ``job.profile``, and the ask pipeline's ``evidence``, ``candidates``, ``vote``, ...);
- ``almanac_llm_tokens_total{tier,kind}``, ``almanac_llm_calls_total{tier,outcome}`` and
  ``almanac_llm_duration_seconds{tier}``;
- ``almanac_jobs_finished_total{kind,state}``, ``almanac_rate_limited_total``;
- gauges computed when scraped (:meth:`Metrics.add_gauge`): jobs per state, the LLM gate,
  the store version.
"""

from __future__ import annotations

import bisect
import contextlib
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence

from starlette.types import ASGIApp, Message, Receive, Scope, Send

DEFAULT_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60)
Labels = tuple[str, ...]
GaugeFunction = Callable[[], Mapping[Labels, float]]


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _labels(names: Sequence[str], values: Sequence[str], extra: str = "") -> str:
    parts = [f'{n}="{_escape(str(v))}"' for n, v in zip(names, values, strict=True)]
    if extra:
        parts.append(extra)
    return "{" + ",".join(parts) + "}" if parts else ""


def _number(value: float) -> str:
    if value == float("inf"):
        return "+Inf"
    return repr(float(value)) if not float(value).is_integer() else str(int(value))


class Counter:
    def __init__(self, name: str, help: str, labels: Sequence[str] = ()) -> None:
        self.name, self.help, self.label_names = name, help, tuple(labels)
        self._values: dict[Labels, float] = {}
        self._lock = threading.Lock()

    def inc(self, *labels: str, amount: float = 1.0) -> None:
        with self._lock:
            self._values[labels] = self._values.get(labels, 0.0) + amount

    def value(self, *labels: str) -> float:
        return self._values.get(labels, 0.0)

    def render(self) -> list[str]:
        lines = [f"# HELP {self.name} {self.help}", f"# TYPE {self.name} counter"]
        with self._lock:
            items = sorted(self._values.items())
        lines += [f"{self.name}{_labels(self.label_names, k)} {_number(v)}" for k, v in items]
        return lines


class Histogram:
    def __init__(
        self,
        name: str,
        help: str,
        labels: Sequence[str] = (),
        buckets: Sequence[float] = DEFAULT_BUCKETS,
    ) -> None:
        self.name, self.help, self.label_names = name, help, tuple(labels)
        self.buckets = tuple(sorted(buckets))
        self._series: dict[Labels, list[float]] = {}  # bucket counts..., +Inf, sum
        self._lock = threading.Lock()

    def observe(self, value: float, *labels: str) -> None:
        index = bisect.bisect_left(self.buckets, value)
        with self._lock:
            series = self._series.get(labels)
            if series is None:
                series = self._series[labels] = [0.0] * (len(self.buckets) + 2)
            series[index] += 1
            series[-1] += value

    def count(self, *labels: str) -> int:
        series = self._series.get(labels)
        return int(sum(series[:-1])) if series else 0

    def render(self) -> list[str]:
        lines = [f"# HELP {self.name} {self.help}", f"# TYPE {self.name} histogram"]
        with self._lock:
            items = sorted((k, list(v)) for k, v in self._series.items())
        for labels, series in items:
            cumulative = 0.0
            for bound, count in zip((*self.buckets, float("inf")), series[:-1], strict=True):
                cumulative += count
                le = f'le="{_number(bound)}"'
                lines.append(
                    f"{self.name}_bucket{_labels(self.label_names, labels, le)} "
                    f"{_number(cumulative)}"
                )
            label_text = _labels(self.label_names, labels)
            lines.append(f"{self.name}_sum{label_text} {_number(series[-1])}")
            lines.append(f"{self.name}_count{label_text} {_number(cumulative)}")
        return lines


class Gauge:
    """A gauge whose values are computed when scraped."""

    def __init__(self, name: str, help: str, labels: Sequence[str], read: GaugeFunction) -> None:
        self.name, self.help, self.label_names, self.read = name, help, tuple(labels), read

    def render(self) -> list[str]:
        lines = [f"# HELP {self.name} {self.help}", f"# TYPE {self.name} gauge"]
        values = sorted(self.read().items())
        lines += [f"{self.name}{_labels(self.label_names, k)} {_number(v)}" for k, v in values]
        return lines


class Metrics:
    """Every metric of one server process."""

    def __init__(self) -> None:
        self.requests = Counter(
            "almanac_http_requests_total", "HTTP requests", ("method", "route", "status")
        )
        self.request_seconds = Histogram(
            "almanac_http_request_duration_seconds",
            "HTTP request latency until the response is complete",
            ("method", "route"),
        )
        self.stage_seconds = Histogram(
            "almanac_stage_duration_seconds", "Latency of a pipeline or job stage", ("stage",)
        )
        self.llm_tokens = Counter("almanac_llm_tokens_total", "LLM tokens", ("tier", "kind"))
        self.llm_calls = Counter("almanac_llm_calls_total", "LLM calls", ("tier", "outcome"))
        self.llm_seconds = Histogram("almanac_llm_duration_seconds", "LLM call latency", ("tier",))
        self.jobs_finished = Counter(
            "almanac_jobs_finished_total", "Jobs that ended, by final state", ("kind", "state")
        )
        self.rate_limited = Counter(
            "almanac_rate_limited_total", "Requests refused by the per-key rate limit"
        )
        self._gauges: list[Gauge] = []

    def add_gauge(self, name: str, help: str, labels: Sequence[str], read: GaugeFunction) -> None:
        self._gauges.append(Gauge(name, help, labels, read))

    def observe_stage(self, stage: str, seconds: float) -> None:
        self.stage_seconds.observe(seconds, stage)

    @contextlib.contextmanager
    def stage(self, name: str) -> Iterator[None]:
        """Time the ``with`` block as stage ``name`` (recorded even when it raises)."""
        started = time.perf_counter()
        try:
            yield
        finally:
            self.observe_stage(name, time.perf_counter() - started)

    def record_llm(
        self,
        tier: str,
        seconds: float,
        *,
        outcome: str = "ok",
        prompt_tokens: int = 0,
        completion_tokens: int = 0,
    ) -> None:
        self.llm_calls.inc(tier, outcome)
        self.llm_seconds.observe(seconds, tier)
        if prompt_tokens:
            self.llm_tokens.inc(tier, "prompt", amount=prompt_tokens)
        if completion_tokens:
            self.llm_tokens.inc(tier, "completion", amount=completion_tokens)

    def render(self) -> str:
        lines: list[str] = []
        metrics: list[Counter | Histogram | Gauge] = [
            self.requests,
            self.request_seconds,
            self.stage_seconds,
            self.llm_tokens,
            self.llm_calls,
            self.llm_seconds,
            self.jobs_finished,
            self.rate_limited,
            *self._gauges,
        ]
        for metric in metrics:
            lines += metric.render()
        return "\n".join(lines) + "\n"


class MetricsMiddleware:
    """Counts every HTTP request by method, route template and status, and times it."""

    def __init__(self, app: ASGIApp, *, metrics: Metrics) -> None:
        self.app, self.metrics = app, metrics

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        status = 500

        async def recording_send(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, recording_send)
        finally:
            route = _route_of(scope)
            method = scope["method"]
            self.metrics.requests.inc(method, route, str(status))
            self.metrics.request_seconds.observe(time.perf_counter() - started, method, route)


def _route_of(scope: Scope) -> str:
    """The matched route template (bounded label values); ``unmatched`` otherwise."""
    route = scope.get("route")
    return getattr(route, "path", None) or "unmatched"

"""What every judge protocol shares: the judge, its prompts, its log, and reading its replies.

A *judge* is any object with the LLM interface (``chat(messages, **options) -> ChatResult``,
:mod:`agents.llm.base`): the embedded model, an OpenAI-compatible endpoint, or a scripted one
in tests. :func:`ask` renders a prompt from ``bench/judge/prompts/``, asks the judge for a JSON
reply, parses it with the protocol's parser and records the exchange in a :class:`JudgeLog`
(one JSON line per call: protocol, item id, step, the prompt messages, the raw reply, and the
parsed verdict or the error). A reply that cannot be parsed, or a judge that fails, gives a
:class:`Verdict` with ``error`` set and no value; the protocols score it as failed and go on.
"""

from __future__ import annotations

import json
import logging
import re
import threading
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import IO, Any

from jinja2 import Environment, FileSystemLoader, StrictUndefined

from agents.llm.base import LLM, LLMError, LLMOutputError, Message

log = logging.getLogger(__name__)
PROMPTS = Path(__file__).parent / "prompts"
Judge = LLM
"""The judge's interface: :class:`agents.llm.base.LLM`."""
REASON = {"type": "string", "maxLength": 200}
"""The schema of a verdict's free-text reason: bounded, so that a talkative model closes the
JSON before its token budget runs out (a cut reply would lose the verdict with it)."""


class JudgeParseError(ValueError):
    """A judge reply is not the verdict asked for; the message says what is wrong."""


@dataclass(frozen=True)
class Verdict:
    """What one judge call gave: the parsed ``value``, or None with ``error`` saying why."""

    value: Any = None
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.error is None


class JudgeLog:
    """Every judge call of a run, as JSON lines in ``path`` (None: kept in memory only).

    ``records`` holds them too, for tests and reports. Safe to share between threads.
    """

    def __init__(self, path: Path | str | None = None) -> None:
        self.path = Path(path) if path is not None else None
        self.records: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self._file: IO[str] | None = None
        if self.path is not None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._file = self.path.open("a", encoding="utf-8")

    def record(self, entry: dict[str, Any]) -> None:
        """Append one call's record (flushed at once, so a stopped run keeps its calls)."""
        with self._lock:
            self.records.append(entry)
            if self._file is not None:
                self._file.write(json.dumps(entry, ensure_ascii=False, default=str) + "\n")
                self._file.flush()

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None

    def __enter__(self) -> JudgeLog:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()


@cache
def _environment() -> Environment:
    return Environment(
        loader=FileSystemLoader(PROMPTS),
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        autoescape=False,
    )


def render(name: str, **context: Any) -> str:
    """The judge prompt template ``name`` rendered with ``context`` (missing names are errors)."""
    return _environment().get_template(name).render(**context).strip()


def messages_for(template: str, **context: Any) -> list[Message]:
    """The judge's system prompt and the protocol's prompt ``template`` as the user turn."""
    return [
        {"role": "system", "content": render("system.j2")},
        {"role": "user", "content": render(template, **context)},
    ]


def ask(
    judge: Judge,
    judge_log: JudgeLog,
    *,
    protocol: str,
    item: str,
    step: str,
    template: str,
    parse: Callable[[Any], Any],
    schema: dict[str, Any] | None = None,
    max_tokens: int = 300,
    **context: Any,
) -> Verdict:
    """Ask ``judge`` the prompt ``template`` and parse its JSON reply with ``parse``.

    ``parse`` takes the decoded JSON and returns the verdict, raising
    :class:`JudgeParseError` (or ValueError/TypeError/KeyError) when it is not one.
    ``schema`` constrains decoding where the backend can. Never raises for a bad reply or a
    failed judge: the :class:`Verdict` carries the error, and the log the raw reply.
    """
    messages = messages_for(template, **context)
    reply: str | None = None
    value: Any = None
    error: str | None = None
    try:
        result = judge.chat(messages, temperature=0.0, max_tokens=max_tokens, json_schema=schema)
        reply = result.text
    except LLMOutputError as exc:
        reply, error = exc.raw, f"unparseable reply: {exc}"
    except LLMError as exc:
        error = f"judge failed: {type(exc).__name__}: {exc}"
    if error is None:
        try:
            value = parse(extract_json(reply or ""))
        except (JudgeParseError, ValueError, TypeError, KeyError) as exc:
            error = f"unparseable reply: {exc}"
    if error is not None:
        log.warning("%s %s %s: %s", protocol, item, step, error)
    judge_log.record(
        {
            "protocol": protocol,
            "item": item,
            "step": step,
            "messages": messages,
            "reply": reply,
            "verdict": value,
            "error": error,
        }
    )
    return Verdict(value=value, error=error)


_FENCE = re.compile(r"^```(?:json)?\s*|\s*```$")


def extract_json(text: str) -> Any:
    """The JSON value in a reply: the whole text (code fences tolerated), else its first
    ``{`` to its last ``}``. :class:`JudgeParseError` when there is none."""
    stripped = _FENCE.sub("", text.strip())
    try:
        return json.loads(stripped)
    except json.JSONDecodeError:
        pass
    start, end = stripped.find("{"), stripped.rfind("}")
    if 0 <= start < end:
        try:
            return json.loads(stripped[start : end + 1])
        except json.JSONDecodeError as exc:
            raise JudgeParseError(f"no JSON object ({exc.msg}) in {text[:200]!r}") from None
    raise JudgeParseError(f"no JSON object in {text[:200]!r}")


def field(reply: Any, name: str) -> Any:
    """``reply[name]`` of a JSON object reply; :class:`JudgeParseError` otherwise."""
    if not isinstance(reply, dict):
        raise JudgeParseError(f"expected a JSON object, got {type(reply).__name__}")
    if name not in reply:
        raise JudgeParseError(f"the reply lacks {name!r}")
    return reply[name]


def number_in(reply: Any, name: str, low: float, high: float) -> float:
    """The number ``reply[name]`` when within [low, high]; :class:`JudgeParseError` otherwise."""
    value = field(reply, name)
    if isinstance(value, str):
        try:
            value = float(value.strip())
        except ValueError:
            raise JudgeParseError(f"{name!r} is not a number: {value!r}") from None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise JudgeParseError(f"{name!r} is not a number: {value!r}")
    if not low <= value <= high:
        raise JudgeParseError(f"{name!r} = {value} is outside [{low:g}, {high:g}]")
    return float(value)


def scale(reply: Any, name: str, allowed: tuple[int, ...]) -> int:
    """The integer ``reply[name]`` when one of ``allowed``; :class:`JudgeParseError` otherwise."""
    value = number_in(reply, name, min(allowed), max(allowed))
    if value not in allowed:
        raise JudgeParseError(f"{name!r} = {value:g} is not one of {list(allowed)}")
    return int(value)


def boolean(reply: Any, name: str) -> bool:
    """``reply[name]`` as a bool (true/false, or the strings "true"/"false"/"yes"/"no")."""
    value = field(reply, name)
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in {"true", "yes", "false", "no"}:
        return value.strip().lower() in {"true", "yes"}
    raise JudgeParseError(f"{name!r} is not true or false: {value!r}")


def mean(values: list[float]) -> float | None:
    """The mean, or None of no values."""
    return sum(values) / len(values) if values else None

"""The RAG agent's autonomous mode: the LLM explores the knowledge base with tools.

For hard questions (no table named, unusual wording) the static retrieval may miss the
columns and values a question needs. The explorer lets the model pick keywords and call
search tools for up to ``max_steps`` turns::

    explorer = Explorer(llm, Toolkit(store, db, database_name="shop"),
                        string_index=StringIndex.from_store(store), facet_index=FacetIndex(store))
    found = explorer.explore("How many clients live in the States?")
    found.ukf_ids        # entries the tool calls surfaced: extra evidence for the RAG agent
    found.stop_reason    # "done", "max_steps" or "error"

Small local models are unreliable at native tool calling, so each turn is one
JSON-schema-constrained answer ``{"thought": str, "tool": <name> | "done", "arguments": {...}}``;
the tool's result (compact JSON, truncated) goes back as the next user message. Tool errors
(unknown tool, table or column, bad arguments, a repeated call) are fed back to the model as
error payloads, never raised; output that is not such an object ends the exploration with
``stop_reason="error"`` and keeps what was found so far.

Tools (:mod:`agents.tools.explore_tools`): ``fuzzy_enum``, ``fuzzy_column``, ``column_info``
(and any other tool of :class:`agents.tools.toolkit.Toolkit` when asked for), ``string_search``
(whole-word synonym matches, :class:`indices.string.StringIndex`) and ``facet_search``
(``[SLOT:value]`` tags, :class:`indices.facet.FacetIndex`). Prompts:
``agents/rag/prompts/explore_system.j2`` and ``explore_user.j2``.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from agents.llm.base import LLM, LLMError, Message
from agents.templates import render
from agents.tools.explore_tools import DEFAULT_TOOLS, ExploreTools, result_text
from agents.tools.toolkit import Toolkit, error_payload
from indices.facet import FacetIndex
from indices.string import StringIndex
from ukf import BaseUKF

log = logging.getLogger(__name__)

StopReason = Literal["done", "max_steps", "error"]
DONE = "done"


@dataclass(frozen=True)
class Finding:
    """One entry a tool call surfaced: the evidence the RAG agent merges."""

    ukf_id: str
    tool: str
    arguments: dict[str, Any]
    summary: str
    step: int


@dataclass
class Step:
    """One turn: what the model asked for and the (truncated) result it saw."""

    thought: str
    tool: str
    arguments: Any
    result: str
    error: str | None = None


@dataclass
class Exploration:
    """What an exploration found, how, and why it stopped."""

    question: str
    findings: list[Finding] = field(default_factory=list)
    steps: list[Step] = field(default_factory=list)
    transcript: list[Message] = field(default_factory=list)
    prompt_tokens: int = 0
    completion_tokens: int = 0
    stop_reason: StopReason = "max_steps"
    error: str | None = None
    conclusion: str = ""
    seconds: float = 0.0

    @property
    def ukf_ids(self) -> list[str]:
        """Ids of the findings, first found first, without repeats."""
        return list(dict.fromkeys(finding.ukf_id for finding in self.findings))


class Explorer:
    """Lets an LLM call search tools over the knowledge base for one question at a time.

    Args:
        llm: The model (JSON-schema answers).
        toolkit: Schema tools over the store (its ``reader`` and ``database_name`` apply).
        string_index: Enables ``string_search``.
        facet_index: Enables ``facet_search``.
        tools: Tool names offered (toolkit tools and the two searches; unavailable ones are
            left out).
        max_steps: Turns at most.
        max_result_chars: A tool result is cut to this many characters for the model.
        max_findings_per_call: Entries kept as findings from one tool call (best first).
        max_tokens: Completion tokens per turn.
        timeout: Seconds per turn (None: no limit).

    Raises:
        ValueError: none of ``tools`` is available.
    """

    def __init__(
        self,
        llm: LLM,
        toolkit: Toolkit,
        *,
        string_index: StringIndex | None = None,
        facet_index: FacetIndex | None = None,
        tools: Sequence[str] = DEFAULT_TOOLS,
        max_steps: int = 5,
        max_result_chars: int = 1200,
        max_findings_per_call: int = 5,
        max_tokens: int = 200,
        timeout: float | None = 60.0,
    ) -> None:
        self.llm, self.toolkit = llm, toolkit
        self.tools = ExploreTools(
            toolkit, string_index=string_index, facet_index=facet_index, names=tools
        )
        self.max_steps, self.max_result_chars = max_steps, max_result_chars
        self.max_findings_per_call = max_findings_per_call
        self.max_tokens, self.timeout = max_tokens, timeout

    def step_schema(self) -> dict[str, Any]:
        """The JSON schema of one turn's answer."""
        return {
            "type": "object",
            "properties": {
                "thought": {"type": "string", "maxLength": 240},
                "tool": {"type": "string", "enum": [*self.tools.names, DONE]},
                "arguments": {"type": "object"},
            },
            "required": ["thought", "tool", "arguments"],
        }

    def explore(
        self,
        question: str,
        *,
        context: Mapping[str, Any] | None = None,
        known: Sequence[str] = (),
    ) -> Exploration:
        """Explore for ``question``; ``known``: what retrieval found already, one line each."""
        started = time.perf_counter()
        found = Exploration(question)
        user = render(
            "explore_user.j2",
            question=question,
            context=dict(context or {}),
            known=list(known),
            max_steps=self.max_steps,
        )
        found.transcript = [
            {"role": "system", "content": render("explore_system.j2", tools=self.tools.specs())},
            {"role": "user", "content": user},
        ]
        calls: set[str] = set()
        for step in range(1, self.max_steps + 1):
            if not self._turn(found, step, calls):
                break
        found.seconds = time.perf_counter() - started
        log.info(
            "explored %r: %d steps, %d findings, stopped: %s",
            question, len(found.steps), len(found.findings), found.stop_reason,
        )  # fmt: skip
        return found

    def __call__(self, question: str, rag: Any = None) -> list[BaseUKF]:
        """The RAG agent's ``Explorer`` hook: the entries an exploration surfaced."""
        known = list(getattr(rag, "hints", []) or [])
        tables = list(getattr(rag, "tables", []) or [])
        if tables:
            known.insert(0, f"tables already shown: {', '.join(tables[:10])}")
        found = self.explore(question, known=known[:12])
        entries = self.toolkit.store.get_many(found.ukf_ids, reader=self.toolkit.reader)
        return list(entries.values())

    # ------------------------------------------------------------------ one turn
    def _turn(self, found: Exploration, step: int, calls: set[str]) -> bool:
        """Ask the model once and run its tool; False when the exploration is over."""
        try:
            reply = self.llm.chat(
                found.transcript,
                temperature=0.0,
                max_tokens=self.max_tokens,
                json_schema=self.step_schema(),
                timeout=self.timeout,
            )
            found.prompt_tokens += reply.prompt_tokens
            found.completion_tokens += reply.completion_tokens
            found.transcript.append({"role": "assistant", "content": reply.text})
            parsed = reply.completions[0].json()
        except LLMError as exc:  # LLMOutputError (garbage) included
            found.stop_reason, found.error = "error", f"step {step}: {exc}"
            return False
        if not isinstance(parsed, dict) or not isinstance(parsed.get("tool"), str):
            found.stop_reason = "error"
            found.error = f"step {step}: not a tool call: {reply.text[:200]!r}"
            return False
        thought, tool = str(parsed.get("thought", "")), parsed["tool"].strip()
        arguments = parsed.get("arguments", {})
        if tool == DONE:
            found.stop_reason, found.conclusion = "done", thought
            found.steps.append(Step(thought, tool, arguments, ""))
            return False
        payload = self._call(found, step, calls, tool, arguments)
        text = result_text(payload, self.max_result_chars)
        found.steps.append(Step(thought, tool, arguments, text, payload.get("error")))
        left = self.max_steps - step
        found.transcript.append(
            {"role": "user", "content": f"Result of {tool} (steps left: {left}):\n{text}"}
        )
        return True

    def _call(
        self, found: Exploration, step: int, calls: set[str], tool: str, arguments: Any
    ) -> dict[str, Any]:
        key = json.dumps([tool, arguments], sort_keys=True, default=str)
        if key in calls:
            message = (
                f"{tool} was already called with these arguments (result above): "
                "change the arguments, use another tool, or answer done"
            )
            return error_payload("repeated_call", message)
        calls.add(key)
        payload, surfaced = self.tools.run(tool, arguments)
        seen = {finding.ukf_id for finding in found.findings}
        for ukf_id, summary in surfaced[: self.max_findings_per_call]:
            if ukf_id not in seen:
                seen.add(ukf_id)
                found.findings.append(Finding(ukf_id, tool, dict(arguments), summary, step))
        return payload

"""Scripted judges for the protocol tests: replies chosen by what the prompt says."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from agents.llm.base import Message
from tests.agents.scripted import ScriptedLLM

GARBAGE = "I think it is quite good overall!"


def user_text(messages: list[Message]) -> str:
    return messages[-1]["content"]


def by_prompt(decide: Callable[[str], Any]) -> ScriptedLLM:
    """A judge whose reply to each prompt is ``decide(user prompt)``: a dict is sent as JSON,
    a string as it is."""

    def reply(messages: list[Message], options: dict[str, Any]) -> str:
        answer = decide(user_text(messages))
        return answer if isinstance(answer, str) else json.dumps(answer)

    return ScriptedLLM([reply], name="scripted-judge")

"""Prompt templates: Jinja files in ``agents/prompts/`` next to the agents that use them."""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

from jinja2 import Environment, FileSystemLoader, StrictUndefined, Template

PROMPTS = Path(__file__).parent / "prompts"


@cache
def _environment() -> Environment:
    return Environment(
        loader=FileSystemLoader(PROMPTS),
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=False,
        autoescape=False,
    )


def template(name: str) -> Template:
    """The template ``agents/prompts/<name>``."""
    return _environment().get_template(name)


def render(name: str, **context: Any) -> str:
    """Render ``agents/prompts/<name>`` with ``context`` (missing variables are errors)."""
    return template(name).render(**context).strip()

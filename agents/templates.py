"""Prompt templates: Jinja files in a ``prompts/`` folder next to the agents that use them.

``agents/sql/prompts/`` holds the SQL writer's and the repairer's, ``agents/rag/prompts/`` the
RAG summary's and the explorer's, ``agents/learn/prompts/`` the describer's and the miner's,
and deeper folders their own agents' (``agents/learn/cot/prompts/``,
``agents/learn/synth/prompts/``, ...). A template is named by its file name alone; names are
unique across the folders.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

from jinja2 import Environment, FileSystemLoader, StrictUndefined, Template

AGENTS = Path(__file__).parent


def prompt_folders() -> list[Path]:
    """Every ``prompts/`` folder under ``agents/``, at any depth, in a stable order."""
    return sorted(path for path in AGENTS.glob("**/prompts") if path.is_dir())


@cache
def _environment() -> Environment:
    return Environment(
        loader=FileSystemLoader(prompt_folders()),
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=False,
        autoescape=False,
    )


def template(name: str) -> Template:
    """The template file ``name`` from the agents' prompt folders."""
    return _environment().get_template(name)


def render(name: str, **context: Any) -> str:
    """Render the template ``name`` with ``context`` (missing variables are errors)."""
    return template(name).render(**context).strip()

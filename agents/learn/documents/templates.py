"""The extraction's prompt templates: Jinja files in ``prompts/`` next to this module.

Loaded with the settings of :mod:`agents.templates` (strict undefined variables, trimmed
blocks); that module reads the ``prompts/`` folders one level under ``agents/`` only, so this
package's folder, one level deeper, has its own loader.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

from jinja2 import Environment, FileSystemLoader, StrictUndefined

PROMPTS = Path(__file__).parent / "prompts"


@cache
def _environment() -> Environment:
    return Environment(
        loader=FileSystemLoader([PROMPTS]),
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=False,
        autoescape=False,
    )


def render(name: str, **context: Any) -> str:
    """Render the template ``name`` of ``prompts/`` (missing variables are errors)."""
    return _environment().get_template(name).render(**context).strip()

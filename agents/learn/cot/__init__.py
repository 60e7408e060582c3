"""CoT-enhanced SQL profiling: checked step-by-step explanations of verified SQL.

- :mod:`agents.learn.cot.check`: the consistency checker (explanation against the SQL's AST,
  whose parts :mod:`agents.learn.cot.sql_parts` reads);
- :mod:`agents.learn.cot.writer`: the teacher tier writes an explanation, retried once with
  the checker's reasons (prompts in ``agents/learn/cot/prompts/``);
- :mod:`agents.learn.cot.record`: the experience's ``profile["cot"]`` record;
- :mod:`agents.learn.cot.profile`: ``profile_cot``, the resumable, cancellable run.
"""

from agents.learn.cot.check import CotVerdict, check_cot, steps_of
from agents.learn.cot.profile import CotReport, cot_experiences, needs_cot, profile_cot
from agents.learn.cot.record import checked_cot, cot_record, sql_hash
from agents.learn.cot.sql_parts import CotCheckError
from agents.learn.cot.writer import CotAttempt, CotWriter

__all__ = [
    "CotAttempt",
    "CotCheckError",
    "CotReport",
    "CotVerdict",
    "CotWriter",
    "check_cot",
    "checked_cot",
    "cot_experiences",
    "cot_record",
    "needs_cot",
    "profile_cot",
    "sql_hash",
    "steps_of",
]

"""The judge harness: long-form analysis answers scored the way four BI benchmarks score them.

- :mod:`bench.judge.insightbench`: InsightBench's insight-level and summary-level scores, by
  LLM judge and ROUGE-1.
- :mod:`bench.judge.corgi`: CORGI's discriminator-chosen dimensions scored 0/3/5, and the SQL
  success-execution rate.
- :mod:`bench.judge.bibench`: BI-Bench's factual correctness (sentences checked by SQL run
  read-only on the data), answerability, relevance and presentation.
- :mod:`bench.judge.dbqa`: long-form database QA's reviewer and meta-reviewer verdicts on the
  plan, the SQL and the synthesis, and the 1–5 match with a reference answer.

The judge is any :class:`agents.llm.base.LLM`; every prompt and reply is recorded in a
:class:`~bench.judge.core.JudgeLog` beside the scores (:mod:`bench.judge.core`). Command line:
``python -m bench.judge {insightbench,corgi,bibench,dbqa} --answers FILE --out DIR``.
"""

from bench.judge.answers import (
    AnalysisAnswer,
    Evidence,
    InsightAnswer,
    read_analysis_answers,
    read_insight_answers,
)
from bench.judge.core import Judge, JudgeLog, JudgeParseError, Verdict, ask

__all__ = [
    "AnalysisAnswer",
    "Evidence",
    "InsightAnswer",
    "Judge",
    "JudgeLog",
    "JudgeParseError",
    "Verdict",
    "ask",
    "read_analysis_answers",
    "read_insight_answers",
]

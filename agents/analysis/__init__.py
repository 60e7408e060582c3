"""Long-form analysis answers: question typing, a plan of sub-questions each answered by the
SQL chain, analysis tools on their results, and a narrative checked against the numbers.

- :mod:`agents.analysis.typing`: lookup / descriptive / diagnostic / predictive /
  prescriptive, by rules and the LLM;
- :mod:`agents.analysis.plan`: the sub-questions, bounded in count (and the refusal of a
  forecast on a database with no time column);
- :mod:`agents.analysis.tools` and :mod:`agents.analysis.timeseries`: period change and its
  drivers, outliers, option ranking, trend and seasonality, forecast (results in
  :mod:`agents.analysis.facts`); :mod:`agents.analysis.compute` picks which apply;
- :mod:`agents.analysis.narrative` and :mod:`agents.analysis.numbers`: the narrative and its
  number check; :mod:`agents.analysis.charts`: Vega-Lite specs and PNGs;
- :mod:`agents.analysis.run`: the :class:`Analyst` tying them together.
"""

from agents.analysis.charts import chart_spec, render_png
from agents.analysis.models import AnalysisAnswer, DroppedFinding, Evidence, Finding
from agents.analysis.plan import AnalysisPlan, AnalysisRefused, SubQuestion, plan_analysis
from agents.analysis.run import AnalysisOptions, Analyst
from agents.analysis.typing import QuestionTyping, classify_question

__all__ = [
    "AnalysisAnswer",
    "AnalysisOptions",
    "AnalysisPlan",
    "AnalysisRefused",
    "Analyst",
    "DroppedFinding",
    "Evidence",
    "Finding",
    "QuestionTyping",
    "SubQuestion",
    "chart_spec",
    "classify_question",
    "plan_analysis",
    "render_png",
]

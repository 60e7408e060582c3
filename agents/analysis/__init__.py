"""Long-form analysis answers: question typing, a plan of sub-questions each answered by the
SQL chain, analysis tools on their results, and a narrative checked against the numbers.

- :mod:`agents.analysis.typing`: lookup / descriptive / diagnostic / predictive /
  prescriptive, by rules and the LLM;
- :mod:`agents.analysis.plan`: the sub-questions, bounded in count;
- :mod:`agents.analysis.tools` and :mod:`agents.analysis.timeseries`: period change and its
  drivers, outliers, option ranking, trend and seasonality, forecast;
"""

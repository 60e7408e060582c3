"""Analysis runs over a benchmark of analysis tasks (``python -m bench analyze``, issue 26):
InsightBench's tasks, or the long-form AutoFin questions (:mod:`.autofin`).

:mod:`.systems` answers one task (the analyst, or the one-SQL baseline), :mod:`.records` is
the output line per task, :mod:`.runner` runs the tasks (resumable, an error recorded per
task), :mod:`.summary` the latency and SQL-call figures, :mod:`.cli` the command line.
"""

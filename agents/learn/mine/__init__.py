"""Miners: knowledge learned from the query log (issue 22).

``mine_labeled`` (labeled experiences → candidate synonyms, predicates, metrics and join
paths, merged into the store) is the entry point; the modules below it, in pipeline order:
``sql_facts`` (what the SQL shows), ``align`` (which question words name what),
``pairer`` (the LLM, only where alignment cannot tell), ``schema_view`` (validation against
the profile, values two joined columns share included), ``entries`` (UKF with provenance),
``candidates`` (the inactive state a mined entry waits in), ``extract`` (one experience),
then ``evidence`` (each mined phrase weighed against every labeled question saying it:
ambiguous, conflicting or weakly supported ones dropped or scoped) over ``usage`` (does a
question say a phrase, does its SQL use an element: also the bench's precision audit).
"""

from agents.learn.mine.candidates import activate, candidates, is_candidate, reject
from agents.learn.mine.labeled import MiningReport, labeled_experiences, mine_labeled
from agents.learn.mine.pairer import LLMPairer, Pairer, PairItem

__all__ = [
    "LLMPairer",
    "MiningReport",
    "PairItem",
    "Pairer",
    "activate",
    "candidates",
    "is_candidate",
    "labeled_experiences",
    "mine_labeled",
    "reject",
]

"""Query synthesis (issue 23): verified experiences and the profiled schema → new verified
(question, SQL) pairs.

``synthesize`` (:mod:`.synthesize`) is the entry point; below it: ``variants`` (what a
transform makes, the schema it reads), ``compose`` (a filter, a grouping, a join along a
foreign-key path, a time window added), ``decompose`` (the standalone parts of a nested or
multi-part query), ``vary`` (a literal swapped for another profiled value), ``results``
(running a variant, degenerate results, comparing results), ``question`` (the LLM writes the
question) and ``records`` (the pairs as experiences, and what a run remembers).
"""

from agents.learn.synth.question import QuestionWriter
from agents.learn.synth.records import synthesis_sources, synthetic_experiences
from agents.learn.synth.synthesize import (
    SynthAsker,
    SynthesisReport,
    SynthOptions,
    synthesize,
    variants_of,
)
from agents.learn.synth.variants import TRANSFORMS

__all__ = [
    "TRANSFORMS",
    "QuestionWriter",
    "SynthAsker",
    "SynthOptions",
    "SynthesisReport",
    "synthesis_sources",
    "synthesize",
    "synthetic_experiences",
    "variants_of",
]

"""Data dictionaries: table and column descriptions from CSV, JSON, YAML or Spider's
``tables.json``, attached to the Table / Column UKF of a profiled database.

::

    dictionary = read_dictionary(Path("school_finance.csv"))
    report = apply_dictionary(store, dictionary, database="school_finance")
    print(report.summary())

Reading and its refusals: :mod:`kb.dictionary.read`; what an import writes, its provenance
and its rule for descriptions from other sources: :mod:`kb.dictionary.apply`.
"""

from kb.dictionary.apply import DICTIONARY, DictionaryReport, apply_dictionary
from kb.dictionary.read import (
    MAX_DICTIONARY_BYTES,
    DataDictionary,
    DictionaryError,
    DictionaryRecord,
    read_dictionary,
)

__all__ = [
    "DICTIONARY",
    "MAX_DICTIONARY_BYTES",
    "DataDictionary",
    "DictionaryError",
    "DictionaryRecord",
    "DictionaryReport",
    "apply_dictionary",
    "read_dictionary",
]

"""Benchmark datasets loaded into one common form: `Dataset`s of `Example`s.

Loaders: `load_spider`, `load_bird`, `load_kaggledbqa`, `load_text2sql` (GeoQuery and the rest of
text2sql-data) and `load_almanac_jsonl` (Almanac's own JSONL, written by `write_jsonl`);
`load_dataset` picks one by known name or by path. `validate_gold` executes gold SQL to find
broken gold queries; `require_databases` refuses a run whose databases cannot be opened.
"""

from bench.datasets.almanac_jsonl import load_almanac_jsonl, read_jsonl, write_jsonl
from bench.datasets.bird import load_bird
from bench.datasets.dataset import Dataset, DatasetFormatError
from bench.datasets.example import Example, QueryContext, has_top_level_order_by, make_tag
from bench.datasets.kaggledbqa import load_kaggledbqa
from bench.datasets.reachable import MissingDatabaseError, database_problems, require_databases
from bench.datasets.registry import default_data_root, load_dataset
from bench.datasets.spider import load_spider
from bench.datasets.text2sql import load_text2sql
from bench.datasets.validate import gold_errors, validate_gold

__all__ = [
    "Dataset",
    "DatasetFormatError",
    "Example",
    "MissingDatabaseError",
    "QueryContext",
    "database_problems",
    "default_data_root",
    "gold_errors",
    "has_top_level_order_by",
    "load_almanac_jsonl",
    "load_bird",
    "load_dataset",
    "load_kaggledbqa",
    "load_spider",
    "load_text2sql",
    "make_tag",
    "read_jsonl",
    "require_databases",
    "validate_gold",
    "write_jsonl",
]

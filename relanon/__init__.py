"""relanon: anonymize multi-table relational databases and audit their release."""

from importlib.metadata import PackageNotFoundError, version

from relanon.errors import DataError, ParameterError, RelanonError, SchemaError
from relanon.schema import Schema, dump_schema, load_schema

try:
    __version__ = version("relanon")
except PackageNotFoundError:  # running from a source tree that is not installed
    __version__ = "0+unknown"

__all__ = [
    "DataError",
    "ParameterError",
    "RelanonError",
    "Schema",
    "SchemaError",
    "__version__",
    "dump_schema",
    "load_schema",
]

"""The schema file and what is derived from it: the model, its graph, data validation, proposals."""

from relanon.schema.model import Anonymization, Column, ForeignKey, Schema, Table, dump_schema, load_schema

__all__ = ["Anonymization", "Column", "ForeignKey", "Schema", "Table", "dump_schema", "load_schema"]

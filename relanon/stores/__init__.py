"""Reading and writing databases: folders of CSV or Parquet files, SQLite, SQLAlchemy servers."""

from relanon.stores.io import read_database, read_tables, write_database

__all__ = ["read_database", "read_tables", "write_database"]

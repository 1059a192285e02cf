"""Schema files: the JSON Schema of the relanon schema format and example schemas (package data)."""

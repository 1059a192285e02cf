"""Propose a schema from the data (``relanon init``), for the user to review.

Types are never guessed silently when anonymizing: the schema file declares them. This module
only *proposes* that file, with a note on every choice it made and a ``REVIEW`` mark on every
choice a person should confirm:

- keys the database declares (a server's ``PRIMARY KEY`` and ``FOREIGN KEY`` constraints, given as
  :class:`DeclaredKeys`) come first: they are facts, not guesses. What follows is for the rest;
- primary key: a unique, non-null column named like an id (``id``, ``<table>_id``,
  ``<singular>_id``, ``<singular>Id``, ``id_<singular>``, ``*_key``, ``*_uuid``...), preferring the one
  named after its table;
- foreign keys: a column named like another table's key whose non-null values are all among that
  table's key values (a near miss, with orphan values, is reported with their count);
- column types from the values: floats -> continuous, whole numbers -> integer unless they look
  like codes, 0/1 and yes/no -> boolean, dates (also as text) -> datetime, text -> categorical,
  direct identifiers -> drop with a REVIEW note saying why (names, e-mail addresses, phone numbers,
  street addresses, national ids, URLs, free text, text unique on nearly every row: see
  :mod:`relanon.schema.identifiers`); releasing one takes a deliberate change of its type;
- ``individual: true`` for tables whose rows look like people;
- ``anonymize: {method: keep}`` for tables too small to avatarize.
"""

from __future__ import annotations

import json
import re
import textwrap
import warnings
from collections.abc import Mapping
from dataclasses import dataclass, field

import networkx as nx
import numpy as np
import pandas as pd

from relanon.common.errors import DataError, ParameterError, Problem, format_examples
from relanon.schema.identifiers import identifier_by_name, identifier_by_values
from relanon.schema.model import Anonymization, Column, ForeignKey, Schema, Table, load_schema

ID_WORDS = ("id", "key", "uuid", "guid", "pk")
WEAK_KEY_WORDS = ("code", "no", "nr", "num", "number", "ref", "reference", "identifier")
CODE_WORDS = ("zip", "zipcode", "postal", "postcode", "code", "phone", "tel", "fax", "fips", "insee", "icd", "naf")
PEOPLE_WORDS = (
    "patient", "person", "people", "customer", "client", "user", "employee", "doctor", "physician",
    "nurse", "member", "student", "pupil", "teacher", "staff", "worker", "subscriber", "participant",
    "subject", "respondent", "citizen", "resident", "beneficiary", "insured", "policyholder",
    "passenger", "voter", "applicant", "candidate", "donor", "volunteer", "player", "athlete", "guest",
    "individual", "contact", "author", "child", "adult", "inmate", "driver", "tenant", "buyer", "seller",
)  # fmt: skip
PERSONAL_COLUMN_WORDS = (
    "first_name", "firstname", "last_name", "lastname", "full_name", "fullname", "surname",
    "given_name", "birth_date", "birthdate", "date_of_birth", "dob", "birth_year", "gender", "sex",
    "email", "phone", "ssn",
)  # fmt: skip
BOOLEAN_WORDS = frozenset(("true", "false", "t", "f", "yes", "no", "y", "n", "1", "0"))
_YAML_WORDS = frozenset(("y", "n", "yes", "no", "on", "off", "true", "false", "null", "~"))
# Patterns for pyarrow's fast regular expressions (no \s: values are stripped first).
_ISO_DATE = r"\d{4}-\d{1,2}-\d{1,2}(?:[ T]\d{1,2}:\d{2}(?::\d{2}(?:\.\d+)?)?)?(?:Z|[+-]\d{2}:?\d{2})?"
_OTHER_DATE = r"\d{1,4}[/.-]\d{1,2}[/.-]\d{1,4}(?: \d{1,2}:\d{2}(?::\d{2})?)?"
_DAY_FIRST = r"^(?:1[3-9]|2\d|3[01])[/.-]\d{1,2}[/.-]"
_MONTH_FIRST = r"^\d{1,2}[/.-](?:1[3-9]|2\d|3[01])[/.-]"

FEW_DISTINCT = 10
"""A column of whole numbers with at most this many distinct values ..."""
FEW_DISTINCT_SHARE = 0.05
"""... and fewer distinct values than this share of its rows is proposed as categorical."""
NEARLY_UNIQUE = 0.9
"""Text with at least this share of distinct values among its non-missing cells is proposed as drop."""
SMALLEST_AVATAR_TABLE = 3
"""Tables with fewer rows are kept as they are (``anonymize: {method: keep}``)."""
DEFAULT_K = 10


@dataclass(frozen=True)
class DeclaredKeys:
    """The keys a database declares, which :func:`propose_schema` uses before guessing.

    Parameters
    ----------
    primary_keys : mapping of str to tuple of str
        Table -> the columns of its primary key.
    foreign_keys : mapping of str to tuple
        Table -> one ``(columns, parent table, parent columns)`` per foreign key it declares.
    """

    primary_keys: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    foreign_keys: Mapping[str, tuple[tuple[tuple[str, ...], str, tuple[str, ...]], ...]] = field(default_factory=dict)


@dataclass(frozen=True)
class Note:
    """Why one choice of the proposal was made, and whether a person must review it.

    Parameters
    ----------
    table : str
    column : str or None
        ``None`` for a note on the whole table.
    message : str
    about : str
        What the note explains: ``"table"``, ``"primary_key"``, ``"foreign_key"``, ``"type"``,
        ``"individual"`` or ``"anonymize"``.
    review : bool
        Whether the choice is uncertain and needs a person's decision.
    """

    table: str
    column: str | None
    message: str
    about: str = "type"
    review: bool = False

    def __str__(self) -> str:
        where = f"{self.table}.{self.column}" if self.column else self.table
        return f"{where}: {'REVIEW: ' if self.review else ''}{self.message}"


@dataclass(frozen=True)
class Proposal:
    """A proposed schema and the notes explaining it.

    Attributes
    ----------
    schema : Schema
        Valid (it passes :func:`~relanon.schema.load_schema`); it fits the data it was proposed from,
        except for tables where no primary key was found (a note says which column to add).
    notes : tuple of Note
    row_counts : dict of str to int
        Rows per table in the data the proposal was made from.
    """

    schema: Schema
    notes: tuple[Note, ...] = field(default=())
    row_counts: Mapping[str, int] = field(default_factory=dict)

    @property
    def to_review(self) -> tuple[Note, ...]:
        """The notes marked for review."""
        return tuple(n for n in self.notes if n.review)

    def notes_for(self, table: str, column: str | None = None, about: str | None = None) -> list[Note]:
        """The notes on ``table`` (on ``column`` only when given; ``about`` one topic only)."""
        return [
            n
            for n in self.notes
            if n.table == table and (column is None or n.column == column) and (about is None or n.about == about)
        ]

    def to_yaml(self) -> str:
        """The schema file, with the notes as YAML comments; :func:`~relanon.schema.load_schema` reads it as is.

        Examples
        --------
        >>> import pandas as pd
        >>> proposal = propose_schema({"people": pd.DataFrame({"id": [1, 2, 3], "smoker": ["yes", "no", "no"]})})
        >>> from relanon.schema.model import load_schema
        >>> text = proposal.to_yaml()
        >>> load_schema(text)["people"].types()
        {'smoker': 'boolean'}
        >>> for line in text.splitlines():
        ...     if "smoker" in line or "k: 2" in line:
        ...         print(line)
              smoker: boolean  # text with only yes/no values
            anonymize: {method: avatar, k: 2}  # REVIEW: only 3 rows: k lowered to 2 (k neighbours need k + 1 rows)
        """
        return _render(self)

    def __str__(self) -> str:
        return self.to_yaml()


def propose_schema(database: Mapping[str, pd.DataFrame], name: str | None = None,
                   declared: DeclaredKeys | None = None) -> Proposal:
    """Propose a schema for ``database`` from its values and names, with notes to review.

    Parameters
    ----------
    database : mapping of str to pandas.DataFrame
        The tables as read with pandas' own type inference (for example by
        :func:`relanon.stores.io.read_tables`), keyed by table name. Never modified.
    name : str, optional
        The database name written in the schema.
    declared : DeclaredKeys, optional
        The keys the database declares (for example read by :func:`relanon.stores.io.declared_keys`
        from a PostgreSQL server): a declared single-column primary key is taken as it is, and so is
        a declared foreign key to a parent's primary key. Links guessed beside declared ones are
        marked for review: the database did not declare them.

    Returns
    -------
    Proposal
        ``proposal.schema`` and ``proposal.notes``; ``proposal.to_yaml()`` is the file to review.

    Raises
    ------
    ParameterError
        When ``database`` is not a non-empty mapping of table names to DataFrames.
    DataError
        When a table has column names that a schema file cannot hold (empty, not text, repeated).

    Examples
    --------
    >>> import pandas as pd
    >>> db = {
    ...     "customers": pd.DataFrame({"customer_id": [1, 2, 3, 4], "age": [31, 45, 27, 60]}),
    ...     "orders": pd.DataFrame({"order_id": [10, 11, 12, 13, 14], "customer_id": [1, 1, 2, 4, 4],
    ...                             "amount": [9.5, 12.0, 3.2, 8.8, 40.0]}),
    ... }
    >>> proposal = propose_schema(db, name="shop")
    >>> proposal.schema["orders"].foreign_keys
    (ForeignKey(column='customer_id', references='customers', link='linear_sum', anchor=False),)
    >>> proposal.schema["customers"].individual, proposal.schema["orders"].types()
    (True, {'amount': 'continuous'})
    """
    tables = _checked_database(database)
    notes: list[Note] = []
    declared = declared if declared is not None else DeclaredKeys()
    keys = {t: _declared_primary_key(t, frame, declared, notes) or _propose_primary_key(t, frame, tables, notes)
            for t, frame in tables.items()}
    links = _propose_foreign_keys(tables, keys, notes, declared)
    linked = {(t, fk.column) for t, fks in links.items() for fk in fks}
    near_misses = {(n.table, n.column) for n in notes if n.about == "foreign_key" and n.review}
    built = {}
    for table, frame in tables.items():
        columns = []
        for column in frame.columns:
            if column == keys[table] or (table, column) in linked:
                continue
            kind, note = _propose_type(table, column, frame[column], near_miss=(table, column) in near_misses)
            columns.append(Column(column, kind))
            notes.append(note)
        built[table] = Table(
            name=table,
            primary_key=keys[table],
            columns=tuple(columns),
            foreign_keys=tuple(links[table]),
            individual=_propose_individual(table, frame, notes),
            anonymize=_propose_anonymization(table, len(frame), notes),
        )
    schema = Schema(tables=built, name=name)
    load_schema(schema.to_dict())  # a proposal that the loader refuses would be a bug here, not the user's
    order = {t: i for i, t in enumerate(tables)}
    notes.sort(key=lambda n: order[n.table])  # stable: within a table, notes keep their order of discovery
    return Proposal(schema=schema, notes=tuple(notes), row_counts={t: len(f) for t, f in tables.items()})


# --------------------------------------------------------------------------- input


def _checked_database(database) -> dict[str, pd.DataFrame]:
    if not isinstance(database, Mapping) or not database:
        raise ParameterError(
            "propose_schema expects a non-empty dict of table name -> pandas DataFrame, "
            f"got {type(database).__name__}{' (empty)' if isinstance(database, Mapping) else ''}"
        )
    problems = []
    for table, frame in database.items():
        if not isinstance(table, str) or not table:
            raise ParameterError(f"table names must be non-empty text, got {table!r}")
        if not isinstance(frame, pd.DataFrame):
            raise ParameterError(f"table {table!r}: expected a pandas DataFrame, got {type(frame).__name__}")
        bad = [c for c in frame.columns if not isinstance(c, str) or not c]
        if bad:
            problems.append(
                Problem(
                    "column names must be non-empty text; name these columns (a file without a "
                    "header row is read with numbers as names)",
                    table,
                    examples=tuple(bad),
                )
            )
        repeated = frame.columns[frame.columns.duplicated()].unique().tolist()
        if repeated:
            problems.append(Problem("column names appear more than once; rename them", table, examples=tuple(repeated)))
    if problems:
        raise DataError("cannot propose a schema for these tables", problems)
    return dict(database)


# --------------------------------------------------------------------------- names


def _snake(name: str) -> str:
    """``PatientID``, ``patientId`` and ``Patient ID`` all become ``patient_id``."""
    spaced = re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", name)
    spaced = re.sub(r"([A-Z]+)([A-Z][a-z])", r"\1_\2", spaced)
    return re.sub(r"[^0-9a-zA-Z]+", "_", spaced).strip("_").lower()


def _singular(word: str) -> str:
    irregular = {"people": "person", "children": "child", "men": "man", "women": "woman", "data": "data"}
    if word in irregular:
        return irregular[word]
    for plural, single in (("ies", "y"), ("sses", "ss"), ("xes", "x"), ("ches", "ch"), ("shes", "sh"), ("uses", "us")):
        if word.endswith(plural) and len(word) > len(plural) + 1:
            return word[: -len(plural)] + single
    if word.endswith("s") and not word.endswith(("ss", "us", "is")) and len(word) > 3:
        return word[:-1]
    return word


def _entity_names(table: str) -> set[str]:
    """The names of ``table`` as an entity: ``visits`` -> {``visits``, ``visit``}."""
    snake = _snake(table)
    return {snake, _singular(snake), "_".join([*snake.split("_")[:-1], _singular(snake.split("_")[-1])])}


def _key_names_for(table: str) -> set[str]:
    """Snake-case column names that denote a key of ``table``: ``patient_id``, ``id_patient``, ``patientid``..."""
    names = set()
    for entity in _entity_names(table):
        for word in ID_WORDS:
            names |= {f"{entity}_{word}", f"{word}_{entity}", f"{entity}{word}".replace("_", "")}
    return names


def _id_like(snake: str) -> bool:
    words = snake.split("_")
    return words[0] in ID_WORDS or words[-1] in ID_WORDS


def _words(snake: str) -> set[str]:
    words = snake.split("_")
    return {*words, *("_".join(words[i : i + 2]) for i in range(len(words) - 1))}


# --------------------------------------------------------------------------- primary keys


def _declared_primary_key(table: str, frame: pd.DataFrame, declared: DeclaredKeys, notes: list[Note]) -> str | None:
    columns = tuple(declared.primary_keys.get(table, ()))
    if len(columns) == 1 and columns[0] in frame.columns:
        notes.append(Note(table, columns[0], "declared as the primary key in the database", about="primary_key"))
        return columns[0]
    if columns:
        notes.append(Note(table, None, f"the database declares a primary key of several columns "
                          f"({', '.join(columns)}); relanon needs a single-column key: see below", about="primary_key",
                          review=True))
    return None


def _propose_primary_key(table: str, frame: pd.DataFrame, tables, notes: list[Note]) -> str:
    own = _key_names_for(table)
    others = set().union(*(_key_names_for(t) for t in tables if t != table))
    ranked = []
    for position, column in enumerate(frame.columns):
        snake = _snake(column)
        if not _can_be_key(frame[column]):
            continue
        if snake in own or snake in ID_WORDS:
            rank, why = 0, "named after the table" if snake in own else "named like an id"
        elif _id_like(snake) and snake not in others:
            rank, why = 1, "named like an id"
        elif _id_like(snake):
            rank, why = 2, "named like the key of another table (a one-to-one extension?)"
        elif _words(snake) & set(WEAK_KEY_WORDS):
            rank, why = 3, "named like a code or a number"
        elif pd.api.types.is_integer_dtype(frame[column].dtype):
            rank, why = 4, "whole numbers, though not named like an id"
        else:
            rank, why = 5, "text, though not named like an id"
        ranked.append((rank, position, column, why))
    if not ranked:
        entity = _singular(_snake(table)) or "row"
        names = (f"{entity}_id", f"{entity}_key", "row_id", "relanon_row_id")
        missing = next(n for n in names if n not in frame.columns)
        notes.append(
            Note(
                table,
                missing,
                f"no unique, never-missing column named like an id: add a column {missing!r} numbering the "
                "rows (1, 2, 3...) to the data, or name the real key here",
                about="primary_key",
                review=True,
            )
        )
        return missing
    rank, _, column, why = min(ranked)
    # unnamed unique columns are only a fallback: in a small table every column may be unique
    others_found = [c for r, _, c, _ in sorted(ranked)[1:] if r <= 3]
    message = f"unique and never missing, {why}"
    if others_found:
        message += f"; other candidates: {', '.join(others_found)}"
    notes.append(Note(table, column, message, about="primary_key", review=rank >= 2 or bool(others_found)))
    return column


def _can_be_key(values: pd.Series) -> bool:
    dtype = values.dtype
    if pd.api.types.is_bool_dtype(dtype) or pd.api.types.is_float_dtype(dtype):
        return False
    if not (pd.api.types.is_integer_dtype(dtype) or pd.api.types.is_string_dtype(dtype)):
        return False
    return bool(values.notna().all() and values.is_unique)


# --------------------------------------------------------------------------- foreign keys


def _propose_foreign_keys(tables, keys: dict[str, str], notes: list[Note],
                          declared: DeclaredKeys) -> dict[str, list[ForeignKey]]:
    """Declared links first, then links whose names match and whose values are included, strongest
    first, skipping any that would close a cycle (relanon needs parents before children)."""
    found = _declared_links(tables, keys, notes, declared)
    taken = {(entry[3], entry[4]) for entry in found}
    unsure = any(declared.foreign_keys.values())  # guessing beside declared links: a person decides
    for child, frame in tables.items():
        for position, column in enumerate(frame.columns):
            if column == keys[child] or (child, column) in taken:
                continue
            match = _best_parent(child, column, frame[column], tables, keys, notes)
            if match is not None:
                why = f"{match[2]}; not declared as a foreign key in the database" if unsure else match[2]
                found.append((match[0], list(tables).index(child), position, child, column, match[1], why, unsure))
    graph = nx.DiGraph()
    graph.add_nodes_from(tables)
    links: dict[str, list[ForeignKey]] = {t: [] for t in tables}
    for _, _, _, child, column, parent, why, review in sorted(found):
        if nx.has_path(graph, child, parent):
            notes.append(
                Note(
                    child,
                    column,
                    f"{why}, but this link would close a cycle of foreign keys ({parent} -> {child} -> ... -> "
                    f"{parent}); left out: declare it under foreign_keys and remove another link if it matters",
                    about="foreign_key",
                    review=True,
                )
            )
            continue
        graph.add_edge(parent, child)
        links[child].append(ForeignKey(column, parent, "linear_sum"))
        notes.append(Note(child, column, why, about="foreign_key", review=review))
    order = {t: {c: i for i, c in enumerate(tables[t].columns)} for t in tables}
    return {t: sorted(fks, key=lambda fk: order[t][fk.column]) for t, fks in links.items()}


def _declared_links(tables, keys: dict[str, str], notes: list[Note], declared: DeclaredKeys) -> list[tuple]:
    """The declared foreign keys relanon can use: one column, to the primary key of a table read."""
    found = []
    for child, links in declared.foreign_keys.items():
        if child not in tables:
            continue
        for columns, parent, parent_columns in links:
            columns, parent_columns = tuple(columns), tuple(parent_columns)
            where = f"{', '.join(columns)} -> {parent}({', '.join(parent_columns)})"
            if len(columns) != 1 or parent not in tables or columns[0] not in tables[child].columns:
                reason = "of several columns" if len(columns) != 1 else "to a table not read"
                notes.append(Note(child, columns[0] if len(columns) == 1 else None,
                                  f"the database declares a foreign key {where} {reason}: left out", "foreign_key",
                                  review=True))
            elif parent_columns != (keys[parent],):
                notes.append(Note(child, columns[0], f"the database declares a foreign key {where}, but relanon links "
                                  f"to the primary key of {parent} ({keys[parent]}): left out", "foreign_key",
                                  review=True))
            else:
                position = list(tables[child].columns).index(columns[0])
                found.append((-1, list(tables).index(child), position, child, columns[0], parent,
                              f"declared as a foreign key to {parent}.{keys[parent]} in the database", False))
    return found


def _best_parent(child, column, values: pd.Series, tables, keys, notes):
    """(strength, parent, why) of the parent this column refers to, or None; near misses noted."""
    snake = _snake(column)
    candidates = []
    for parent, frame in tables.items():
        key = keys[parent]
        if parent == child or key not in frame.columns:
            continue
        key_snake = _snake(key)
        if snake == key_snake and key_snake not in ID_WORDS:
            strength, named = 0, f"same name as {parent}.{key}"
        elif snake in _key_names_for(parent):
            strength, named = 1, f"named after {parent}"
        elif key_snake not in ID_WORDS and snake.endswith("_" + key_snake):
            strength, named = 2, f"named like {parent}.{key} with a role prefix"
        else:
            continue
        candidates.append((strength, parent, named))
    matches = []
    present = values.dropna()
    for strength, parent, named in sorted(candidates):
        if present.empty:
            notes.append(
                Note(child, column, f"{named}, but every value is missing: not proposed as a link", "foreign_key", True)
            )
            continue
        orphans = _orphans(present, tables[parent][keys[parent]])
        if orphans.empty:
            matches.append((strength, parent, f"{named}; all {len(present):,} values found there"))
        else:
            notes.append(
                Note(
                    child,
                    column,
                    f"{named}, but {len(orphans):,} of {len(present):,} values are not keys of {parent} "
                    f"(e.g. {format_examples(orphans.unique()[:5])}): not linked; fix or remove the orphans, "
                    "then declare it under foreign_keys",
                    about="foreign_key",
                    review=True,
                )
            )
    return matches[0] if matches else None


def _orphans(values: pd.Series, keys: pd.Series) -> pd.Series:
    """Values not among ``keys``; numbers and text compared as text when their kinds differ."""
    values, keys = _comparable(values), _comparable(keys)
    if pd.api.types.is_numeric_dtype(values.dtype) != pd.api.types.is_numeric_dtype(keys.dtype):
        values, keys = values.astype(str).str.strip(), keys.astype(str).str.strip()
    return values[~values.isin(keys.unique())]


def _comparable(values: pd.Series) -> pd.Series:
    if pd.api.types.is_float_dtype(values.dtype):
        whole = values.dropna()
        if bool((whole == np.round(whole)).all()):
            return whole.astype("int64")
    return values


# --------------------------------------------------------------------------- column types


def _propose_type(table: str, column: str, values: pd.Series, near_miss: bool = False) -> tuple[str, Note]:
    """The proposed type of one column and the note saying why."""

    def note(message, review=False):
        return Note(table, column, message, about="type", review=review)

    snake = _snake(column)
    present = values.dropna()
    dtype = values.dtype
    if near_miss:
        return "drop", note("dropped until it is declared as a foreign key")
    if re.fullmatch(r"unnamed_\d+", snake):
        return "drop", note("looks like a row index saved with the data; drop it", review=True)
    if present.empty:
        return "drop", note("no values at all", review=True)
    if pd.api.types.is_bool_dtype(dtype):
        return "boolean", note("true/false values")
    if isinstance(dtype, pd.CategoricalDtype):
        return "categorical", note("pandas categorical")
    if pd.api.types.is_datetime64_any_dtype(dtype):
        return "datetime", note("dates")
    if pd.api.types.is_timedelta64_dtype(dtype):
        return "drop", note("durations are not a column type: convert them to a number (e.g. minutes)", review=True)
    if pd.api.types.is_numeric_dtype(dtype) and not pd.api.types.is_complex_dtype(dtype):
        return _numeric_type(snake, present, len(values), note)
    if pd.api.types.is_string_dtype(dtype):  # object columns too
        kind = pd.api.types.infer_dtype(present, skipna=True)
        if kind == "string":
            return _text_type(snake, present.astype(str), note)
        if kind == "boolean":
            return "boolean", note("true/false values")
        if kind in ("integer", "floating", "mixed-integer-float", "decimal"):
            return _numeric_type(snake, pd.to_numeric(present), len(values), note)
        if kind in ("datetime", "datetime64", "date"):
            return "datetime", note("dates")
        return "categorical", note(f"values of mixed kinds ({kind}): check that they are codes", review=True)
    return "drop", note(f"values of type {dtype} are not supported: convert or drop them", review=True)


def _numeric_type(snake: str, present: pd.Series, n_rows: int, note) -> tuple[str, Note]:
    if pd.api.types.is_float_dtype(present.dtype) and not bool((present == np.round(present)).all()):
        return "continuous", note("numbers with decimals")
    whole = "whole numbers" if pd.api.types.is_integer_dtype(present.dtype) else "whole numbers stored as decimals"
    distinct = present.nunique()
    if set(present.unique().tolist()) <= {0, 1}:
        return "boolean", note(f"{whole}, only 0 and 1: a yes/no flag", review=distinct == 1)
    kind = identifier_by_name(snake, numbers=True)
    if kind is not None:
        return "drop", _identifier_note(note, f"named like {kind} ({snake})")
    if _words(snake) & set(CODE_WORDS):
        return "categorical", note(f"{whole}, but the name says they are codes ({snake})")
    if _id_like(snake):
        if distinct >= NEARLY_UNIQUE * len(present):
            return "drop", note("an identifier matching no table (unique on nearly every row): dropped", review=True)
        return "categorical", note("named like an id that matches no table: treated as codes", review=True)
    if distinct <= FEW_DISTINCT and distinct < FEW_DISTINCT_SHARE * n_rows:
        return "categorical", note(
            f"{whole} with only {distinct} distinct values: treated as categories; "
            "change to integer if they are quantities",
            review=True,
        )
    return "integer", note(f"{whole}, {_distinct(distinct)}")


def _text_type(snake: str, present: pd.Series, note) -> tuple[str, Note]:
    uniques = pd.Series(present.unique())
    words = set(uniques.str.strip().str.lower()) if len(uniques) <= 2 * len(BOOLEAN_WORDS) else set()
    if words and words <= BOOLEAN_WORDS:
        return "boolean", note(f"text with only {'/'.join(sorted(words, reverse=True))} values")
    dates = _date_reading(uniques)
    if dates is not None:
        return "datetime", note(dates, review="check" in dates)
    distinct = len(uniques)
    by_name, by_values = identifier_by_name(snake), identifier_by_values(present)
    if by_values is not None:
        return "drop", _identifier_note(note, f"the values are {by_values}")
    if by_name is not None:
        return "drop", _identifier_note(note, f"named like {by_name} ({snake}); {_distinct(distinct)}")
    if len(present) > 10 and distinct >= NEARLY_UNIQUE * len(present):
        return "drop", _identifier_note(
            note, f"text unique on nearly every row ({distinct:,} distinct of {len(present):,})")
    if distinct > 50 and distinct > 0.5 * len(present):
        return "drop", _identifier_note(
            note, f"text with many distinct values ({distinct:,} of {len(present):,} rows), which single people out")
    message = "text"
    if bool(uniques.str.fullmatch(r"0\d+").any()):
        message = "codes with leading zeros, kept as text"
    return "categorical", note(f"{message}, {_distinct(distinct)}")


def _identifier_note(note, why: str) -> Note:
    return note(
        f"a likely direct identifier: {why}. Dropped: it is never released unless you change its type "
        "(categorical) knowing that it names people",
        review=True,
    )


def _date_reading(uniques: pd.Series) -> str | None:
    """How text values read as dates (the note to write), or None when they are not all dates.

    ISO 8601 and the common day/month formats are parsed in C, each format tried on a sample
    first; only the values left go through pandas' slow element-wise parser, and a column that
    would need it for many values is not called a date column.
    """
    uniques = uniques.str.strip()
    if _all_match(uniques, _ISO_DATE) and _parse(uniques, format="ISO8601").notna().all():
        return "text that reads as dates (year first)"
    if not _all_match(uniques, f"{_ISO_DATE}|{_OTHER_DATE}"):
        return None
    shows_day, shows_month = (bool(uniques.str.contains(p).any()) for p in (_DAY_FIRST, _MONTH_FIRST))
    day_first = shows_day and not shows_month
    ambiguous = not (shows_day or shows_month) and bool(uniques.str.contains(r"^\d{1,2}[/.-]").any())
    order = "%d/%m" if day_first else "%m/%d"
    formats = ["ISO8601"] + [
        date + time
        for date in (f"{order}/%Y", f"{order}/%y", "%d.%m.%Y", "%d.%m.%y", "%Y/%m/%d")
        for time in ("", " %H:%M", " %H:%M:%S")
    ]
    left = uniques
    for fmt in formats:
        if _parse(left.iloc[:200], format=fmt).isna().all():
            continue  # this format reads none of the sample: skip the costly pass over every value
        left = left[_parse(left, format=fmt).isna().to_numpy()]
        if left.empty:
            break
    if len(left) > 10_000 or _parse(left, format="mixed", dayfirst=day_first).isna().any():
        return None
    if ambiguous:
        return "text that reads as dates, month first: check the day/month order"
    return f"text that reads as dates{', day first' if day_first else ''}"


def _parse(text: pd.Series, **options) -> pd.Series:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # pandas warns when it infers formats value by value
        try:
            return pd.to_datetime(text, errors="coerce", **options)
        except (ValueError, TypeError):  # several time zones in one column
            return pd.to_datetime(text, errors="coerce", utc=True, **options)


def _all_match(uniques: pd.Series, pattern: str) -> bool:
    """Whether every value matches; a small sample is tried first, since most columns fail at once."""
    return bool(uniques.iloc[:200].str.fullmatch(pattern).all() and uniques.str.fullmatch(pattern).all())


# --------------------------------------------------------------------------- table roles


def _propose_individual(table: str, frame: pd.DataFrame, notes: list[Note]) -> bool:
    named = set(_entity_names(table)) | set(_snake(table).split("_"))
    hint = next((w for w in PEOPLE_WORDS if w in named or _singular(w) in named), None)
    personal = [c for c in frame.columns if _words(_snake(c)) & set(PERSONAL_COLUMN_WORDS)]
    if hint is None and len(personal) < 2:
        notes.append(
            Note(table, None, "rows do not look like people: set individual to true if each row is one person",
                 about="individual")
        )  # fmt: skip
        return False
    why = f"the name {table!r}" if hint else f"columns {', '.join(personal)}"
    notes.append(
        Note(
            table,
            None,
            f"rows look like people ({why}): privacy is measured for individual tables; set individual to false "
            "if a row is not one distinct person",
            about="individual",
            review=True,
        )
    )
    return True


def _propose_anonymization(table: str, n_rows: int, notes: list[Note]) -> Anonymization:
    if n_rows < SMALLEST_AVATAR_TABLE:
        notes.append(
            Note(
                table,
                None,
                f"only {n_rows} row{'s' if n_rows != 1 else ''}: too few to avatarize, released as is (method keep); "
                "drop the table from the release if it is sensitive",
                about="anonymize",
                review=True,
            )
        )
        return Anonymization(method="keep")
    if n_rows <= DEFAULT_K:
        notes.append(
            Note(
                table,
                None,
                f"only {n_rows} rows: k lowered to {n_rows - 1} (k neighbours need k + 1 rows)",
                about="anonymize",
                review=True,
            )
        )
        return Anonymization(method="avatar", k=n_rows - 1)
    return Anonymization()


# --------------------------------------------------------------------------- YAML


def _render(proposal: Proposal) -> str:
    schema = proposal.schema
    lines = [
        "# Schema proposed by relanon from the data. Review it before use: every line marked",
        "# REVIEW needs a decision; the other comments say why each choice was made.",
        "# Add 'seed: <integer>' for reproducible runs, and quasi_identifiers for the audit.",
        "# Links: linear_sum keeps the number of children per parent; minimum_distance is more",
        "# private; original_order is the fastest and the least private.",
        "relanon: 1",
    ]
    if schema.name is not None:
        lines.append(f"name: {_scalar(schema.name)}")
    lines.append("tables:")
    for table in schema:
        lines += _render_table(table, proposal)
    return "\n".join(lines) + "\n"


def _render_table(table: Table, proposal: Proposal) -> list[str]:
    def comment(notes) -> str:
        text = "; ".join(("REVIEW: " if n.review else "") + n.message for n in notes)
        return f"  # {_one_line(text)}" if text else ""

    lines = [f"  {_scalar(table.name)}:"]
    table_notes = [n for n in proposal.notes_for(table.name) if n.about in ("table", "individual")]
    for note in table_notes:
        text = ("REVIEW: " if note.review else "") + note.message
        lines += ["    # " + line for line in textwrap.wrap(_one_line(text), 96)]
    if table.individual:
        lines.append(
            "    # quasi_identifiers: []  # REVIEW: list the columns an attacker may know "
            "(e.g. sex, birth year, zip code)"
        )
    key_notes = proposal.notes_for(table.name, table.primary_key, about="primary_key")
    lines.append(f"    primary_key: {_scalar(table.primary_key)}{comment(key_notes)}")
    lines.append(f"    individual: {'true' if table.individual else 'false'}")
    if table.foreign_keys:
        lines.append("    foreign_keys:")
        for fk in table.foreign_keys:
            fk_notes = proposal.notes_for(table.name, fk.column, about="foreign_key")
            lines.append(
                f"      - {{column: {_scalar(fk.column)}, references: {_scalar(fk.references)}, link: {fk.link}}}"
                + comment(fk_notes)
            )
    if table.columns:
        lines.append("    columns:")
        for column in table.columns:
            column_notes = proposal.notes_for(table.name, column.name)
            lines.append(f"      {_scalar(column.name)}: {column.type}{comment(column_notes)}")
    anonymize = table.anonymize
    anonymize_notes = proposal.notes_for(table.name, about="anonymize")
    if anonymize.method != "avatar" or anonymize.k is not None:
        k = f", k: {anonymize.k}" if anonymize.k is not None else ""
        lines.append(f"    anonymize: {{method: {anonymize.method}{k}}}{comment(anonymize_notes)}")
    n_rows = proposal.row_counts.get(table.name)
    if n_rows is not None:
        lines.insert(1, f"    # {n_rows:,} row{'s' if n_rows != 1 else ''}.")
    return lines


def _scalar(text: str) -> str:
    """``text`` as a YAML scalar: bare when safe, double-quoted (JSON syntax is valid YAML) otherwise."""
    if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_\-]*", text) and text.lower() not in _YAML_WORDS:
        return text
    return json.dumps(text, ensure_ascii=False)


def _distinct(n: int) -> str:
    return f"{n:,} distinct value{'s' if n != 1 else ''}"


def _one_line(text: str) -> str:
    return " ".join(str(text).split())

"""Propose what a schema says of each column and table: its type, whether its rows are people, its method.
"""

from __future__ import annotations

import re
import warnings

import numpy as np
import pandas as pd

from relanon.schema.coercion import NUMBER_WITH_COMMA
from relanon.schema.identifiers import identifier_by_name, identifier_by_values
from relanon.schema.model import Anonymization
from relanon.schema.options import default
from relanon.schema.proposal_rules import (
    BOOLEAN_WORDS,
    CODE_WORDS,
    DAY_FIRST,
    FEW_DISTINCT,
    FEW_DISTINCT_SHARE,
    ISO_DATE,
    MISSING_WORDS,
    MONTH_FIRST,
    MOSTLY_NUMBERS,
    NAMED_MONTH_DATE,
    NEARLY_UNIQUE,
    OTHER_DATE,
    PEOPLE_WORDS,
    PERSONAL_COLUMN_WORDS,
    SMALLEST_AVATAR_TABLE,
    Note,
    distinct_text,
    entity_names,
    id_like,
    name_words,
    singular,
    snake_name,
)

# --------------------------------------------------------------------------- column types


def propose_type(table: str, column: str, values: pd.Series, near_miss: bool = False,
                 people: bool = True) -> tuple[str, Note]:
    """The proposed type of one column and the note saying why.

    ``people``: whether the table's rows are people; a column called only ``name`` is a person's name there,
    a label elsewhere (a genre's, a product's). A column named after a kind of person (``customer_name``)
    is a person's name in any table.
    """

    def note(message, review=False):
        return Note(table, column, message, about="type", review=review)

    snake = snake_name(column)
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
    constant = _constant_type(present, dtype, len(values), note)
    if constant is not None:
        return constant
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
            return _text_type(snake, present.astype(str), note, people)
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
    if pd.api.types.is_integer_dtype(present.dtype):
        whole = "whole numbers"
    elif len(present) < n_rows:  # missing cells alone make pandas read whole numbers as floats
        whole = "whole numbers (some missing)"
    else:
        whole = "whole numbers stored as decimals"
    distinct = present.nunique()
    if set(present.unique().tolist()) <= {0, 1}:
        return "boolean", note(f"{whole}, only 0 and 1: a yes/no flag", review=distinct == 1)
    kind = identifier_by_name(snake, numbers=True)
    if kind is not None:
        return "drop", _identifier_note(note, f"named like {kind} ({snake})")
    if name_words(snake) & set(CODE_WORDS):
        return "categorical", note(f"{whole}, but the name says they are codes ({snake})")
    if id_like(snake):
        if distinct >= NEARLY_UNIQUE * len(present):
            return "drop", note("an identifier matching no table (unique on nearly every row): dropped", review=True)
        return "categorical", note("named like an id that matches no table: treated as codes", review=True)
    if distinct <= FEW_DISTINCT and distinct < FEW_DISTINCT_SHARE * n_rows:
        return "categorical", note(
            f"{whole} with only {distinct} distinct values: treated as categories; "
            "change to integer if they are quantities",
            review=True,
        )
    return "integer", note(f"{whole}, {distinct_text(distinct)}")


def _constant_type(present: pd.Series, dtype, n_rows: int, note) -> tuple[str, Note] | None:
    """A column holding one value on every row that has one: proposed as what it holds (a whole number is an
    integer, not a yes/no flag) with a note, or None for other columns."""
    if not (pd.api.types.is_numeric_dtype(dtype) and not pd.api.types.is_complex_dtype(dtype)) \
            or present.nunique() != 1:
        return None
    value = present.iloc[0]
    whole = float(value) == round(float(value))
    missing = f" ({n_rows - len(present):,} missing)" if len(present) < n_rows else ""
    return ("integer" if whole else "continuous"), note(
        f"a constant: all {len(present):,} values are {value:g}{missing}; released as it is (it tells nothing "
        "about any row): set its type to drop to leave it out")


def _text_type(snake: str, present: pd.Series, note, people: bool = True) -> tuple[str, Note]:
    uniques = pd.Series(present.unique())
    words = set(uniques.str.strip().str.lower()) if len(uniques) <= 2 * len(BOOLEAN_WORDS) else set()
    if words and words <= BOOLEAN_WORDS:
        return "boolean", note(f"text with only {'/'.join(sorted(words, reverse=True))} values")
    dates = _date_reading(uniques)
    if dates is not None:
        return "datetime", note(dates, review="check" in dates)
    distinct = len(uniques)
    by_name, by_values = identifier_by_name(snake), identifier_by_values(present)
    if not people and snake in ("name", "names"):
        if len(present) > 1 and distinct == len(present):  # each row its own name: it names the row (a hospital)
            return "drop", _identifier_note(note, f"a name unique on every row ({distinct:,} distinct), which "
                                                  "identifies each row")
        by_name = None  # a label shared by rows: the name of a genre, a product, a team (rows that are not people)
    if by_values is not None:
        return "drop", _identifier_note(note, f"the values are {by_values}")
    if by_name is not None:
        return "drop", _identifier_note(note, f"named like {by_name} ({snake}); {distinct_text(distinct)}")
    numbers = _numbers_in_text(uniques)
    if numbers is not None:
        return "categorical", note(f"{numbers}; as categories, a number fewer than min_count records hold is "
                                   "released missing", review=True)
    if len(present) > 10 and distinct >= NEARLY_UNIQUE * len(present):
        return "drop", _identifier_note(
            note, f"text unique on nearly every row ({distinct:,} distinct of {len(present):,})")
    if distinct > 50 and distinct > 0.5 * len(present):
        return "drop", _identifier_note(
            note, f"text with many distinct values ({distinct:,} of {len(present):,} rows), which single people out")
    message = "text"
    if bool(uniques.str.fullmatch(r"0\d+").any()):
        message = "codes with leading zeros, kept as text"
    return "categorical", note(f"{message}, {distinct_text(distinct)}")


def _numbers_in_text(uniques: pd.Series) -> str | None:
    """What keeps a column of numbers stored as text from being numbers (the note), or None.

    Pandas reads a column as text when a single cell is not a number: ``weight`` with ``?`` and
    ``<40`` among 800 numbers, or every number written with a comma (``58,77``, as spreadsheets in
    French or German save them, or ``1,234.50``). Proposed as categories, such a column would be
    released with each rare number missing, and dropped when most numbers are distinct (a cost in
    cents looks like an identifier): the note says what to fix to declare it a number.
    """
    values = uniques.str.strip()
    values = values[~values.str.lower().isin(MISSING_WORDS)]
    sample = values.iloc[:200]  # most text columns are far from numbers: a sample tells at once
    if len(values) < 2 or (pd.to_numeric(sample, errors="coerce").notna() | sample.str.fullmatch(NUMBER_WITH_COMMA)).mean() < 0.5:
        return None
    points = pd.to_numeric(values, errors="coerce").notna()
    commas = values.str.fullmatch(NUMBER_WITH_COMMA)
    if bool(commas.any()) and (points | commas).mean() >= MOSTLY_NUMBERS:
        return (f"numbers written with a comma (e.g. {_examples(values[commas])}): relanon reads neither a decimal "
                "comma nor a thousands separator; write them with a decimal point and no separator, then declare "
                "the column continuous")
    codes = bool(values.str.match(r"0\d").any())  # 01234: codes with leading zeros, whatever else they hold
    if points.mean() >= MOSTLY_NUMBERS and not points.all() and not codes:
        return (f"numbers stored as text, but {(~points).sum():,} distinct values are not numbers "
                f"(e.g. {_examples(values[~points])}): if they are codes keep categorical, else empty these cells "
                "(a missing value) or write numbers, then declare the column continuous (integer for whole numbers)")
    return None


def _examples(values: pd.Series, n: int = 4) -> str:
    return ", ".join(repr(v) for v in values.iloc[:n])


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
    if _all_match(uniques, ISO_DATE) and _parse(uniques, format="ISO8601").notna().all():
        return "text that reads as dates (year first)"
    if _all_match(uniques, NAMED_MONTH_DATE):  # Jun 03, 2021 or 3 June 2021: read as validation reads them
        if len(uniques) <= 10_000 and _parse(uniques, format="mixed").notna().all():
            return "text that reads as dates (month names)"
        return None
    if not _all_match(uniques, f"{ISO_DATE}|{OTHER_DATE}"):
        return None
    shows_day, shows_month = (bool(uniques.str.contains(p).any()) for p in (DAY_FIRST, MONTH_FIRST))
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


def propose_individual(table: str, frame: pd.DataFrame, notes: list[Note], parents=()) -> bool:
    """Whether a table's rows look like people: its name says so, or two of its columns are personal.

    A people word naming one of the table's ``parents`` speaks of them, not of its rows:
    ``patient_doctor`` (a patient's link to a doctor) and ``patient_visits`` are not people.
    """
    named = _names_in(table) - {name for parent in parents for name in _names_in(parent)}
    hint = next((w for w in PEOPLE_WORDS if w in named or singular(w) in named), None)
    personal = [c for c in frame.columns if name_words(snake_name(c)) & set(PERSONAL_COLUMN_WORDS)]
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


def _names_in(table: str) -> set[str]:
    """What a table's name calls its rows: ``patients``, ``patient``, and each word of ``tbl_patients``
    or ``Patients 2021`` with its singular."""
    words = snake_name(table).split("_")
    return set(entity_names(table)) | set(words) | {singular(word) for word in words}


def propose_anonymization(table: str, n_rows: int, notes: list[Note]) -> Anonymization:
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
    if n_rows <= default("anonymize", "k", "avatar"):
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



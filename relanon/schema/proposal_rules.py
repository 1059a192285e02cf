"""What a schema proposal reads in names and counts: the words and thresholds, and the note it writes.

The rules of :func:`relanon.schema.proposal.propose_schema` in one place: the words that make a
column name look like a key, a code or a person, the counts under which a column is a category or
a table too small to avatarize, and :class:`Note`, why one choice was made.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from relanon.schema.coercion import MISSING_MARKERS

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
YAML_WORDS = frozenset(("y", "n", "yes", "no", "on", "off", "true", "false", "null", "~"))
# Patterns for pyarrow's fast regular expressions (no \s: values are stripped first).
ISO_DATE = r"\d{4}-\d{1,2}-\d{1,2}(?:[ T]\d{1,2}:\d{2}(?::\d{2}(?:\.\d+)?)?)?(?:Z|[+-]\d{2}:?\d{2})?"
OTHER_DATE = r"\d{1,4}[/.-]\d{1,2}[/.-]\d{1,4}(?: \d{1,2}:\d{2}(?::\d{2})?)?"
_MONTHS = r"(?:[Jj]an|[Ff]eb|[Mm]ar|[Aa]pr|[Mm]ay|[Jj]un|[Jj]ul|[Aa]ug|[Ss]ep|[Oo]ct|[Nn]ov|[Dd]ec)[a-z]*\.?"
NAMED_MONTH_DATE = (rf"(?:\d{{1,2}} {_MONTHS},? \d{{4}}|{_MONTHS} \d{{1,2}},? \d{{4}})"
                    r"(?: \d{1,2}:\d{2}(?::\d{2})?(?: ?[AaPp][Mm])?)?")
"""``Jun 03, 2021``, ``3 June 2021``, ``June 3 2021 10:30 PM``: dates with an English month name."""
DAY_FIRST = r"^(?:1[3-9]|2\d|3[01])[/.-]\d{1,2}[/.-]"
MONTH_FIRST = r"^\d{1,2}[/.-](?:1[3-9]|2\d|3[01])[/.-]"

FEW_DISTINCT = 10
"""A column of whole numbers with at most this many distinct values ..."""
FEW_DISTINCT_SHARE = 0.05
"""... and fewer distinct values than this share of its rows is proposed as categorical."""
NEARLY_UNIQUE = 0.9
"""Text with at least this share of distinct values among its non-missing cells is proposed as drop."""
MOSTLY_NUMBERS = 0.9
"""Text with at least this share of its distinct values reading as numbers gets a note on the others."""
MISSING_WORDS = frozenset(marker.lower() for marker in MISSING_MARKERS)
"""Cells a numeric column reads as missing (``n/a``, ``null``...): not counted against a column of numbers."""
SMALLEST_AVATAR_TABLE = 3
"""Tables with fewer rows are kept as they are (``anonymize: {method: keep}``)."""


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


# --------------------------------------------------------------------------- names


def snake_name(name: str) -> str:
    """``PatientID``, ``patientId`` and ``Patient ID`` all become ``patient_id``."""
    spaced = re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", name)
    spaced = re.sub(r"([A-Z]+)([A-Z][a-z])", r"\1_\2", spaced)
    return re.sub(r"[^0-9a-zA-Z]+", "_", spaced).strip("_").lower()


def singular(word: str) -> str:
    irregular = {"people": "person", "children": "child", "men": "man", "women": "woman", "data": "data"}
    if word in irregular:
        return irregular[word]
    for plural, single in (("ies", "y"), ("sses", "ss"), ("xes", "x"), ("ches", "ch"), ("shes", "sh"), ("uses", "us")):
        if word.endswith(plural) and len(word) > len(plural) + 1:
            return word[: -len(plural)] + single
    if word.endswith("s") and not word.endswith(("ss", "us", "is")) and len(word) > 3:
        return word[:-1]
    return word


def entity_names(table: str) -> set[str]:
    """The names of ``table`` as an entity: ``visits`` -> {``visits``, ``visit``}."""
    snake = snake_name(table)
    return {snake, singular(snake), "_".join([*snake.split("_")[:-1], singular(snake.split("_")[-1])])}


def key_names_for(table: str) -> set[str]:
    """Snake-case column names that denote a key of ``table``: ``patient_id``, ``id_patient``, ``patientid``..."""
    names = set()
    for entity in entity_names(table):
        for word in ID_WORDS:
            names |= {f"{entity}_{word}", f"{word}_{entity}", f"{entity}{word}".replace("_", "")}
    return names


def id_like(snake: str) -> bool:
    words = snake.split("_")
    return words[0] in ID_WORDS or words[-1] in ID_WORDS


def name_words(snake: str) -> set[str]:
    words = snake.split("_")
    return {*words, *("_".join(words[i : i + 2]) for i in range(len(words) - 1))}


def distinct_text(n: int) -> str:
    return f"{n:,} distinct value{'s' if n != 1 else ''}"

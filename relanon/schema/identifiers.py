"""Direct identifiers in a column, from its name and its values (for the schema proposal).

A direct identifier names a person on its own: a name, an e-mail address, a phone number, a street
address, a national id or account number, a URL, free text (which holds all of these), or any text
unique on nearly every row. ``relanon init`` proposes such columns as ``drop`` with a ``REVIEW``
note saying why: releasing one takes a deliberate change of its type.

Names are read word by word (``nameFirst``, ``first_name`` and ``First Name`` alike); values are
read on a sample of distinct values, so a column of millions of rows costs a few milliseconds.
"""

from __future__ import annotations

import pandas as pd

from relanon.schema.proposal_rules import PEOPLE_WORDS, singular

__all__ = ["identifier_by_name", "identifier_by_values"]

# What each kind is called in a note, and the words of a column name that announce it.
_PERSON_NAME = "people's names"
_NAME_WORDS = {
    _PERSON_NAME: (
        "first_name", "firstname", "last_name", "lastname", "surname", "given_name", "givenname", "forename",
        "full_name", "fullname", "maiden_name", "middle_name", "nickname", "username", "user_name", "login",
        "name_first", "name_last", "name_given", "name_full", "name_middle", "birth_name", "family_name",
    ),
    "e-mail addresses": ("email", "e_mail", "mail", "email_address", "mail_address"),
    "phone numbers": ("phone", "telephone", "tel", "mobile", "cellphone", "fax", "phone_number", "msisdn"),
    "street addresses": ("address", "street", "addr", "address_line", "street_address", "postal_address"),
    "national identifiers or account numbers": (
        "ssn", "social_security", "nir", "nino", "passport", "national_id", "tax_id", "taxpayer_id", "iban",
        "bban", "credit_card", "card_number", "account_number", "driver_license", "driving_licence",
        "license_number", "licence_number", "insurance_number", "health_insurance_number", "medicare",
    ),
    "URLs": ("url", "website", "homepage", "web_page", "webpage", "profile_url"),
    "free text": (
        "comment", "comments", "note", "notes", "description", "remark", "remarks", "free_text", "message",
        "observation", "observations", "narrative", "summary_text",
    ),
}  # fmt: skip
# Kinds whose words also mark a number column as an identifier (a phone stored as an integer).
_NUMBER_KINDS = ("phone numbers", "national identifiers or account numbers")

# Values: most of a column's distinct values match.
_VALUE_PATTERNS = {
    "e-mail addresses": r"[^@\s]+@[^@\s]+\.[A-Za-z]{2,}",
    "URLs": r"(?i)(?:https?://|www\.)\S+",
    "phone numbers": r"\+?[0-9][0-9 ().\-]{6,}[0-9]",
    "national identifiers or account numbers": (
        r"[0-9]{3}-[0-9]{2}-[0-9]{4}"  # US social security number
        r"|[A-Z]{2}[0-9]{2}(?: ?[A-Z0-9]{4}){2,7}(?: ?[A-Z0-9]{1,4})?"  # IBAN
        r"|[12][0-9]{12}(?:[0-9]{2})?"  # French NIR
    ),
    "street addresses": (
        r"(?i)[0-9]+[a-z]?,? +(?:[^ ]+ +)*(?:street|st\.?|avenue|ave\.?|road|rd\.?|boulevard|blvd\.?|lane|ln\.?"
        r"|drive|dr\.?|way|court|ct\.?|place|pl\.?|square|rue|allee|allée|chemin|impasse|quai|strasse|straße"
        r"|calle|via|plaza)\b.*"
    ),
}
_SAMPLE = 2_000  # distinct values read
_MATCHING_SHARE = 0.6  # share of the sampled values that must match
_PHONE_DIGITS = 8  # a phone number has at least this many digits (a zip code has 5)
_FREE_TEXT_WORDS = 6  # median number of words of free text
_FREE_TEXT_LENGTH = 40  # ... and its median length in characters


def identifier_by_name(snake: str, *, numbers: bool = False) -> str | None:
    """The kind of direct identifier a (snake_case) column name announces, or ``None``.

    Parameters
    ----------
    snake : str
        The column name in snake case (``name_first`` for ``nameFirst``).
    numbers : bool
        Whether the column holds numbers: then only phone numbers and national ids count
        (``email_count`` is a quantity).

    Examples
    --------
    >>> identifier_by_name("name_first"), identifier_by_name("city")
    ("people's names", None)
    >>> identifier_by_name("doctor_name"), identifier_by_name("hospital_name")
    ("people's names", None)
    >>> identifier_by_name("phone", numbers=True), identifier_by_name("email_count", numbers=True)
    ('phone numbers', None)
    """
    words = snake.split("_")
    found = {*words, *("_".join(words[i : i + 2]) for i in range(len(words) - 1)), snake}
    if snake in ("name", "names"):
        return None if numbers else _PERSON_NAME
    if not numbers and words[-1] in ("name", "names") and {singular(w) for w in words[:-1]} & set(PEOPLE_WORDS):
        return _PERSON_NAME  # doctor_name, patient_name, customer_name (hospital_name is not one)
    for kind, names in _NAME_WORDS.items():
        if numbers and kind not in _NUMBER_KINDS:
            continue
        if found & set(names):
            return kind
    return None


def identifier_by_values(values: pd.Series) -> str | None:
    """The kind of direct identifier that most values of a text column are, or ``None``.

    E-mail addresses, URLs and street addresses count however often they repeat; number-like
    identifiers (phones, national ids) only when most rows have their own (a few 8-digit product
    codes repeated over the rows are codes).

    Examples
    --------
    >>> identifier_by_values(pd.Series(["ann@mail.org", "bob@site.com", "cid@x.fr"]))
    'e-mail addresses'
    >>> identifier_by_values(pd.Series(["+33 6 12 34 56 78", "06.98.76.54.32", "(555) 123-4567"]))
    'phone numbers'
    >>> identifier_by_values(pd.Series(["A+", "O-", "B+"])) is None
    True
    """
    present = values.dropna()
    text = pd.Series(pd.unique(present.astype(str)), dtype="str").str.strip()
    text = text[text != ""]
    mostly_distinct = len(text) >= 0.5 * len(present)
    text = text.iloc[:_SAMPLE]
    if text.empty:
        return None
    for kind, pattern in _VALUE_PATTERNS.items():
        if kind in _NUMBER_KINDS and not mostly_distinct:
            continue
        matching = text.str.fullmatch(pattern)
        if kind == "phone numbers":
            matching &= text.str.count(r"[0-9]") >= _PHONE_DIGITS
        if matching.mean() >= _MATCHING_SHARE:
            return kind
    words = text.str.count(r"\S+")
    if words.median() >= _FREE_TEXT_WORDS and text.str.len().median() >= _FREE_TEXT_LENGTH:
        return "free text"
    return None

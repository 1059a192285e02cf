"""Options given as words, checked in one place with one "did you mean" message.

Every string option of relanon (a method, a matching, a direction, a scenario...) is checked by
:func:`check_option` against the words allowed, which live beside the code that reads them (an
``enum.StrEnum`` or a tuple of words). A bad word gets the same message everywhere: what was
given, the closest allowed word when one is close, and the words allowed.
"""

from __future__ import annotations

import difflib
import numbers
from collections.abc import Iterable
from enum import StrEnum

from relanon.common.errors import ParameterError


class Method(StrEnum):
    """How a table is released (``anonymize: {method: ...}`` in the schema file)."""

    AVATAR = "avatar"  # synthetic records: the avatar method
    KEEP = "keep"  # the records as they are (reference tables)
    ANATOMIZE = "anatomize"  # real records, the sensitive column moved to a companion table per group
    BUCKETIZE = "bucketize"  # real records, the sensitive values shuffled within groups


class LinkMethod(StrEnum):
    """How the anonymized children of a foreign key are matched to the anonymized parents."""

    LINEAR_SUM = "linear_sum"
    MINIMUM_DISTANCE = "minimum_distance"
    ORIGINAL_ORDER = "original_order"  # the least private: a warning banner in every report


class CsvFormulas(StrEnum):
    """What a CSV release does with text cells a spreadsheet would run as a formula (``--csv-formulas``)."""

    NEUTRALIZE = "neutralize"  # prefixed with a single quote, as OWASP recommends (the default)
    KEEP = "keep"  # written as they are


FORMATS = ("csv", "parquet", "sqlite", "sql")  # the storage formats of a database (--format)

# the defaults of relanon.assess and relanon assess
DEFAULT_HOLDOUT = 0.5  # as many control as training people: the narrowest intervals (docs/guide/attacks.md)
DEFAULT_ROUNDS = None  # chosen within the time budget
DEFAULT_BUDGET_ROUNDS = 2  # the default time budget, in rounds (the first one's time)


class Direction(StrEnum):
    """Which way a metric is better."""

    HIGHER = "higher"
    LOWER = "lower"


def closest_name(word, candidates) -> str | None:
    """The candidate closest to ``word`` ignoring case (``"BMI"`` for ``"bmi"``), if one is close.

    Examples
    --------
    >>> closest_name("bmi", ["age", "BMI"])
    'BMI'
    >>> closest_name("zzz", ["age", "BMI"]) is None
    True
    """
    by_lower = {str(c).lower(): str(c) for c in candidates}
    close = difflib.get_close_matches(str(word).lower(), list(by_lower), n=1, cutoff=0.6)
    return by_lower[close[0]] if close else None


def did_you_mean(word, candidates) -> str:
    """``" (did you mean 'x'?)"`` when a candidate is close to ``word``, else ``""``."""
    close = closest_name(word, candidates)
    return f" (did you mean {close!r}?)" if close else ""


def option_message(name: str, value, allowed: Iterable) -> str:
    """The message for a word that is not one of ``allowed``: the same for every option of relanon.

    Examples
    --------
    >>> option_message("method", "avtar", ["avatar", "keep"])
    "method must be one of 'avatar', 'keep' (did you mean 'avatar'?), got 'avtar'"
    """
    allowed = [str(a) for a in allowed]
    listing = ", ".join(repr(a) for a in allowed)
    hint = did_you_mean(value, allowed) if isinstance(value, str) else ""
    return f"{name} must be one of {listing}{hint}, got {value!r}"


def check_option(value, allowed: Iterable, name: str) -> str:
    """``value`` when it is one of the words ``allowed`` (an ``enum.StrEnum`` class or strings).

    Raises
    ------
    ParameterError
        Naming the option, the words allowed and the closest one.

    Examples
    --------
    >>> check_option("lower", ("higher", "lower"), "direction")
    'lower'
    >>> check_option("hihger", ("higher", "lower"), "direction")
    Traceback (most recent call last):
    ...
    relanon.common.errors.ParameterError: direction must be one of 'higher', 'lower' (did you mean 'higher'?), got 'hihger'
    """
    words = [str(a) for a in allowed]
    if not isinstance(value, str) or value not in words:
        raise ParameterError(option_message(name, value, words))
    return str(value)


def integer_message(name: str, value, minimum=None, maximum=None, context: str = "") -> str:
    """The message for a number that is not an integer within bounds: the same for every option of relanon.

    Examples
    --------
    >>> integer_message("k", 1, 2, 9)
    'k must be an integer from 2 to 9, got 1'
    >>> integer_message("l", 1.5, 2, context=" (l-diversity)")
    'l must be an integer of at least 2 (l-diversity), got 1.5'
    """
    if minimum is not None and maximum is not None:
        bounds = f" from {minimum} to {maximum}"
    elif minimum is not None:
        bounds = f" of at least {minimum}"
    elif maximum is not None:
        bounds = f" of at most {maximum}"
    else:
        bounds = ""
    return f"{name} must be an integer{bounds}{context}, got {value!r}"


def check_integer(value, name: str, minimum=None, maximum=None, context: str = "") -> int:
    """``value`` as an ``int`` when it is an integer (not a boolean) within ``minimum`` .. ``maximum``.

    Parameters
    ----------
    value
        The value given (a Python or numpy integer).
    name : str
        The option's name, as the message shows it.
    minimum, maximum : int, optional
        Bounds, both included (None: no bound).
    context : str
        Words added after the bounds in the message (what the bound means, what to do).

    Raises
    ------
    ParameterError
        Naming the option, its bounds and the value given.

    Examples
    --------
    >>> check_integer(3, "k", minimum=2)
    3
    >>> check_integer(True, "k", minimum=2)
    Traceback (most recent call last):
    ...
    relanon.common.errors.ParameterError: k must be an integer of at least 2, got True
    """
    if (isinstance(value, bool) or not isinstance(value, numbers.Integral)
            or (minimum is not None and value < minimum) or (maximum is not None and value > maximum)):
        raise ParameterError(integer_message(name, value, minimum, maximum, context))
    return int(value)

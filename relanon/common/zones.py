"""Names of the time zones of the tz database, in the order relanon tries them when it infers a zone.

Offsets alone do not name a zone, so a zone is inferred by trying names until one fits: the clock that
explains a date's parts (:mod:`relanon.engine.column_rules`), the rule that gives every text of a column
the offset it was written with (:mod:`relanon.schema.text_formats`). The first name that fits is kept,
so the order decides which of several equivalent zones is named: the names asked first, then the
canonical ``Area/City`` names in alphabetical order, then (when asked) the legacy aliases and fixed
offsets (``US/Eastern``, ``Etc/GMT+5``...).
"""

from __future__ import annotations

import zoneinfo
from functools import lru_cache

AREAS = frozenset(("Africa", "America", "Antarctica", "Asia", "Atlantic", "Australia", "Europe", "Indian", "Pacific"))
"""The areas of the canonical ``Area/City`` names."""


@lru_cache(maxsize=8)
def zone_names(first: tuple[str, ...] = (), *, aliases: bool = True) -> tuple[str, ...]:
    """The zone names to try: ``first`` (those the tz database has), then the canonical ``Area/City``
    names, then, with ``aliases``, the other names holding a ``/``, each group alphabetical.

    Empty without a tz database (``zoneinfo.available_timezones()`` finds none).

    Examples
    --------
    >>> names = zone_names(("CET",))
    >>> names[0], names.index("Europe/Paris") < names.index("US/Eastern")
    ('CET', True)
    >>> "US/Eastern" in zone_names(aliases=False)
    False
    """
    available = zoneinfo.available_timezones()
    asked = [name for name in first if name in available]
    grouped = sorted(name for name in available if "/" in name and name not in asked)
    canonical = [name for name in grouped if name.split("/")[0] in AREAS]
    others = [name for name in grouped if name.split("/")[0] not in AREAS] if aliases else []
    return (*asked, *canonical, *others)

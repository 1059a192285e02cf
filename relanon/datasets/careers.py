"""A generated database of working lives, whose children must agree with their parent.

Three tables, declared in ``schemas/careers.yaml``::

    people (~5,000, individual) -> yearly_records (~28,000)
    people -> leaves (~4,200)

Each person has a birth date, a sex, a nationality, an education, an occupation and an *active
span*: ``first_year``, the first year in the registry (after their education, at 16 and later, or
1960 when the observation window opens later), and ``last_year``, the last one (a few years for
most, decades for some, never beyond 60 to 67 years of age, 2023 for those still there). The rules
that tie the children to their parent:

- every yearly record's ``year`` lies inside its person's active span, and a person has a record for
  about 3 active years in 4, so the number of records grows with the span;
- a record's income follows the person's education, sex and experience (``year - first_year``),
  and its sector the person's occupation;
- every leave starts in a year of the span, and a ``maternity`` leave is always a woman's, taken
  between 18 and 45.

:func:`careers_violations` measures how many child rows break these rules: 0 in the original, and
what a release must keep close to 0 (a yearly record dated after its person stopped working, or a
maternity leave linked to a man, is a record that cannot exist).
"""

from __future__ import annotations

from importlib import resources
from typing import NamedTuple

import numpy as np
import pandas as pd

from relanon.datasets._common import (
    add_years,
    as_datetime,
    checked_scale,
    checked_seed,
    draw_rows,
    fit_k_to_sizes,
    full_names,
    sex_labels,
    text,
    uniform_days,
)
from relanon.schema.model import Schema, load_schema

FIRST_YEAR = 1960
"""The observation window opens on 1 January of this year..."""
LAST_YEAR = 2023
"""...and closes on 31 December of this one."""

# education: (share, age at the first job, yearly income at entry in euros, occupations and their weights)
EDUCATION = {
    "primary": (0.15, 16, 17_000, {"farm worker": 3, "machine operator": 4, "builder": 4, "cashier": 3}),
    "secondary": (0.25, 18, 20_000, {"machine operator": 3, "builder": 2, "cashier": 4, "clerk": 3, "care assistant": 2}),
    "vocational": (0.20, 19, 22_000, {"technician": 4, "electrician": 3, "nurse": 2, "clerk": 2}),
    "bachelor": (0.20, 22, 27_000, {"accountant": 2, "teacher": 3, "nurse": 2, "civil servant": 3, "analyst": 2}),
    "master": (0.15, 24, 33_000, {"engineer": 4, "analyst": 3, "accountant": 2, "civil servant": 2, "teacher": 2}),
    "doctorate": (0.05, 28, 38_000, {"researcher": 5, "physician": 3, "teacher": 2}),
}
# occupation: sector of its employers
OCCUPATIONS = {
    "farm worker": "agriculture", "machine operator": "industry", "builder": "construction", "cashier": "retail",
    "clerk": "services", "care assistant": "health", "technician": "industry", "electrician": "construction",
    "nurse": "health", "accountant": "finance", "teacher": "education", "civil servant": "public",
    "analyst": "services", "engineer": "industry", "researcher": "research", "physician": "health",
}
SECTORS = list(dict.fromkeys(OCCUPATIONS.values()))
# nationality: weight (a few frequent, many rare)
COUNTRIES = {c: round(100 / (i + 1) ** 1.3, 2) for i, c in enumerate(
    "FR DE IT ES PT BE NL PL RO MA DZ TN SN CI GB IE CH AT SE DK NO FI GR TR BR VN CN IN US CA".split())}
# reason: (weight, median days, who may take it: "women 18-45" or "anyone")
LEAVE_REASONS = {
    "illness": (10, 8, "anyone"),
    "injury": (3, 20, "anyone"),
    "training": (4, 5, "anyone"),
    "parental": (2, 60, "anyone"),
    "maternity": (3, 112, "women 18-45"),
}
RECORD_SHARE = 0.75  # share of active years with a yearly record
LEAVES_PER_YEAR = 0.11


class CareersSizes(NamedTuple):
    """Number of people generated at a scale (records and leaves follow the spans)."""

    people: int


def careers_sizes(scale: float = 1.0) -> CareersSizes:
    """How many people :func:`careers` generates at ``scale`` (records: about 5.6 a person).

    Examples
    --------
    >>> careers_sizes(1.0), careers_sizes(0.001)
    (CareersSizes(people=5000), CareersSizes(people=20))
    """
    return CareersSizes(people=max(20, round(5_000 * checked_scale(scale))))


def careers_schema() -> Schema:
    """The schema of the careers database, as shipped in ``schemas/careers.yaml``.

    Examples
    --------
    >>> list(careers_schema().tables)
    ['people', 'yearly_records', 'leaves']
    """
    text_ = resources.files("relanon.schemas").joinpath("careers.yaml").read_text(encoding="utf-8")
    return load_schema(text_)


def careers(scale: float = 1.0, seed: int = 0) -> tuple[Schema, dict[str, pd.DataFrame]]:
    """Generate the careers database (people, their yearly records and their leaves) and its schema.

    Parameters
    ----------
    scale : float, default 1.0
        Size factor, any positive number: 1 gives 5,000 people, about 28,000 yearly records and
        4,200 leaves; every table grows linearly.
    seed : int, default 0
        Seed of the generator (a non-negative integer): the same seed gives identical tables.

    Returns
    -------
    schema : Schema
        :func:`careers_schema`, ``k`` lowered where a tiny scale leaves fewer than ``k + 1`` rows.
    database : dict of str to DataFrame
        ``people``, ``yearly_records`` and ``leaves``: keys int64, years int64, dates
        datetime64[ns], incomes float64, categories str.

    Examples
    --------
    >>> schema, db = careers(scale=0.05, seed=1)
    >>> len(db["people"]), careers_violations(db)
    (250, {'yearly_records': 0.0, 'leaves': 0.0})
    """
    sizes = careers_sizes(scale)
    streams = [np.random.default_rng(s) for s in np.random.SeedSequence(checked_seed(seed)).spawn(3)]
    people = _people(sizes.people, streams[0])
    database = {
        "people": people,
        "yearly_records": _yearly_records(people, streams[1]),
        "leaves": _leaves(people, streams[2]),
    }
    return fit_k_to_sizes(careers_schema(), database), database


def careers_violations(database, *, people_key: str = "person_id") -> dict[str, float]:
    """Share of child rows (0 to 1) that break a rule of the careers database with their linked person.

    A yearly record breaks it when its year lies outside the person's span
    ``[first_year, last_year]``; a leave when it starts outside the span, or is a maternity leave
    of a man or of a woman younger than 18 or older than 45 that year. A child without a person
    (a missing or unknown key) breaks it too. Works on the original and on any release.

    Examples
    --------
    >>> people = pd.DataFrame({"person_id": [1], "sex": ["M"], "birth_date": pd.to_datetime(["1970-05-01"]),
    ...                        "first_year": [1990], "last_year": [2000]})
    >>> records = pd.DataFrame({"person_id": [1, 1, 1, 1], "year": [1989, 1990, 2000, 2001]})
    >>> leaves = pd.DataFrame({"person_id": [1, 1], "start_date": pd.to_datetime(["1995-01-01", "1995-01-01"]),
    ...                        "reason": ["illness", "maternity"]})
    >>> careers_violations({"people": people, "yearly_records": records, "leaves": leaves})
    {'yearly_records': 0.5, 'leaves': 0.5}
    """
    people = database["people"].set_index(people_key)
    out = {}
    for name, when in (("yearly_records", "year"), ("leaves", "start_date")):
        children = database[name]
        if len(children) == 0:
            out[name] = 0.0
            continue
        keys = children[people_key].to_numpy()
        first = people["first_year"].reindex(keys).to_numpy(dtype=float)
        last = people["last_year"].reindex(keys).to_numpy(dtype=float)
        year = children[when].to_numpy(dtype=float) if when == "year" else children[when].dt.year.to_numpy(dtype=float)
        broken = ~((year >= first) & (year <= last))  # NaN (no person) compares False: broken
        if name == "leaves":
            sex = people["sex"].reindex(keys).to_numpy(dtype=object)
            age = year - people["birth_date"].reindex(keys).dt.year.to_numpy(dtype=float)
            maternity = children["reason"].to_numpy(dtype=object) == "maternity"
            broken |= maternity & ~((sex == "F") & (age >= 18) & (age <= 45))
        out[name] = float(broken.mean())
    return out


# --------------------------------------------------------------------------- tables


def _people(n: int, rng: np.random.Generator) -> pd.DataFrame:
    educations = list(EDUCATION)
    share = np.array([e[0] for e in EDUCATION.values()])
    education = rng.choice(len(educations), size=n, p=share / share.sum())
    female = rng.random(n) < 0.5
    entry_age = np.array([e[1] for e in EDUCATION.values()])[education] + rng.geometric(0.3, size=n) - 1
    entry_age = np.minimum(entry_age, 45)
    birth_year = rng.integers(FIRST_YEAR - 40, LAST_YEAR - entry_age + 1)
    start_year = birth_year + entry_age
    # the years in the registry: a few for most, decades for some, never beyond 60 to 67 years of age
    length = np.floor(rng.lognormal(np.log(6.0), 0.9, size=n)).astype(np.int64)
    stop_year = np.minimum(start_year + length, birth_year + rng.integers(60, 68, size=n))
    first_year = np.maximum(start_year, FIRST_YEAR)
    last_year = np.clip(stop_year, first_year, LAST_YEAR)

    birthday = np.datetime64("1970-01-01", "D") + uniform_days(np.full(n, 365), rng)
    birth = add_years(birthday, birth_year - 1970)
    countries = list(COUNTRIES)
    weight = np.array(list(COUNTRIES.values()), dtype=float)
    country = rng.choice(len(countries), size=n, p=weight / weight.sum())
    occupations = list(dict.fromkeys(o for e in EDUCATION.values() for o in e[3]))
    occupation_weights = np.array([[e[3].get(o, 0) for o in occupations] for e in EDUCATION.values()], dtype=float)
    occupation = draw_rows(occupation_weights[education], rng)
    return pd.DataFrame(
        {
            "person_id": np.arange(1, n + 1, dtype=np.int64),
            "full_name": full_names(female, rng),
            "sex": sex_labels(female),
            "birth_date": as_datetime(birth),
            "nationality": text(np.asarray(countries, dtype=object)[country]),
            "education": text(np.asarray(educations, dtype=object)[education]),
            "occupation": text(np.asarray(occupations, dtype=object)[occupation]),
            "first_year": first_year.astype(np.int64),
            "last_year": last_year.astype(np.int64),
        }
    )


def _yearly_records(people: pd.DataFrame, rng: np.random.Generator) -> pd.DataFrame:
    first = people["first_year"].to_numpy()
    span = people["last_year"].to_numpy() - first + 1
    who = np.repeat(np.arange(len(people)), span)
    year = first[who] + (np.arange(len(who)) - np.repeat(np.cumsum(span) - span, span))
    kept = rng.random(len(who)) < RECORD_SHARE
    # every person keeps at least one record (their first year when the draw kept none)
    starts = np.cumsum(span) - span
    none_kept = np.add.reduceat(kept, starts) == 0
    kept[starts[none_kept]] = True
    who, year = who[kept], year[kept]

    education = pd.Categorical(people["education"], categories=list(EDUCATION)).codes.astype(np.int64)[who]
    female = people["sex"].to_numpy()[who] == "F"
    # the sector of the person's occupation, another one some years
    own_sector = pd.Categorical(people["occupation"].map(OCCUPATIONS), categories=SECTORS).codes.astype(np.int64)[who]
    sector = np.where(rng.random(len(who)) < 0.85, own_sector, rng.integers(len(SECTORS), size=len(who)))

    experience = year - first[who]
    entry_income = np.array([e[2] for e in EDUCATION.values()], dtype=float)[education]
    part_time = rng.random(len(who)) < np.where(female, 0.25, 0.07)
    hours = np.where(part_time, rng.normal(900, 120, len(who)), rng.normal(1720, 90, len(who)))
    hours = np.round(np.clip(hours, 400, 2300)).astype(np.int64)
    growth = np.minimum(experience, 30) * 0.025 * (1 + 0.4 * (education >= 3))
    # incomes in euros of the year: 2 % inflation a year since 2000
    income = entry_income * (1 + growth) * np.where(female, 0.9, 1.0) * 1.02 ** (year - 2000)
    income *= hours / 1720 * rng.lognormal(0.0, 0.12, len(who))
    order = np.lexsort((who, year))
    return pd.DataFrame(
        {
            "record_id": np.arange(1, len(who) + 1, dtype=np.int64),
            "person_id": people["person_id"].to_numpy()[who][order],
            "year": year[order].astype(np.int64),
            "sector": text(np.asarray(SECTORS, dtype=object)[sector][order]),
            "hours": hours[order],
            "income": np.round(income[order], -1),
        }
    )


def _leaves(people: pd.DataFrame, rng: np.random.Generator) -> pd.DataFrame:
    first = people["first_year"].to_numpy()
    last = people["last_year"].to_numpy()
    counts = rng.poisson(LEAVES_PER_YEAR * (last - first + 1))
    who = np.repeat(np.arange(len(people)), counts)
    opens = (first[who] - 1970).astype("datetime64[Y]").astype("datetime64[D]")
    closes = (last[who] - 1970 + 1).astype("datetime64[Y]").astype("datetime64[D]")
    start = opens + uniform_days(closes - opens, rng)
    year = start.astype("datetime64[Y]").astype(np.int64) + 1970

    reasons = list(LEAVE_REASONS)
    female = people["sex"].to_numpy()[who] == "F"
    age = year - people["birth_date"].dt.year.to_numpy()[who]
    allowed = np.array([[True] * len(reasons)] * len(who))
    maternity = reasons.index("maternity")
    allowed[:, maternity] = female & (age >= 18) & (age <= 45)
    weights = np.array([r[0] for r in LEAVE_REASONS.values()], dtype=float) * allowed
    reason = draw_rows(weights, rng)
    median = np.array([r[1] for r in LEAVE_REASONS.values()], dtype=float)[reason]
    days = np.where(reason == maternity, median, np.round(median * rng.lognormal(0.0, 0.6, len(who))))
    order = np.lexsort((who, start.astype(np.int64)))
    return pd.DataFrame(
        {
            "leave_id": np.arange(1, len(who) + 1, dtype=np.int64),
            "person_id": people["person_id"].to_numpy()[who][order],
            "start_date": as_datetime(start[order]),
            "reason": text(np.asarray(reasons, dtype=object)[reason][order]),
            "days": np.maximum(days[order], 1).astype(np.int64),
        }
    )

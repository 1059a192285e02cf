"""Rare values generalized, then erased only where no level holds them (docs/guide/small-groups.md).

A value that fewer than ``min_count`` records of a table hold never reaches the release verbatim
(:mod:`relanon.engine.private_values`). Rather than making it missing, :func:`generalize` replaces it,
in the records the avatars' categories are drawn from, by the most specific level that at least
``min_count`` records hold:

1. **A coarser level found in the data**: where another category column of the table is told by
   this one (a city tells its state: Goodman and Kruskal's lambda at least
   :data:`~relanon.engine.small_groups.FAMILY_TIE`, read on values several records hold, with fewer
   distinct values), a rare city becomes ``"other in OK"``, its record's state, when at least
   ``min_count`` records hold a rare city of that state. The coarser columns are tried from the most
   distinct values down (a state before a country).
2. **A merged level**, ``"other"``, for the rare values left, when together at least ``min_count``
   records hold them (taking in the smallest coarser levels when they alone are too few).
3. **A number or a date** decoded as a category (few distinct values): the nearest value that
   ``min_count`` records hold (its interval among the order statistics); when no value is held that
   often, consecutive values form buckets of at least ``min_count`` records, each released as its
   bucket's mean.

Only what no level can hold (fewer than ``min_count`` rare records in all) is left rare, and the rule
of rare values releases it as missing. A missing value stays missing and a present one present: the
missing share of a column is the original's. The levels are aggregates (labels and counts), never
rows: :class:`Generalization` says what was done, column by column, for ``release.json`` and the report.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from relanon.engine.private_values import holder_counts, value_codes
from relanon.engine.small_groups import FAMILY_HELD, FAMILY_TIE, guess_gain

OTHER = "other"


@dataclass(frozen=True)
class ColumnGeneralization:
    """What :func:`generalize` did to the rare values of one column.

    Attributes
    ----------
    column : str
    min_count : int
    rare_values, rare_records : int
        Distinct values fewer than ``min_count`` records hold, and the records holding them.
    levels : dict
        Level released -> how it was made (``"coarser: state"``, ``"merged"``, ``"nearest value"``,
        ``"bucket mean"``) and how many records hold it; no original value but the released ones.
    left_rare : int
        Records whose rare value no level could hold: released as missing by the rule of rare values.
    """

    column: str
    min_count: int
    rare_values: int
    rare_records: int
    levels: dict = field(default_factory=dict)
    left_rare: int = 0

    def to_dict(self) -> dict:
        return {"column": self.column, "min_count": self.min_count, "rare_values": self.rare_values,
                "rare_records": self.rare_records, "left_rare": self.left_rare,
                "levels": {str(k): dict(v) for k, v in self.levels.items()}}


@dataclass(frozen=True)
class Generalization:
    """The generalized table and, per column with rare values, a :class:`ColumnGeneralization`."""

    table: pd.DataFrame
    columns: dict

    def level_counts(self, value_counts: dict) -> dict:
        """``value_counts`` (whole-table counts per column) with the records of each level added, for the
        rule of rare values to count the levels: a level holds the records it was made of."""
        out = dict(value_counts)
        for column, done in self.columns.items():
            if column in out and done.levels:
                levels = pd.Series({label: level["records"] for label, level in done.levels.items()}, dtype=np.int64)
                out[column] = pd.concat([out[column], levels]).groupby(level=0, dropna=False, sort=False).sum()
        return out


def generalize(table: pd.DataFrame, columns, thresholds, *, value_counts=None, numeric=()) -> Generalization:
    """``table`` with the rare values of ``columns`` replaced by their most specific held level.

    Parameters
    ----------
    table : DataFrame
        The records (or a batch of them).
    columns : list of str
        The categorical-like columns (categories, booleans, numbers and dates of few values).
    thresholds : Mapping[str, int]
        Per column, the fewest records that must hold a value for it to be released (``min_count``).
    value_counts : Mapping[str, Series], optional
        Per column, how many records of the whole table hold each value (a batch of the Dask engine):
        rarity is read there; levels are counted in ``table`` (a level a batch holds often enough, the
        whole table holds at least as often).
    numeric : collection of str
        The columns of ``columns`` holding numbers or dates (generalized to values, not labels).

    Examples
    --------
    >>> people = pd.DataFrame({"city": ["Tulsa", "Enid", "Tulsa", "Lawton"] + ["Paris"] * 5 + ["Lyon"] * 5,
    ...                        "state": ["OK"] * 4 + ["IDF"] * 5 + ["ARA"] * 5})
    >>> done = generalize(people, ["city", "state"], {"city": 3, "state": 3})
    >>> done.table["city"].tolist()[:5]
    ['other in OK', 'other in OK', 'other in OK', 'other in OK', 'Paris']
    >>> done.columns["city"].levels
    {'other in OK': {'how': 'coarser: state', 'records': 4}}
    """
    value_counts = value_counts or {}
    out = table.copy()
    done = {}
    labelled = [c for c in columns if c not in set(numeric) and _takes_labels(table[c])]
    for column in columns:
        threshold = int(thresholds.get(column, 1))
        series = table[column]
        if threshold <= 1 or pd.api.types.is_bool_dtype(series.dtype):
            continue
        present = series.notna().to_numpy()
        counts = holder_counts(series, value_counts.get(column))
        rare = present & (counts < threshold)
        if not rare.any():
            continue
        if column in set(numeric):
            released, levels = _numbers(series, rare, counts, threshold)
        elif column in labelled:
            released, levels = _labels(table, column, rare, threshold, [c for c in labelled if c != column])
        else:
            continue
        out[column] = released
        left = int((rare & (holder_counts(released, None) < threshold)).sum()) if levels else int(rare.sum())
        done[column] = ColumnGeneralization(column, threshold, int(series[rare].nunique()), int(rare.sum()),
                                            levels, left)
    return Generalization(out, done)


def merge_generalized(parts) -> list[dict]:
    """The :meth:`ColumnGeneralization.to_dict` lists of several batches of a table as one list: counts
    added, column by column and level by level (in the order first met).

    Examples
    --------
    >>> one = [{"column": "city", "min_count": 5, "rare_values": 3, "rare_records": 6, "left_rare": 0,
    ...         "levels": {"other": {"how": "merged", "records": 6}}}]
    >>> merge_generalized([one, one])[0]["levels"]
    {'other': {'how': 'merged', 'records': 12}}
    """
    merged: dict = {}
    for part in parts:
        for entry in part:
            into = merged.setdefault(entry["column"], {**entry, "rare_values": 0, "rare_records": 0, "left_rare": 0,
                                                       "levels": {}})
            for key in ("rare_values", "rare_records", "left_rare"):  # a value rare in two batches counts twice
                into[key] += entry[key]
            for label, level in entry["levels"].items():
                held = into["levels"].setdefault(label, {"how": level["how"], "records": 0})
                held["records"] += level["records"]
    return list(merged.values())


def generalized_detail(generalized) -> str:
    """What the progress line of a table says of its rare values generalized (:meth:`ColumnGeneralization.to_dict`
    entries).

    Examples
    --------
    >>> generalized_detail([{"column": "city", "rare_records": 40, "levels": {"other": {}}, "left_rare": 0}])
    '; rare values generalized: city (40 records into 1 levels)'
    """
    if not generalized:
        return ""
    said = [f"{g['column']} ({g['rare_records']} records into {len(g['levels'])} levels"
            + (f", {g['left_rare']} left missing" if g["left_rare"] else "") + ")" for g in generalized]
    return "; rare values generalized: " + ", ".join(said)


def _takes_labels(series: pd.Series) -> bool:
    """Whether a level's label can be written in ``series`` without changing what it holds (text, categories)."""
    dtype = series.dtype
    return (pd.api.types.is_object_dtype(dtype) or pd.api.types.is_string_dtype(dtype)
            or isinstance(dtype, pd.CategoricalDtype))


def coarser_columns(table: pd.DataFrame, column: str, candidates, held: int = FAMILY_HELD,
                    tie: float = FAMILY_TIE) -> list:
    """The columns of ``candidates`` that ``column`` tells (a city its state), with fewer distinct values,
    from the most distinct values down.

    Examples
    --------
    >>> people = pd.DataFrame({"city": list("aabbccdd") * 2, "state": list("XXXXYYYY") * 2,
    ...                        "sex": list("FM") * 8})
    >>> coarser_columns(people, "city", ["state", "sex"], held=2)
    ['state']
    """
    codes = value_codes(table[column])
    read = np.bincount(codes)[codes] >= held
    distinct = table[column].nunique()
    found = []
    for other in candidates:
        n_other = table[other].nunique()
        if not read.any() or n_other >= distinct or n_other < 2:
            continue
        if guess_gain(codes[read], value_codes(table[other])[read]) >= tie:
            found.append((n_other, other))
    return [c for _, c in sorted(found, key=lambda f: -f[0])]


def _label(series: pd.Series, label: str) -> str:
    """``label``, bracketed until no value of ``series`` is written so."""
    taken = set(series.dropna().astype(str))
    while label in taken:
        label = f"[{label}]"
    return label


def _labels(table: pd.DataFrame, column: str, rare: np.ndarray, threshold: int, others) -> tuple[pd.Series, dict]:
    """A category column's rare values replaced by coarser levels, then by the merged level."""
    series = table[column]
    labels = np.full(len(table), None, dtype=object)
    remaining = rare.copy()
    levels = {}
    groups = []  # (records, label) of the coarser levels, to merge the smallest if the rest is too few
    for coarser in coarser_columns(table, column, others):
        at = remaining & table[coarser].notna().to_numpy()
        if not at.any():
            continue
        values = table[coarser].to_numpy(dtype=object)
        held = pd.Series(values[at]).value_counts(sort=False)
        for value, count in held.items():
            if count < threshold:
                continue
            records = at & (values == value)
            label = _label(series, f"{OTHER} in {value}")
            labels[records] = label
            remaining &= ~records
            levels[label] = {"how": f"coarser: {coarser}", "records": int(count)}
            groups.append((records, label))
    if remaining.any():
        merged = remaining.copy()
        for records, label in sorted(groups, key=lambda g: int(g[0].sum())):
            if merged.sum() >= threshold:
                break
            merged |= records
            del levels[label]
        if merged.sum() >= threshold:
            label = _label(series, OTHER)
            labels[merged] = label
            levels[label] = {"how": "merged", "records": int(merged.sum())}
            remaining[:] = False
        else:  # too few: the levels taken back keep their labels
            for records, label in groups:
                if label not in levels:
                    levels[label] = {"how": f"coarser: {label}", "records": int(records.sum())}
    assigned = labels != None  # noqa: E711 (element-wise)
    released = series.copy()
    if isinstance(series.dtype, pd.CategoricalDtype):
        new = [label for label in levels if label not in set(series.cat.categories)]
        released = released.cat.add_categories(new)
    elif not pd.api.types.is_object_dtype(series.dtype):
        released = released.astype(series.dtype)
    released[assigned] = labels[assigned]
    return released, levels


def _numbers(series: pd.Series, rare: np.ndarray, counts: np.ndarray, threshold: int) -> tuple[pd.Series, dict]:
    """A number or date column's rare values replaced by the mean of their interval among order statistics.

    The rare records, in the order of their values, are cut into buckets of at least ``threshold`` records
    (equal values stay together) and each takes its bucket's mean, so that the column keeps its spread: a
    snap to the nearest frequent value would pile a column whose values are each held by few people onto
    its few common ones (ages of 200 doctors, 34 values, 4 of them held by 10). When the rare records are
    fewer than ``threshold`` together, they take the nearest value ``threshold`` records hold.
    """
    present = series.notna().to_numpy()
    frequent = np.sort(pd.unique(series[present & ~rare]))
    released = series.copy()
    levels = {}
    if rare.sum() < threshold:
        if len(frequent):
            order = _as_numbers(pd.Series(frequent))
            x = _as_numbers(series[rare])
            upper = np.clip(np.searchsorted(order, x), 0, len(order) - 1)
            lower = np.clip(upper - 1, 0, len(order) - 1)
            nearest = np.where(np.abs(x - order[lower]) <= np.abs(order[upper] - x), lower, upper)
            released[rare] = frequent[nearest]
            for value, count in pd.Series(frequent[nearest]).value_counts(sort=False).items():
                levels[value] = {"how": "nearest value", "records": int(count)}
        return released, levels
    # buckets of consecutive rare values, at least ``threshold`` records each
    positions = np.flatnonzero(rare)
    order = positions[np.argsort(_as_numbers(series[rare]), kind="stable")]
    sorted_values = series.to_numpy()[order]
    bounds, start = [], 0
    while start < len(order):
        end = min(start + threshold, len(order))
        while end < len(order) and sorted_values[end] == sorted_values[end - 1]:
            end += 1  # equal values stay in one bucket
        if len(order) - end < threshold:
            end = len(order)
        bounds.append((start, end))
        start = end
    for start, end in bounds:
        members = series.iloc[order[start:end]]
        mean = _rounded_like(members.mean(), series)
        released.iloc[order[start:end]] = mean
        # the bucket's ends are people's own values: never written, only its mean and size
        entry = levels.setdefault(mean, {"how": "bucket mean", "records": 0})
        entry["records"] += int(end - start)
    return released, levels


def _rounded_like(mean, series: pd.Series):
    """A bucket's mean written as the column writes its values: whole numbers rounded, dates at midnight kept
    at midnight."""
    if pd.api.types.is_integer_dtype(series.dtype):
        return int(round(float(mean)))
    if pd.api.types.is_datetime64_any_dtype(series.dtype):
        present = series.dropna()
        if len(present) and (present == present.dt.normalize()).all():
            return mean.round("D")
    return mean


def _as_numbers(series: pd.Series) -> np.ndarray:
    if pd.api.types.is_datetime64_any_dtype(series.dtype):
        return series.astype("int64").to_numpy(dtype=np.float64)
    return pd.to_numeric(series).to_numpy(dtype=np.float64)


def _text(value) -> str:
    return str(value.item() if isinstance(value, np.generic) else value)

"""The columns an attacker reads, coded once for every attack, and the attacker's distance.

Every frame of an attack (the release, the training originals, the control originals) is coded
the same way: a numeric column (continuous, integer, datetime in seconds) as its float values, any
other column as integer codes shared by all frames (equal values, equal codes), missing as NaN.

The attacker's distance between two records is the mixed-type distance of anonymeter, inspired by
Gower's: over the columns it knows, the sum of ``|a - b| / span`` for numbers (``span`` the range
of the column over every frame, so a column adds at most 1) and of ``a != b`` for the others. A
missing value is at distance 0 from a missing value and 1 from any value. Nearest records are
found by brute force in blocks (exact, memory bounded). Records at the same distance are told
apart by a seeded random order of the reference, drawn anew for every column subset: an attacker
facing a tie picks at random, and the two sides of a linkability attack pick independently.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from relanon.common.errors import ParameterError
from relanon.engine.columns import NUMERIC_KINDS, numeric_values

BLOCK_CELLS = 4_000_000  # distances held at once per accumulator (float32): 16 MB


@dataclass(frozen=True, eq=False)
class CodedFrames:
    """Frames coded for the attacks.

    Attributes
    ----------
    columns : tuple of str
        The coded columns, in order.
    types : dict
        Column -> schema type.
    numeric : numpy.ndarray of bool
        Whether each column is numeric (compared by order) or not (compared by equality).
    spans : numpy.ndarray
        Range of each numeric column over all frames (1 when constant or not numeric).
    labels : dict
        Categorical column -> its values, indexed by code (to show a predicate).
    frames : dict
        Frame name -> float matrix (rows x columns), NaN for missing.
    """

    columns: tuple[str, ...]
    types: dict
    numeric: np.ndarray
    spans: np.ndarray
    labels: dict
    frames: dict

    def __getitem__(self, name: str) -> np.ndarray:
        return self.frames[name]

    def index(self, columns: Sequence[str]) -> np.ndarray:
        """Positions of ``columns`` among the coded columns."""
        position = {c: i for i, c in enumerate(self.columns)}
        unknown = [c for c in columns if c not in position]
        if unknown:
            raise ParameterError(f"unknown column(s) {unknown}; the attacked columns are {list(self.columns)}")
        return np.array([position[c] for c in columns], dtype=np.int64)

    def value_label(self, column: int, value: float):
        """The original value behind a coded one (a label, a number, a timestamp)."""
        name = self.columns[column]
        if np.isnan(value):
            return None
        if not self.numeric[column]:
            return self.labels[name][int(value)]
        if self.types[name] == "datetime":
            return pd.Timestamp(value, unit="s")
        return float(value)


def code_frames(frames: Mapping[str, pd.DataFrame], types: Mapping[str, str]) -> CodedFrames:
    """Code every frame on the same columns, with codes and spans shared by all.

    Examples
    --------
    >>> a = pd.DataFrame({"age": [30, 50], "sex": ["F", "M"]})
    >>> b = pd.DataFrame({"age": [40, None], "sex": ["M", None]})
    >>> coded = code_frames({"a": a, "b": b}, {"age": "integer", "sex": "categorical"})
    >>> coded["b"].tolist(), coded.spans.tolist()
    ([[40.0, 1.0], [nan, nan]], [20.0, 1.0])
    """
    columns = tuple(types)
    names = list(frames)
    numeric = np.array([types[c] in NUMERIC_KINDS for c in columns], dtype=bool)
    matrices = {name: np.empty((len(frames[name]), len(columns)), dtype=np.float64) for name in names}
    spans = np.ones(len(columns))
    labels = {}
    for j, column in enumerate(columns):
        if numeric[j]:
            for name in names:
                matrices[name][:, j] = numeric_values(frames[name][column], types[column], table=name)
            stacked = np.concatenate([matrices[name][:, j] for name in names])
            present = stacked[~np.isnan(stacked)]
            span = float(present.max() - present.min()) if len(present) else 0.0
            spans[j] = span if span > 0 else 1.0
        else:
            values = pd.concat([frames[name][column].astype(object) for name in names], ignore_index=True)
            codes, uniques = pd.factorize(values, use_na_sentinel=True)
            coded = np.where(codes < 0, np.nan, codes.astype(np.float64))
            labels[column] = np.asarray(uniques, dtype=object)
            start = 0
            for name in names:
                matrices[name][:, j] = coded[start:start + len(frames[name])]
                start += len(frames[name])
    return CodedFrames(columns, dict(types), numeric, spans, labels, matrices)


def nearest(queries: np.ndarray, reference: np.ndarray, coded: CodedFrames, subsets: Sequence[Sequence[int]],
            n_neighbors: int = 1, random_state=None) -> list[np.ndarray]:
    """For each column subset, the nearest reference rows of every query on those columns.

    Parameters
    ----------
    queries, reference : numpy.ndarray
        Coded rows (from the same :class:`CodedFrames`).
    coded : CodedFrames
        Says which columns are numeric and their spans.
    subsets : sequence of sequences of int
        Column positions known to the attacker, one subset per search.
    n_neighbors : int
        Neighbours returned per query (closest first).
    random_state : int, numpy.random.Generator or None
        Seed of the tie-breaking orders (one per subset); without it, ties go to the first row.

    Returns
    -------
    list of numpy.ndarray
        Per subset, an array (queries x n_neighbors) of reference rows.

    Examples
    --------
    >>> frames = {"r": pd.DataFrame({"x": [0.0, 5.0, 10.0], "c": ["a", "b", "a"]}),
    ...           "q": pd.DataFrame({"x": [9.0, 1.0], "c": ["b", "b"]})}
    >>> coded = code_frames(frames, {"x": "continuous", "c": "categorical"})
    >>> [a[:, 0].tolist() for a in nearest(coded["q"], coded["r"], coded, [[0], [1], [0, 1]])]
    [[2, 0], [1, 1], [1, 1]]
    """
    if n_neighbors < 1 or n_neighbors > len(reference):
        raise ParameterError(f"n_neighbors must be between 1 and the {len(reference)} reference rows, got {n_neighbors}")
    subsets = [np.asarray(s, dtype=np.int64) for s in subsets]
    union = np.unique(np.concatenate(subsets)) if subsets else np.array([], dtype=np.int64)
    # a subset covering most columns is computed as (all columns) - (the few it leaves out)
    large = [len(s) * 2 > len(union) for s in subsets]
    adds = [set((np.setdiff1d(union, s) if big else s).tolist()) for s, big in zip(subsets, large, strict=True)]
    rng = None if random_state is None else np.random.default_rng(random_state)
    ranks = [None if rng is None else rng.permutation(len(reference)).astype(np.float32) for _ in subsets]
    prepared = {int(j): _prepare(reference[:, j], coded, int(j)) for j in union}
    block = max(1, BLOCK_CELLS // max(len(reference), 1))
    out = [np.empty((len(queries), n_neighbors), dtype=np.int64) for _ in subsets]
    for start in range(0, len(queries), block):
        chunk = queries[start:start + block]
        total = np.zeros((len(chunk), len(reference)), dtype=np.float32)
        partial = [np.zeros_like(total) for _ in subsets]
        for j in union:
            distance = _column_distance(chunk[:, j], prepared[int(j)], coded, int(j))
            total += distance
            for i, columns in enumerate(adds):
                if int(j) in columns:
                    partial[i] += distance
        for i, big in enumerate(large):
            distances = total - partial[i] if big else partial[i]
            out[i][start:start + len(chunk)] = _smallest(distances, n_neighbors, ranks[i])
    return out


def _prepare(values: np.ndarray, coded: CodedFrames, j: int):
    missing = np.isnan(values)
    if coded.numeric[j]:
        return (np.where(missing, 0.0, values / coded.spans[j]).astype(np.float32), missing)
    return (np.where(missing, -1, values).astype(np.int64), missing)


def _column_distance(values: np.ndarray, prepared, coded: CodedFrames, j: int) -> np.ndarray:
    reference, reference_missing = prepared
    missing = np.isnan(values)
    if coded.numeric[j]:
        scaled = np.where(missing, 0.0, values / coded.spans[j]).astype(np.float32)
        distance = np.abs(scaled[:, None] - reference[None, :])
        if missing.any() or reference_missing.any():
            one = missing[:, None] ^ reference_missing[None, :]
            distance[missing[:, None] | reference_missing[None, :]] = 0.0
            distance[one] = 1.0
        return distance
    codes = np.where(missing, -1, values).astype(np.int64)
    return (codes[:, None] != reference[None, :]).astype(np.float32)


def _smallest(distances: np.ndarray, n: int, ranks: np.ndarray | None) -> np.ndarray:
    if n == 1:
        if ranks is None:
            return np.argmin(distances, axis=1)[:, None]
        # among the rows at the smallest distance, the one ranked first by the random order
        tied = distances <= distances.min(axis=1, keepdims=True)
        return np.argmin(np.where(tied, ranks[None, :], np.inf), axis=1)[:, None]
    part = np.argpartition(distances, n - 1, axis=1)[:, :n]
    key = np.take_along_axis(distances, part, axis=1)
    order = np.lexsort((part if ranks is None else ranks[part], key), axis=1)
    return np.take_along_axis(part, order, axis=1)

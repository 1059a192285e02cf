"""Sensitive values an avatar takes from a donor, not from its own neighbours.

Copied from the neighbour whose tuple the avatar carries, a sensitive value (``smoker``) sits in the released row closest to that neighbour: an
attacker who knows the other columns of a person of the data reads her own value there, which
she cannot do for a person outside the data (inference of ``smoker`` 0.36 on the demo patients).
The sensitive columns of an avatar are instead those of a *donor* (:func:`sensitive_donors`):
a record near the drawn neighbour in the factor space seen without the sensitive columns, sharing
its other categorical-like values (so the released tuple is the donor's own), and never a record
to which this released row is one of the closest rows. The release still tells how ``smoker``
goes with age and sex (the donor is a look-alike), not which of its people smoke.
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Mapping
from typing import NamedTuple

import numpy as np
import pandas as pd
from scipy import sparse

from relanon.common.errors import ParameterError
from relanon.engine.factor_space import FactorSpace
from relanon.engine.mixing import mixed_numbers
from relanon.engine.neighbours import SearchTree
from relanon.engine.private_values import carried_tuple, tuple_codes, value_codes

logger = logging.getLogger(__name__)

# Released rows closest to a record (in the factor space without the sensitive columns) that may not
# carry that record's sensitive values: the attacker's distance is not the factor space's, so the
# few closest rows are protected, not the closest alone.
PROTECTED_ROWS = 20
PROTECTED_NUMBER_ROWS = 3
DISTANCE_EPSILON = 1e-9
# The mark, in :func:`_row_sets`, of a record among the first PROTECTED_NUMBER_ROWS rows of another (1 otherwise).
FEW_ROWS = 16
# Coordinates' differences computed at once in :func:`_distances` (256 kB).
DISTANCE_BLOCK = 32_768
# The rules of a tier of donors are asked of each avatar's possible tuples of sensitive values when there are at
# most this many per candidate, of each candidate otherwise (:class:`_Tiers`): the same answers, the fewer questions.
TUPLES_PER_CANDIDATE = 1.0
# Largest number of pairs of codes whose holding :class:`_Held` looks up in a table (one byte each) rather
# than by a binary search.
HELD_TABLE_SIZE = 2**24
# Values of the largest array of a chunk of avatars in :func:`sensitive_donors` (the coordinates of
# their candidates): about 80 MB.
CHUNK_VALUES = 10_000_000


def without(frame: pd.DataFrame, columns, like: pd.DataFrame | None = None) -> pd.DataFrame:
  """``frame`` with every value of ``columns`` replaced by one present value of the column in ``like``
  (default ``frame``): in a fitted factor space, such columns move every row by the same vector and
  no longer count in distances. Two frames compared in the space take the same ``like``: with two
  values, one frame's rows would all be moved away from the other's."""
  like = frame if like is None else like
  frame = frame.copy()
  for column in columns:
      present = like[column].dropna()
      if len(present):
          frame[column] = pd.Series(present.iloc[0], index=frame.index).astype(frame[column].dtype)
  return frame


class Donors(NamedTuple):
  """Where the sensitive values of each avatar come from (:func:`sensitive_donors`)."""

  donors: np.ndarray
  numbers: dict
  counts: dict
  pulled: np.ndarray


def sensitive_donors(table: pd.DataFrame, avatars: pd.DataFrame, space: FactorSpace, chosen: np.ndarray,
                   sensitive, categorical, k: int, rng: np.random.Generator, *,
                   eligible: np.ndarray | None = None, protected: int = PROTECTED_ROWS,
                   combination_holders: int = 1, groups: np.ndarray | None = None,
                   numbers: Mapping[str, np.ndarray] | None = None, chunk_rows: int | None = None,
                   taken: Mapping | None = None) -> Donors:
  """The record whose sensitive values each avatar takes (see the module docstring).

  Parameters
  ----------
  table, avatars : DataFrame
      The records and their avatars, row ``r`` of ``avatars`` made for record ``r`` (not shuffled);
      the avatars' sensitive columns are not read.
  space : FactorSpace
      The table's fitted space; the sensitive columns are neutralized in it (:func:`without`).
  chosen : ndarray
      The neighbour whose categorical-like values avatar ``r`` carries.
  sensitive, categorical : list of str
      The sensitive columns; the categorical-like columns (the donor shares the others' values).
  eligible : ndarray of bool, optional
      Records whose sensitive values may be released (the rare-value rule); preferred.
  protected : int
      A record never gives its values to one of the ``protected`` released rows closest to it.
  combination_holders : int
      Fewest records that must hold a combination of the other categorical values with the
      sensitive ones for a donor of other values to form it (the rare-value rule of combinations).
  groups : ndarray of int, shape (n, g), optional
      The records' parents (one column per foreign key, -1 for none): a donor never shares a
      parent with the record or with the drawn neighbour.
  numbers : Mapping[str, ndarray], optional
      The sensitive numeric columns, as floats (missing as NaN): their avatars are mixed here.
  taken : Mapping[str, ndarray], optional
      Categorical-like columns whose value avatar ``r`` carries from ``taken[column][r]`` rather than from
      ``chosen[r]`` (the columns the tuple rule leaves out, :func:`relanon.engine.small_groups.family_donors`):
      the combinations and pairs the sensitive values form are those of the values the avatar carries.
  chunk_rows : int, optional
      Avatars whose candidates are weighed at once (by default as many as keep the largest array
      of a chunk near 80 MB). The result does not depend on it: the random numbers are drawn as
      for one chunk, and every step is a computation within one avatar's row.

  Returns
  -------
  Donors
      ``donors[r]``: the record giving avatar ``r`` its categorical-like sensitive values;
      ``numbers[column][r]``: the avatar's value of a column of ``numbers``, a weighted mean of
      look-alikes (a number held by one person is never released as it is: ``income == 14170``
      would single her out) moved half-way to ``pulled[r]``'s value (:func:`mixed_numbers`; missing
      where ``pulled[r]``'s is), before it is put on the column's support; ``counts``: how many
      avatars took their values from records sharing the other categorical values, forming a
      combination that ``combination_holders`` originals hold, forming only pairs some original
      holds, or neither (none was possible); ``pulled[r]``: the look-alike that a sensitive number
      of avatar ``r`` moves half-way to (drawn with the mean's weights among the look-alikes
      allowed as donors, the protection of categories).
  """
  if chunk_rows is not None and chunk_rows < 1:
      raise ParameterError(f"chunk_rows must be a positive number of rows, got {chunk_rows}")
  n = len(table)
  numbers = dict(numbers or {})
  index = np.int32 if n < 2**31 else np.int64  # record numbers: int32 halves the searches' memory
  coords = space.transform(without(table, sensitive))
  released = space.transform(without(avatars, sensitive, like=table))
  others = [c for c in categorical if c not in sensitive]
  shared, shared_at, pairs_at = carried_tuple(table, others, chosen, taken)
  secret = tuple_codes(table, [c for c in categorical if c in sensitive])
  # records sharing the neighbour's other categorical values come first: the tuple's code as one
  # more coordinate, scaled beyond the diameter of the point cloud
  scale = 2.0 * float(np.sqrt(np.einsum("ij,ij->i", coords, coords).max(initial=0.0))) + 1.0
  search = np.hstack([coords, scale * shared[:, None].astype(np.float64)])
  released_search = np.hstack([released, scale * shared_at[:, None].astype(np.float64)])
  width = min(n - 1, k + protected)
  # candidates: the records sharing the neighbour's other categorical values, nearest first (beyond
  # the records of the tuple, the order means nothing), then its nearest records in the space;
  # searched once per drawn neighbour
  drawn, drawn_row = np.unique(chosen, return_inverse=True)
  trees = SearchTree(search), SearchTree(coords)
  searched = (_other_neighbours(search, drawn, width, index, tree=trees[0]),
              _other_neighbours(coords, drawn, min(n - 1, 2 * width), index, tree=trees[1]))
  # a released row may not carry the values of a record it is one of the closest rows to: closest
  # as an attacker who weighs categorical matches heavily sees it, and closest in the space (the records
  # asked in the leaf order of their trees above)
  closest_width = min(protected, n)
  closest = [SearchTree(rows).query(records, closest_width, tree.order, distances=False, dtype=index).indices
             for rows, records, tree in zip((released_search, released), (search, coords), trees, strict=True)]
  del released, released_search, trees
  # numbers, means of many look-alikes, need less: the few closest rows (more would leave only
  # distant look-alikes and lose the column's relations to the others)
  few = min(PROTECTED_NUMBER_ROWS, protected, n)
  combinations, pairs = _held_combinations(table, others, shared, secret, combination_holders)
  rules = _Rules(coords, shared, secret, protected_rows=_row_sets(closest, few), combinations=combinations,
                 pairs=pairs,
                 shared_at=shared_at, pairs_at=pairs_at,
                 groups=groups, eligible=eligible)
  del closest
  # whether a number's mean meets a missing value: one answer for every chunk (it sets the arithmetic)
  listed = np.zeros(n, dtype=bool)
  listed[searched[0]], listed[searched[1]] = True, True
  all_present = {c: not np.isnan(values[listed]).any() for c, values in numbers.items()}
  del listed

  width_all = width + searched[1].shape[1]
  chunk = chunk_rows or max(1, CHUNK_VALUES // (width_all * max(coords.shape[1], 1)))
  exponentials, u, u_pull = _random_numbers(rng, n, width_all, chunk)
  donors, pulled = np.empty(n, dtype=np.int64), np.empty(n, dtype=np.int64)
  mixed = {c: np.empty(n) for c in numbers}
  counts = {"sharing": 0, "forming": 0, "pairing": 0, "neither": 0}
  buffer = np.empty((max(1, min(len(drawn), DISTANCE_BLOCK // (width_all * max(coords.shape[1], 1)))), width_all,
                      coords.shape[1]))
  for start in range(0, n, chunk):
      rows = np.arange(start, min(start + chunk, n))
      # what depends on the drawn neighbour alone (its candidates, their distances to it, the records both
      # searches found) is computed once per drawn neighbour of the chunk
      of_chunk, at = np.unique(drawn_row[rows], return_inverse=True)
      found = np.hstack([searched[0][of_chunk], searched[1][of_chunk]])
      distances = _distances(coords, drawn[of_chunk], found, buffer)[at]
      repeated = _found_in(found[:, :width], found[:, width:])[at]
      found = found[at]
      draws = next(exponentials)
      donors[rows], mix, pulled[rows], chunk_counts = _donate(rows, chosen[rows], found, distances, repeated, width,
                                                              draws, u[rows], u_pull[rows], rules)
      for column, values in numbers.items():
          mixed[column][rows] = mixed_numbers(values, found, mix, values[pulled[rows]], all_present[column])
      for label, count in chunk_counts.items():
          counts[label] += count
  return Donors(donors, mixed, counts, pulled)


def _random_numbers(rng: np.random.Generator, n: int, width: int, chunk: int) -> tuple:
  """The random numbers of :func:`sensitive_donors`, those of the one-chunk computation: every avatar's Exp(1)
  per candidate (``width`` each), then one uniform per avatar, twice. Returns the exponentials chunk by chunk
  (an iterator over chunks of ``chunk`` avatars) and the two uniforms. Up to :data:`CHUNK_VALUES` exponentials
  are kept; more are drawn twice (skipped, then chunk by chunk), not to hold 8 bytes per candidate of every
  avatar."""
  if n * width <= CHUNK_VALUES:
      every = rng.exponential(1.0, size=(n, width))
      chunks = (every[start:start + chunk] for start in range(0, n, chunk))
  else:
      again = copy.deepcopy(rng)
      for start in range(0, n, chunk):
          rng.exponential(1.0, size=(min(chunk, n - start), width))
      chunks = (again.exponential(1.0, size=(min(chunk, n - start), width)) for start in range(0, n, chunk))
  return chunks, rng.random(n), rng.random(n)


class _Rules(NamedTuple):
  """What decides whether a record may give an avatar its sensitive values (:func:`_donate`)."""

  coords: np.ndarray
  shared: np.ndarray
  secret: np.ndarray
  protected_rows: sparse.csr_array  # [released row, record] > 0: the row may not carry its values; >= FEW_ROWS: its numbers
  combinations: _Held  # (tuple of the other categorical values, sensitive values) that enough records hold
  pairs: list  # per other categorical column, its (value, sensitive values) that enough records hold
  groups: np.ndarray | None
  eligible: np.ndarray | None
  shared_at: np.ndarray  # the key among ``shared`` of the tuple each avatar carries (-1: no record holds it)
  pairs_at: list  # per other categorical column, the code of the value each avatar carries


class _Held:
  """The pairs of codes ``(a, b)`` (``a`` of a record's tuple or value, ``b`` of its sensitive values) that at
  least ``holders`` records hold: :meth:`contains` tells it of arrays of pairs, by a table of every pair when
  it is small, by a binary search among the pairs held otherwise. ``a = -1`` (a tuple no record holds) is
  held with nothing."""

  def __init__(self, left: np.ndarray, right: np.ndarray, holders: int):
      self.base = int(right.max(initial=0)) + 1
      # keys shifted by one ``a``: -1 is the first
      held, count = np.unique((left + 1) * self.base + right, return_counts=True)
      self.held = held[count >= holders]
      size = (int(left.max(initial=0)) + 2) * self.base
      self.table = None
      if size <= HELD_TABLE_SIZE:
          self.table = np.zeros(size, dtype=bool)
          self.table[self.held] = True

  def contains(self, left: np.ndarray, right: np.ndarray) -> np.ndarray:
      """Whether each pair ``(left, right)`` is held (arrays broadcast together: codes some record holds, or -1
      on the left)."""
      keys = (left + 1) * self.base + right
      if self.table is not None:
          return self.table[keys]
      if not len(self.held):
          return np.zeros(keys.shape, dtype=bool)
      return self.held[np.minimum(np.searchsorted(self.held, keys), len(self.held) - 1)] == keys


def _held_combinations(table, others, shared, secret, holders: int) -> tuple:
  """The combinations of the sensitive values with all the other categorical values, then with each other
  categorical value, that at least ``holders`` records hold."""
  return _Held(shared, secret, holders), [_Held(value_codes(table[column]), secret, holders) for column in others]


def _distances(coords: np.ndarray, of: np.ndarray, candidates: np.ndarray, buffer: np.ndarray) -> np.ndarray:
  """The distance of record ``of[i]`` to each of its ``candidates[i]`` in ``coords``; ``buffer`` holds the
  coordinates' differences of a block of records (reused from block to block: it stays in the processor's
  cache, where the differences of a whole chunk would not)."""
  out = np.empty(candidates.shape)
  for start in range(0, len(of), len(buffer)):
      block = slice(start, start + len(buffer))
      differences = np.take(coords, candidates[block], axis=0, out=buffer[:len(of[block])],
                            mode="clip")  # unbuffered: indices are valid
      np.subtract(coords[of[block]][:, None, :], differences, out=differences)
      np.einsum("ijk,ijk->ij", differences, differences, out=out[block])
  return np.sqrt(out, out=out)


def _donate(rows, chosen, candidates, distances, repeated, width, draws, u, u_pull, rules: _Rules):
  """The donors and the mix of the avatars ``rows`` (one chunk of :func:`sensitive_donors`): ``distances``
  of the drawn neighbours to the ``candidates``, and whether each candidate from ``width`` on was also found
  before it (:func:`_found_in`)."""
  excluded = (candidates == rows[:, None]) | (candidates == chosen[:, None])
  if rules.groups is not None:
      # rows of a table below others: never a donor of the same parent (a doctor's visits would hand
      # each other their reasons, and the doctor's most frequent reason would be hers)
      for column in range(rules.groups.shape[1]):
          group = rules.groups[:, column]
          held = group[candidates]
          excluded |= ((held == group[chosen][:, None]) | (held == group[rows][:, None])) & (held >= 0)
  each = (np.repeat(rows, candidates.shape[1]), candidates.reshape(-1))  # (avatar, candidate) pairs
  marks = rules.protected_rows[each].reshape(candidates.shape)
  protected, numbers_protected = marks > 0, marks >= FEW_ROWS
  # 1 / d * Exp(1): the nearest allowed candidates weigh most (the avatar weights' random ranks
  # would weigh a distant candidate as much as a near one among these 2 (k + protected) candidates)
  weights = draws / (distances + DISTANCE_EPSILON)
  # numbers are means over the look-alikes in the space (the candidates from ``width`` on) allowed for
  # privacy (combinations concern categories only): a mean over the few records of a tier would often
  # be one record's value
  mix = np.zeros_like(weights)
  mix[:, width:] = _ranked(weights[:, width:] * ~(excluded | numbers_protected)[:, width:], distances[:, width:])
  total = mix.sum(axis=1, keepdims=True)
  mix = np.divide(mix, total, out=np.zeros_like(mix), where=total > 0)
  # a record found by both searches is drawn with one weight (each search finds a record once)
  allowed = ~(excluded | protected)
  allowed[:, width:] &= ~repeated
  near = allowed.copy()  # allowed, and a look-alike in the space
  near[:, :width] = False
  tiers = _Tiers(rules, rows, candidates, allowed, near)
  donors = np.full(len(rows), -1, dtype=np.int64)
  counts = {"sharing": 0, "forming": 0, "pairing": 0, "neither": 0}
  todo = np.arange(len(rows))  # the avatars without a donor yet
  frequent = None if rules.eligible is None else rules.eligible[candidates]
  for label in ("sharing", "forming", "pairing", "neither"):
      tier = tiers.of(label, todo)
      # the records whose values are all frequent first (the tier's others after them; a last tier of any)
      for frequent_only in (True, False) if label != "neither" else (False,):
          drawn = tier & frequent[todo] if frequent_only and frequent is not None else tier
          some = drawn.any(axis=1)
          if not some.any():
              continue
          at, drawn = todo[some], drawn[some]
          kept = weights[at] * drawn
          cumulative = np.cumsum(kept, axis=1) / kept.sum(axis=1, keepdims=True)
          cumulative[:, -1] = 1.0
          picked = np.minimum((cumulative < u[at][:, None]).sum(axis=1), candidates.shape[1] - 1)
          # a weight of 0 may still be landed on by rounding: take the first allowed candidate instead
          ok = drawn[np.arange(len(at)), picked]
          picked = np.where(ok, picked, np.argmax(drawn, axis=1))
          donors[at] = candidates[at, picked]
          counts[label] += len(at)
          todo, tier = todo[~some], tier[~some]
  donors[todo] = candidates[todo, -1]  # every candidate excluded (tiny tables): the farthest candidate
  mix[total[:, 0] == 0, -1] = 1.0
  counts["neither"] += len(todo)
  # the look-alike a sensitive number moves to (as the other numbers move to the drawn neighbour): drawn
  # with the mix's weights among the look-alikes allowed for the categories (the wider protection: a
  # look-alike among the 3 closest protected rows only put the demo's BMI 0.03 within the attacker's
  # reach), the mix's own candidates where none is
  pull = mix * near
  none = pull.sum(axis=1) == 0
  pull[none] = mix[none]
  cumulative = np.cumsum(pull, axis=1) / pull.sum(axis=1, keepdims=True)
  cumulative[:, -1] = 1.0
  picked = np.minimum((cumulative < u_pull[:, None]).sum(axis=1), candidates.shape[1] - 1)
  ok = pull[np.arange(len(rows)), picked] > 0
  picked = np.where(ok, picked, np.argmax(pull > 0, axis=1))
  pulled = candidates[np.arange(len(rows)), picked]
  return donors, mix, pulled, counts


class _Tiers:
  """The candidates of each tier of :func:`_donate`, for the avatars (positions in the chunk) still
  without a donor: what a tier asks (the combinations held, the pairs held) is looked at only for
  the avatars that reach it."""

  def __init__(self, rules: _Rules, rows, candidates, allowed, near):
      self.rules, self.rows, self.candidates, self.allowed, self.near = rules, rows, candidates, allowed, near

  def of(self, label: str, at: np.ndarray) -> np.ndarray:
      rules, rows, candidates = self.rules, self.rows[at], self.candidates[at]
      if label == "sharing":
          tier = self.allowed[at] & (rules.shared[candidates] == rules.shared_at[rows][:, None])
      elif label == "neither":
          tier = self.near[at]
      else:
          if label == "forming":
              # a combination counts as held when enough records hold it: held by the person alone, it
              # would tell her value to whoever knows her other values
              # (an avatar whose tuple no record holds forms no held combination)
              tests = [(rules.combinations, rules.shared_at)]
          else:
              # failing that, every pair of one of its other categorical values with the sensitive ones
              # is one that enough records hold (no dose of another drug; a pair held by one patient's
              # visits alone would hand them their own reasons)
              tests = list(zip(rules.pairs, rules.pairs_at, strict=True))
          tier = self.near[at]
          base = rules.combinations.base  # the number of the records' tuples of sensitive values
          if base <= TUPLES_PER_CANDIDATE * tier.shape[1]:
              # fewer tuples than candidates: the rules are asked of each avatar's possible tuples, once
              admitted = np.ones((len(at), base), dtype=bool)
              for held, carried in tests:
                  admitted &= held.contains(carried[rows][:, None], np.arange(base)[None, :])
              return tier & admitted[np.arange(len(at))[:, None], rules.secret[candidates]]
          # otherwise of the near candidates alone, each rule of those that passed the previous ones
          avatar, place = np.nonzero(tier)
          secret_values = rules.secret[candidates[avatar, place]]
          for held, carried in tests:
              passed = held.contains(carried[rows[avatar]], secret_values)
              avatar, place, secret_values = avatar[passed], place[passed], secret_values[passed]
          tier = np.zeros_like(tier)
          tier[avatar, place] = True
      return tier


def _other_neighbours(points: np.ndarray, of: np.ndarray, k: int, dtype=np.int64,
                      tree: SearchTree | None = None) -> np.ndarray:
  """``self_neighbours(points, k).indices[of]``, searched for the records ``of`` alone (in ``tree``, built on
  ``points``, when given)."""
  tree = SearchTree(points) if tree is None else tree
  found = tree.query(points[of], k + 1, tree.locality_of(of), distances=False, dtype=dtype).indices
  is_self = found == of[:, None]
  is_self[~is_self.any(axis=1), k] = True
  return found[~is_self].reshape(len(of), k)


def _row_sets(closest: list[np.ndarray], few: int) -> sparse.csr_array:
  """``sets[r, c] > 0`` when released row ``r`` is one of the rows of record ``c`` in one of the
  ``closest`` arrays (shape (records, rows each)), ``sets[r, c] >= FEW_ROWS`` when it is one of its first
  ``few`` rows there: a lookup of any (row, record) pair, the pairs of one row next to each other (avatars
  are weighed in chunks of consecutive rows)."""
  rows = np.hstack(closest)
  n, each = rows.shape
  index = np.int32 if rows.size < 2**31 else np.int64
  marks = np.ones(rows.shape, dtype=np.int8)
  for start in range(0, each, closest[0].shape[1]):
      marks[:, start:start + few] = FEW_ROWS
  by_record = sparse.csr_array((marks.reshape(-1), rows.reshape(-1).astype(index, copy=False),
                                np.arange(0, rows.size + 1, each, dtype=index)), shape=(n, n))
  sets = by_record.T.tocsr()
  sets.sum_duplicates()  # a record listing a row in both arrays: one entry, its marks added
  return sets


def _found_in(earlier: np.ndarray, later: np.ndarray) -> np.ndarray:
  """Whether each entry of ``later`` appears in the same row of ``earlier``."""
  found = np.zeros(later.shape, dtype=bool)
  for column in range(earlier.shape[1]):
      found |= later == earlier[:, column:column + 1]
  return found


def _ranked(weights: np.ndarray, distances: np.ndarray) -> np.ndarray:
  """``weights * 2 ** -rank``, the rank of each candidate with a positive weight by distance (1 for the
  nearest, the first in the row among equals): a mean of look-alikes weighted as the avatar's
  neighbours are keeps a column's spread (a mean of many look-alikes narrowed the demo's BMI to 0.54
  of its standard deviation)."""
  positive = weights > 0
  # candidates come from a search, nearest first: a row whose positive candidates are in order ranks
  # them by counting; the others are sorted
  ranks = np.cumsum(positive, axis=1)
  farthest_so_far = np.maximum.accumulate(np.where(positive, distances, -np.inf), axis=1)
  unordered = np.flatnonzero((positive & (distances < farthest_so_far)).any(axis=1))
  if len(unordered):
      masked = np.where(positive[unordered], distances[unordered], np.inf)
      order = np.argsort(masked, axis=1, kind="stable")
      sorted_ranks = np.empty_like(order)
      np.put_along_axis(sorted_ranks, order, np.arange(1, weights.shape[1] + 1)[None, :], axis=1)
      ranks[unordered] = sorted_ranks
  return weights * np.exp2(-ranks.astype(np.float64) / 2)

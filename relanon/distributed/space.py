"""The factor space of a table fitted once from all its batches, on the workers.

The batches' summaries (made when they were gathered) are merged in batch order; the medians of
numeric columns of many values are found by histograms over the batches (:func:`select_ranks`); the
coded cross-products are summed over the batches, and the space is built from them
(:mod:`relanon.engine.space_statistics`). Summaries, histograms and cross-products are merged on the
workers, in a fixed order (:func:`relanon.distributed.work.folded`): the client holds only the merged
ones, however many the batches, and the space is the same whatever the number of workers. A table coded
into more columns than the covariance can hold takes its axes from a seeded sample of
:data:`SAMPLE_ROWS` rows, coded with the exact statistics.
"""

from __future__ import annotations

from functools import reduce

import numpy as np
import pandas as pd
import pyarrow.parquet as pq

from relanon.distributed.work import folded, read_parts
from relanon.engine import space_statistics as stats
from relanon.engine.columns import numeric_values
from relanon.engine.factor_space import DENSE_LIMIT

SAMPLE_ROWS = 200_000
"""Rows of the seeded sample that gives the axes of a table coded into more than DENSE_LIMIT columns."""


def merged_summaries(summaries: list[dict], cap: int) -> dict:
    return reduce(lambda a, b: stats.merge_summaries(a, b, cap=cap), summaries)


def finished_statistics(client, paths: list[str], summaries: dict) -> dict:
    """The frozen statistics of the columns of ``summaries``, medians of many-valued columns read from the
    batch files ``paths``."""
    medians = {}
    for name, summary in summaries.items():
        if not isinstance(summary, stats.NumericSummary) or summary.values is not None or not summary.present:
            continue

        def histogram(lo, hi, bins, name=name, kind=summary.kind):
            parts = [client.submit(_bins, p, name, kind, lo, hi, bins, pure=False) for p in paths]
            return folded(client, parts, stats.merge_bins).result()

        def gather(lo, hi, name=name, kind=summary.kind):
            return np.concatenate(client.gather([client.submit(_between, p, name, kind, lo, hi, pure=False) for p in paths]))

        found = stats.select_ranks(histogram, gather, stats.median_ranks(summary), summary.low, summary.high)
        medians[name] = stats.median_of(summary, found)
    return stats.finish_statistics(summaries, medians)


def fit_space(client, paths: list[str], columns, statistics: dict, *, ncp, weights, random_state, name: str,
              rows_searched: int, rng: np.random.Generator):
    """The space of ``columns`` whose statistics are ``statistics``, from the batch files ``paths``."""
    statistics = {c: statistics[c] for c in columns}
    if stats.coded_width(statistics) <= DENSE_LIMIT:
        coder = stats.coder(statistics, name)
        parts = [client.submit(_moments, p, list(columns), coder, pure=False) for p in paths]
        moments = folded(client, parts, stats.merge_moments).result()  # a batch's Z'Z may be 1,500 columns square
        return stats.space_from_moments(columns, statistics, moments, n_components=ncp, weights=weights,
                                        random_state=random_state, name=name, rows_searched=rows_searched)
    rows = client.gather([client.submit(_rows, p, pure=False) for p in paths])
    share = min(1.0, SAMPLE_ROWS / max(sum(rows), 1))
    seeds = rng.integers(0, 2**63, size=len(paths))
    sample = read_sample(client, paths, list(columns), share, seeds)
    return stats.space_from_sample(columns, statistics, sample, n_components=ncp, weights=weights,
                                   random_state=random_state, name=name, rows_searched=rows_searched)


def read_sample(client, paths, columns, share: float, seeds) -> pd.DataFrame:
    """A seeded sample of about ``share`` of the rows of the files ``paths``, in their order."""
    parts = client.gather([client.submit(_sample, p, columns, share, int(s), pure=False)
                           for p, s in zip(paths, seeds, strict=True)])
    return pd.concat(parts, ignore_index=True)


# --------------------------------------------------------------------------- on the workers


def _values(path, column, kind) -> np.ndarray:
    values = numeric_values(read_parts([path], [column])[column], kind)
    return values[~np.isnan(values)]


def _bins(path, column, kind, lo, hi, bins):
    return stats.bin_counts(_values(path, column, kind), lo, hi, bins)


def _between(path, column, kind, lo, hi) -> np.ndarray:
    return stats.values_between(_values(path, column, kind), lo, hi)


def _moments(path, columns, coder):
    return stats.coded_moments(read_parts([path], columns), coder)


def _rows(path) -> int:
    return pq.ParquetFile(path).metadata.num_rows


def _sample(path, columns, share: float, seed: int) -> pd.DataFrame:
    frame = read_parts([path], columns)
    rng = np.random.default_rng(seed)
    size = int(round(len(frame) * share))
    return frame.iloc[np.sort(rng.choice(len(frame), size=size, replace=False))] if size < len(frame) else frame

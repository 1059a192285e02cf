"""The factor space: a FAMD projection of a mixed table that keeps no rows.

Every released column is *coded* into numbers, then the coded table is projected on its principal
axes (docs/method.md, "Encoding" and "Projection"):

- continuous, integer and datetime columns (datetimes as seconds since the epoch, UTC) are
  standardized with the mean and the population standard deviation frozen at fit;
- categorical and boolean columns are one-hot encoded, each indicator recoded ``(d - p) / sqrt(p)``
  with ``p`` the modality's share frozen at fit (FAMD coding). A missing value of a categorical
  column is a modality of its own;
- a numeric column with missing values at fit gets a temporary two-modality indicator
  ``is_missing(col)`` coded like a categorical, and its missing cells are imputed with the median
  frozen at fit.

With only continuous columns this is a standardized PCA; with only categorical columns it is an
MCA (the coordinates are the MCA's multiplied by the square root of the number of columns). The
column weight ``w`` multiplies every coded column of that column by ``sqrt(w)``, so the column's
share of the total inertia (and its pull on the axes) is multiplied by ``w``.

The indicator block is a scipy sparse matrix and the coded table is never formed. Up to
``DENSE_LIMIT`` coded columns the axes are the exact eigenvectors of the coded covariance matrix,
built from sparse products; beyond (a categorical column with thousands of levels, a city), ARPACK
finds the leading ones from products with the implicit table, so memory stays linear in the rows.

The axes are computed on one BLAS thread (:func:`one_blas_thread`): LAPACK's blocked reductions, and
the products summed over the rows of a single column or vector, share their sums between threads, which
changes their last bits; on one thread the same table gives the same axes, to the bit, whatever the
number of threads of the process. The projection of rows (each coordinate summed by one thread) keeps
every thread.
"""

from __future__ import annotations

import functools
import logging
from dataclasses import dataclass

import numpy as np
import pandas as pd
import scipy.linalg
import scipy.sparse as sp
from scipy.sparse.linalg import ArpackNoConvergence, LinearOperator, eigsh
from sklearn.base import BaseEstimator
from threadpoolctl import ThreadpoolController

from relanon.common.errors import DataError, ParameterError, Problem
from relanon.engine.axes import auto_axes, max_auto_axes, tied_eigenvalues
from relanon.engine.columns import (
    CATEGORICAL_KINDS,
    NUMERIC_KINDS,
    CategoricalStatistics,
    NumericStatistics,
    categorical_statistics,
    category_codes,
    check_columns_present,
    column_types,
    numeric_statistics,
    numeric_values,
    restore_numeric,
)

logger = logging.getLogger(__name__)

AUTO = "auto"
DEFAULT_NCP = AUTO


# Above this many coded columns the covariance matrix is not formed: its leading eigenvectors are
# found by Lanczos iterations (ARPACK) on the implicit, sparse coded table instead.
DENSE_LIMIT = 1500
_ARPACK_TOL = 1e-10
_SIGN_TIE = 1e-6
_RANK_TOL = 1e-10


# --------------------------------------------------------------------------- the coded table


@dataclass(frozen=True)
class _Coded:
    """A frame coded for the projection: standardized numbers and sparse modality indicators.

    The FAMD-coded table is ``Z = [numeric, (indicators - shares) * scale]``; it is never formed.
    """

    numeric: np.ndarray  # (n, q) standardized, weighted
    indicators: sp.csr_matrix  # (n, m) 0/1
    shares: np.ndarray  # (m,)
    scale: np.ndarray  # (m,) sqrt(weight / share), 0 for a share of 0 or 1

    @property
    def n_rows(self) -> int:
        return self.numeric.shape[0]

    def times(self, vectors: np.ndarray) -> np.ndarray:
        """``Z @ vectors`` for ``vectors`` of shape (q + m, b)."""
        q = self.numeric.shape[1]
        head, tail = vectors[:q], vectors[q:] * self.scale[:, None]
        return self.numeric @ head + self.indicators @ tail - (self.shares @ tail)[None, :]

    def transposed_times(self, rows: np.ndarray) -> np.ndarray:
        """``Z.T @ rows`` for ``rows`` of shape (n, b)."""
        top = self.numeric.T @ rows
        bottom = (self.indicators.T @ rows - np.outer(self.shares, rows.sum(axis=0))) * self.scale[:, None]
        return np.vstack([top, bottom])

    def covariance(self) -> np.ndarray:
        """``Z.T @ Z / n`` formed from sparse products (dense, (q + m) squared)."""
        n = self.n_rows
        numeric, ind, p, s = self.numeric, self.indicators, self.shares, self.scale
        means = numeric.mean(axis=0)
        nn = numeric.T @ numeric / n
        nd = (np.asarray((ind.T @ numeric).T) / n - np.outer(means, p)) * s[None, :]
        dd = (ind.T @ ind).toarray() / n
        dd = (dd - np.outer(p, p)) * np.outer(s, s)
        return np.block([[nn, nd], [nd.T, dd]])


# --------------------------------------------------------------------------- the estimator


class FactorSpace(BaseEstimator):
    """FAMD projection of a mixed table, with every statistic frozen at fit and no row kept.

    Parameters
    ----------
    columns : Mapping[str, str] or sequence of relanon.schema.Column
        Column name -> schema type (continuous, integer, datetime, categorical, boolean; ``drop``
        columns are ignored). Other columns of the frames are ignored.
    n_components : int or "auto", default "auto"
        Number of axes kept. ``"auto"`` (or None): the fewest axes reaching ``AUTO_INERTIA_SHARE`` of
        the total inertia, never ending inside a group of equal eigenvalues, at most
        :func:`max_auto_axes` (see :func:`auto_axes`). An integer is capped at the number of
        informative dimensions of the data (``n_components_`` tells the number kept).
    weights : Mapping[str, float], optional
        Column weights (default 1.0, or the ``Column.weight``): a column of weight ``w`` has its coded
        columns multiplied by ``sqrt(w)``, hence its share of the total inertia multiplied by ``w``.
    random_state : int, numpy.random.Generator or None
        Only used above ``DENSE_LIMIT`` coded columns (start vector of the Lanczos iterations);
        below, the covariance matrix is decomposed exactly. ``None`` uses a fixed start vector:
        the same data always give the same axes.
    name : str
        The table's name, used in error messages.

    Attributes
    ----------
    columns_ : tuple of str
        The projected columns, in declaration order.
    statistics_ : dict
        Column name -> :class:`NumericStatistics` or :class:`CategoricalStatistics`.
    feature_names_ : tuple of str
        Names of the coded columns (``age``, ``sex=F``, ``is_missing(bmi)=True``...).
    n_dims_ : int
        Number of informative dimensions: non-constant numeric columns plus, per categorical block,
        its number of modalities minus one.
    n_components_ : int
        Number of axes kept.
    components_ : ndarray of shape (n_components_, len(feature_names_))
        The axes in the coded space; each axis' largest loading is positive (fixed signs).
    eigenvalues_, explained_inertia_ : ndarray of shape (n_components_,)
        Inertia along each axis, and its share of ``total_inertia_``.
    total_inertia_ : float
        Sum of the variances of the coded columns.

    Notes
    -----
    ``transform`` accepts missing values (imputed with the fitted medians, or sent to the fitted
    missing modality) and values never seen at fit: such a value simply matches no fitted modality
    (all its indicators are 0). A row projected alone gets exactly the coordinates it gets in any
    batch.

    Examples
    --------
    >>> frame = pd.DataFrame({"age": [20, 35, 50, 65], "sex": ["F", "M", "F", "M"]})
    >>> space = FactorSpace({"age": "integer", "sex": "categorical"}).fit(frame)
    >>> space.n_components_, space.explained_inertia_.round(3)   # ncp auto: 95 % of the inertia needs both
    (2, array([0.724, 0.276]))
    >>> FactorSpace({"age": "integer", "sex": "categorical"}, n_components=2).fit(frame).transform(frame.iloc[[0]]).round(3)
    array([[-1.656, -0.242]])
    """

    def __init__(self, columns, n_components=None, weights=None, random_state=None, name="table"):
        self.columns = columns
        self.n_components = n_components
        self.weights = weights
        self.random_state = random_state
        self.name = name

    # ------------------------------------------------------------------ fit / transform

    def fit(self, frame: pd.DataFrame, y=None) -> FactorSpace:
        """Freeze the column statistics and the axes of ``frame``."""
        self._fit_and_code(frame)
        return self

    def fit_transform(self, frame: pd.DataFrame, y=None) -> np.ndarray:
        """Fit, then return the coordinates of ``frame`` (coded once)."""
        coded = self._fit_and_code(frame)
        return coded.times(self.components_.T)

    def transform(self, frame: pd.DataFrame) -> np.ndarray:
        """Coordinates of the rows of ``frame``, shape (n_rows, n_components_)."""
        self._check_fitted()
        check_columns_present(frame, self.columns_, self.name)
        return self._code(frame).times(self.components_.T)

    def inverse_transform(self, coords) -> pd.DataFrame:
        """Rows whose coordinates are ``coords``, in the original units and dtypes.

        Numeric values are read from the reconstructed coded table; a categorical gets the modality
        whose reconstructed indicator is the largest, and a numeric column is missing when its
        missing indicator wins. With all components kept, the original rows come back exactly.
        """
        self._check_fitted()
        coords = np.asarray(coords, dtype=np.float64)
        if coords.ndim != 2 or coords.shape[1] != self.n_components_:
            raise ParameterError(f"coords must have shape (n, {self.n_components_}), got {coords.shape}")
        out = {}
        position = 0
        offset = sum(isinstance(s, NumericStatistics) for s in self.statistics_.values())
        for name in self.columns_:
            stats = self.statistics_[name]
            if isinstance(stats, NumericStatistics):
                z = coords @ self.components_[:, position]
                position += 1
                values = z / np.sqrt(stats.weight) * stats.std + stats.mean
                missing = np.zeros(len(coords), dtype=bool)
                if stats.has_indicator:
                    missing = self._winning_modality(coords, offset, stats.shares, stats.weight) == 1
                    offset += 2
                out[name] = restore_numeric(values, missing, stats)
            else:
                winner = self._winning_modality(coords, offset, stats.shares, stats.weight)
                offset += len(stats.shares)
                out[name] = _restore_categories(winner, stats)
        return pd.DataFrame(out)

    # ------------------------------------------------------------------ internals

    def _check_fitted(self) -> None:
        if not hasattr(self, "components_"):
            raise ParameterError("this FactorSpace is not fitted yet; call fit(frame) first")

    def _fit_and_code(self, frame) -> _Coded:
        types, weights, auto = self._declared()
        check_columns_present(frame, types, self.name)
        if len(frame) == 0:
            raise DataError(f"table {self.name!r} is empty", [Problem("a factor space cannot be fitted on zero rows", self.name)])
        stats = {}
        for name in (c for c in types if types[c] in NUMERIC_KINDS):
            stats[name] = numeric_statistics(frame[name], types[name], weights[name], table=self.name)
        for name in (c for c in types if types[c] in CATEGORICAL_KINDS):
            stats[name] = categorical_statistics(frame[name], types[name], weights[name])
        self._freeze(stats)
        coded = self._code(frame)
        cap = max_auto_axes(len(frame)) if auto else int(self.n_components)
        # one eigenvalue beyond the cap tells whether the last axis kept ends a group of equal ones
        eigenvalues, vectors = self._principal_axes(coded, min(cap + 1, self.n_dims_))
        total_inertia = float(np.sum(coded.numeric.var(axis=0)) + np.sum(coded.scale**2 * coded.shares * (1 - coded.shares)))
        self._keep_axes(eigenvalues, vectors, total_inertia, auto, cap)
        return coded

    @classmethod
    def from_statistics(cls, columns, statistics, covariance, numeric_variance, *, n_components=None, weights=None,
                        random_state=None, name="table", rows_searched: int) -> FactorSpace:
        """A fitted space from statistics reduced over the partitions of a table, without its rows.

        The batch engine (:mod:`relanon.engine.space_statistics`) accumulates, over partitions, what
        :meth:`fit` computes from the whole table: the column statistics and the covariance of the
        coded table. The axes are then the same (up to floating-point rounding) as a fit on all rows.

        Parameters
        ----------
        statistics : dict
            Column name -> :class:`NumericStatistics` or :class:`CategoricalStatistics`.
        covariance : ndarray of shape (width, width)
            ``Z.T @ Z / n`` of the coded table, in the order of ``feature_names_``.
        numeric_variance : ndarray
            Variance of each coded numeric column (they start the coded table).
        rows_searched : int
            Rows searched together for neighbours (a batch): ``ncp: auto`` keeps at most
            :func:`max_auto_axes` of them.
        """
        space = cls(columns, n_components=n_components, weights=weights, random_state=random_state, name=name)
        types, _, auto = space._declared()
        missing = [c for c in types if c not in statistics]
        if missing:
            raise ParameterError(f"table {name!r}: no statistics for column(s) {', '.join(map(repr, missing))}")
        space._freeze({c: statistics[c] for c in types})
        covariance = np.asarray(covariance, dtype=np.float64)
        width = len(space.feature_names_)
        if covariance.shape != (width, width):
            raise ParameterError(f"table {name!r}: covariance must have shape {(width, width)}, got {covariance.shape}")
        cap = max_auto_axes(rows_searched) if auto else int(space.n_components)
        eigenvalues, vectors = _covariance_axes(covariance, min(cap + 1, space.n_dims_))
        scale, shares = space._indicator_scale()
        total_inertia = float(np.sum(numeric_variance) + np.sum(scale**2 * shares * (1 - shares)))
        space._keep_axes(eigenvalues, vectors, total_inertia, auto, cap)
        return space

    def _declared(self):
        """The declared columns, their weights, and whether ``ncp`` is automatic (validated)."""
        types, weights = column_types(self.columns, self.weights)
        if not types:
            raise ParameterError(f"table {self.name!r}: no column to project (all are dropped or none declared)")
        auto = self.n_components is None or (isinstance(self.n_components, str) and self.n_components == AUTO)
        if not auto and (
            isinstance(self.n_components, bool) or not isinstance(self.n_components, int | np.integer) or self.n_components < 1
        ):
            raise ParameterError(f"n_components (ncp) must be a positive integer or 'auto', got {self.n_components!r}")
        return types, weights, auto

    def _freeze(self, stats: dict) -> None:
        """Set the column statistics (numeric columns first, as the coded table orders them)."""
        numeric = [c for c, s in stats.items() if isinstance(s, NumericStatistics)]
        categorical = [c for c, s in stats.items() if not isinstance(s, NumericStatistics)]
        self.columns_ = tuple(numeric + categorical)
        self.statistics_ = {c: stats[c] for c in self.columns_}
        self.feature_names_ = tuple(self._feature_names())
        self.n_dims_ = sum(_informative_dimensions(s) for s in self.statistics_.values())

    def _indicator_scale(self):
        """FAMD scales and shares of the coded indicator columns (as :func:`_indicator_block` sets them)."""
        blocks = []
        for name in self.columns_:
            stats = self.statistics_[name]
            if isinstance(stats, NumericStatistics):
                if stats.has_indicator:
                    blocks.append((np.zeros(0, dtype=np.int64), stats.shares, stats.weight))
            else:
                blocks.append((np.zeros(0, dtype=np.int64), stats.shares, stats.weight))
        _, shares, scale = _indicator_block(blocks, 0)
        return scale, shares

    def _keep_axes(self, eigenvalues, vectors, total_inertia: float, auto: bool, cap: int) -> None:
        self.total_inertia_ = total_inertia
        if auto:
            kept = auto_axes(eigenvalues, self.total_inertia_, cap=cap, complete=len(eigenvalues) >= self.n_dims_)
        else:
            kept = min(cap, len(eigenvalues))
            if 0 < kept < len(eigenvalues) and tied_eigenvalues(eigenvalues[kept - 1], eigenvalues[kept]):
                logger.warning(
                    "table %r: ncp=%d ends inside a group of equal eigenvalues (%.6g): the neighbours depend on which "
                    "basis of that eigenspace the solver returns; ncp: auto avoids it", self.name, kept, eigenvalues[kept],
                )
        eigenvalues, vectors = eigenvalues[:kept], vectors[:, :kept]
        self.eigenvalues_ = eigenvalues
        self.explained_inertia_ = eigenvalues / self.total_inertia_ if self.total_inertia_ > 0 else eigenvalues
        self.components_ = vectors.T
        self.n_components_ = len(eigenvalues)
        self.n_features_in_ = len(self.columns_)

    def _feature_names(self):
        for name in self.columns_:
            if isinstance(self.statistics_[name], NumericStatistics):
                yield name
        for name in self.columns_:
            stats = self.statistics_[name]
            if isinstance(stats, NumericStatistics):
                if stats.has_indicator:
                    yield from (f"is_missing({name})=False", f"is_missing({name})=True")
            else:
                yield from (f"{name}={value}" for value in stats.categories)
                if stats.has_missing:
                    yield f"{name}=<missing>"

    def _code(self, frame: pd.DataFrame) -> _Coded:
        n = len(frame)
        numeric_cols, blocks = [], []
        for name in self.columns_:
            stats = self.statistics_[name]
            if isinstance(stats, NumericStatistics):
                values = numeric_values(frame[name], stats.kind, table=self.name)
                missing = np.isnan(values)
                values = np.where(missing, stats.fill, values)
                z = (values - stats.mean) / stats.std if stats.std > 0 else np.zeros(n)
                numeric_cols.append(z * np.sqrt(stats.weight))
                if stats.has_indicator:
                    blocks.append((missing.astype(np.int64), stats.shares, stats.weight))
            else:
                blocks.append((category_codes(frame[name], stats), stats.shares, stats.weight))
        # columns_ lists numeric columns first, so their missing indicators precede the
        # categorical blocks, in the order of feature_names_
        numeric = np.column_stack(numeric_cols) if numeric_cols else np.zeros((n, 0))
        return _Coded(numeric, *_indicator_block(blocks, n))

    def _principal_axes(self, coded: _Coded, wanted: int):
        width = coded.numeric.shape[1] + coded.indicators.shape[1]
        if wanted == 0:
            return np.zeros(0), np.zeros((width, 0))
        if width <= DENSE_LIMIT or wanted >= width // 2:
            with one_blas_thread():
                covariance = coded.covariance()
            return _covariance_axes(covariance, wanted)
        # no seed given: a fixed start vector all the same, so that the same data give the same axes
        seed = 0 if self.random_state is None else self.random_state
        eigenvalues, vectors = _lanczos(coded, wanted, np.random.default_rng(seed))
        return _kept_axes(eigenvalues, vectors)

    def _winning_modality(self, coords, offset, shares, weight) -> np.ndarray:
        width = len(shares)
        z = coords @ self.components_[:, offset:offset + width]
        with np.errstate(divide="ignore", invalid="ignore"):
            indicators = z * np.sqrt(shares) / np.sqrt(weight) + shares
        return np.argmax(indicators, axis=1) if width else np.full(len(coords), -1)


def _covariance_axes(covariance: np.ndarray, wanted: int):
    """The ``wanted`` leading eigenpairs of a coded covariance matrix, signs fixed."""
    width = covariance.shape[0]
    if wanted == 0:
        return np.zeros(0), np.zeros((width, 0))
    # the whole decomposition: LAPACK's subset drivers may return nothing when the subset
    # boundary falls inside a large group of equal eigenvalues (an unrelated many-level column)
    with one_blas_thread():
        eigenvalues, vectors = scipy.linalg.eigh(covariance)
    return _kept_axes(eigenvalues[::-1][:wanted], vectors[:, ::-1][:, :wanted])


def _kept_axes(eigenvalues, vectors):
    keep = eigenvalues > _RANK_TOL * max(float(eigenvalues[0]), 1.0)
    return eigenvalues[keep], _fix_signs(vectors[:, keep])


def _informative_dimensions(stats) -> int:
    """A non-constant number counts 1; a block of modalities held by some row counts their number - 1."""
    numeric = int(stats.std > 0) if isinstance(stats, NumericStatistics) else 0
    if isinstance(stats, NumericStatistics) and not stats.has_indicator:
        return numeric
    return numeric + max(int(np.count_nonzero(stats.shares)) - 1, 0)


def _indicator_block(blocks, n):
    """Sparse 0/1 indicators, shares and FAMD scales of the categorical blocks."""
    rows, cols, shares, scales = [], [], [], []
    offset = 0
    for codes, block_shares, weight in blocks:
        seen = codes >= 0
        rows.append(np.flatnonzero(seen))
        cols.append(codes[seen] + offset)
        shares.append(block_shares)
        with np.errstate(divide="ignore"):
            scale = np.sqrt(weight / block_shares)
        # a modality held by every row (or none) carries no information: code it 0
        scale[(block_shares <= 0) | (block_shares >= 1)] = 0.0
        scales.append(scale)
        offset += len(block_shares)
    if not blocks:
        return sp.csr_matrix((n, 0)), np.zeros(0), np.zeros(0)
    rows, cols = np.concatenate(rows), np.concatenate(cols)
    matrix = sp.csr_matrix((np.ones(len(rows)), (rows, cols)), shape=(n, offset))
    return matrix, np.concatenate(shares), np.concatenate(scales)


def _lanczos(coded: _Coded, wanted: int, rng: np.random.Generator):
    """Leading eigenpairs of ``Z.T Z / n`` without forming it (ARPACK, seeded start vector).

    Axes inside a cluster of equal eigenvalues (the modalities of an unrelated high-cardinality
    column all have inertia 1) are one basis of that cluster: deterministic under the seed, not
    unique.
    """
    width = coded.numeric.shape[1] + coded.indicators.shape[1]
    n = coded.n_rows

    def covariance_times(vectors):
        return coded.transposed_times(coded.times(vectors.reshape(width, -1))) / n

    operator = LinearOperator((width, width), matvec=covariance_times, matmat=covariance_times, dtype=np.float64)
    try:
        with one_blas_thread():
            eigenvalues, vectors = eigsh(operator, k=wanted, v0=rng.standard_normal(width), tol=_ARPACK_TOL)
    except ArpackNoConvergence as partial:  # keep the axes that converged
        logger.warning("only %d of %d axes converged", len(partial.eigenvalues), wanted)
        eigenvalues, vectors = partial.eigenvalues, partial.eigenvectors
    order = np.argsort(eigenvalues)[::-1]
    return eigenvalues[order], vectors[:, order]


@functools.cache
def _blas() -> ThreadpoolController:
    """The process' BLAS libraries, found once (a search of the loaded libraries costs milliseconds)."""
    return ThreadpoolController()


def one_blas_thread():
    """A context in which BLAS and LAPACK run on one thread: their sums in one order, the same bits whatever
    the number of threads of the process (OpenBLAS splits a dot product, a matrix-vector product summed
    over the rows, or a blocked eigen-reduction between its threads).

    Examples
    --------
    >>> with one_blas_thread():
    ...     (np.ones(20_000) @ np.full(20_000, 0.1)).round(6)
    np.float64(2000.0)
    """
    return _blas().limit(limits=1, user_api="blas")


def _fix_signs(vectors: np.ndarray) -> np.ndarray:
    """Make each axis' largest loading positive (the first one, among near-ties), as svd_flip does."""
    vectors = vectors.copy()
    for j in range(vectors.shape[1]):
        magnitude = np.abs(vectors[:, j])
        lead = int(np.argmax(magnitude >= magnitude.max() * (1 - _SIGN_TIE)))
        if vectors[lead, j] < 0:
            vectors[:, j] = -vectors[:, j]
    return vectors


def _restore_categories(winner: np.ndarray, stats: CategoricalStatistics) -> pd.Series:
    missing = winner >= len(stats.categories)
    values = pd.Series(stats.categories.take(np.where(missing, -1, winner), allow_fill=True, fill_value=None))
    try:
        return values.astype(stats.dtype)
    except (TypeError, ValueError):  # e.g. int64 codes with a missing value: keep pandas' choice
        return values

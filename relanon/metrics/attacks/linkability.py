"""Linkability: two partial records of one person joined through the release.

The attacker holds two data sets about the same people with disjoint columns (a hospital's
quasi-identifiers, an insurer's other columns) and wants to know which rows belong together. For
each person attacked, it finds the released row closest on the first set of columns and the one
closest on the second (the mixed-type distance of :mod:`relanon.metrics.attacks.coding`); the
attack succeeds when they share a row among the ``n_neighbors`` closest (anonymeter's method).

Ties between equally close released rows are broken at random (seeded), independently on each
side. The random attacker draws the ``n_neighbors`` rows of each side at random.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from relanon.common.errors import ParameterError
from relanon.metrics.attacks.coding import CodedFrames, code_frames, nearest
from relanon.metrics.attacks.confidence import CONFIDENCE, success_rate
from relanon.metrics.attacks.results import LINKABILITY, AttackResult, attack_result
from relanon.metrics.attacks.singling_out import positive_integer

DEFAULT_TARGETS = 5_000


def linkability(release: pd.DataFrame, training: pd.DataFrame, control: pd.DataFrame, columns, *, split=None,
                n_attacks: int = DEFAULT_TARGETS, n_neighbors: int = 1, random_state=None,
                confidence: float = CONFIDENCE) -> AttackResult:
    """Run the linkability attack against a release.

    Parameters
    ----------
    release, training, control : DataFrame
        The released rows, the people they were made from, and people they never saw.
    columns : mapping of str to str
        The attacked columns and their schema types.
    split : (list of str, list of str), optional
        The two disjoint column sets the attacker holds; default: the first half of the columns
        against the second.
    n_attacks : int
        People attacked in each group (a seeded sample when the group is larger).
    n_neighbors : int
        Released rows considered on each side.
    random_state : int or numpy.random.Generator

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> people = pd.DataFrame({"a": rng.normal(size=300), "b": rng.normal(size=300)})
    >>> kinds = {"a": "continuous", "b": "continuous"}
    >>> copy = linkability(people[:200], people[:200], people[200:], kinds, random_state=0)
    >>> copy.main.share, copy.risk.value > 0.9
    (1.0, True)
    """
    coded = code_frames({"release": release, "training": training, "control": control}, columns)
    rng = np.random.default_rng(random_state)
    first, second = default_split(list(coded.columns)) if split is None else split
    a, b = coded.index(list(first)), coded.index(list(second))
    check_split(coded, a, b)
    found = {}
    for group in ("training", "control"):
        rows = sample_rows(len(coded[group]), n_attacks, rng)
        found[group] = tuple(nearest(coded[group][rows], coded["release"], coded, [a, b], n_neighbors, random_state=rng))
    return linkability_result(coded, found["training"], found["control"], n_neighbors, rng, confidence=confidence,
                              target=split_text(coded, a, b))


def linkability_result(coded: CodedFrames, main, control, n_neighbors: int, rng, *, confidence: float = CONFIDENCE,
                       target: str = "") -> AttackResult:
    """Score the neighbours found on each side: a success when the two sides share a released row."""
    n_release = len(coded["release"])
    main_hits = links(*main)
    control_hits = links(*control)
    n = len(main_hits)
    k = min(n_neighbors, n_release)
    random_a, random_b = (_random_rows(n_release, n, k, rng) for _ in range(2))
    return attack_result(
        LINKABILITY, target,
        success_rate(int(main_hits.sum()), n, confidence),
        success_rate(int(control_hits.sum()), len(control_hits), confidence),
        success_rate(int(links(random_a, random_b).sum()), n, confidence),
        confidence=confidence, details={"n_neighbors": int(n_neighbors), "released_rows": int(n_release)},
    )


def _random_rows(n_release: int, n: int, k: int, rng) -> np.ndarray:
    if n_release == 0:
        return np.empty((n, 0), dtype=np.int64)
    if k == 1:
        return rng.integers(n_release, size=(n, 1))
    return np.array([rng.choice(n_release, size=k, replace=False) for _ in range(n)]).reshape(n, k)


def links(near_a: np.ndarray, near_b: np.ndarray) -> np.ndarray:
    """Whether the released rows found from each side share one, per person."""
    if near_a.shape[1] == 1:
        return near_a[:, 0] == near_b[:, 0]
    return np.array([bool(set(x) & set(y)) for x, y in zip(near_a.tolist(), near_b.tolist(), strict=True)], dtype=bool)


def default_split(columns: list[str]) -> tuple[list[str], list[str]]:
    """The first half of the columns against the second."""
    middle = (len(columns) + 1) // 2
    return columns[:middle], columns[middle:]


def check_split(coded: CodedFrames, a: np.ndarray, b: np.ndarray) -> None:
    if not len(a) or not len(b):
        raise ParameterError("linkability needs two non-empty sets of columns")
    shared = sorted(set(a.tolist()) & set(b.tolist()))
    if shared:
        raise ParameterError(f"the two column sets of a linkability attack must be disjoint; both hold "
                             f"{', '.join(coded.columns[j] for j in shared)}")


def split_text(coded: CodedFrames, a, b) -> str:
    return f"{', '.join(coded.columns[j] for j in a)} | {', '.join(coded.columns[j] for j in b)}"


def sample_rows(n: int, n_attacks: int, rng) -> np.ndarray:
    """Every row when ``n <= n_attacks``, else a seeded sample of ``n_attacks`` rows (in order)."""
    positive_integer(n_attacks, "n_attacks")
    if n <= n_attacks:
        return np.arange(n)
    return np.sort(rng.choice(n, size=n_attacks, replace=False))

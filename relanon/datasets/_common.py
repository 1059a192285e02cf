"""What the generated databases share: checked arguments, dates, names and random draws."""

from __future__ import annotations

import dataclasses
import math
import numbers

import numpy as np
import pandas as pd

from relanon.common.errors import ParameterError
from relanon.common.options import Method, check_integer
from relanon.schema.model import Schema

FIRST_NAMES = {
    "F": "Marie Nathalie Isabelle Sylvie Catherine Sophie Christine Valerie Sandrine Celine Julie Aurelie "
    "Camille Emma Lea Chloe Manon Ines Jade Louise Alice Lina Rose Anna Ambre Mila Julia Lucie Sarah Laura "
    "Claire Anne Helene Martine Monique Nicole Francoise Brigitte Agnes Emilie".split(),
    "M": "Jean Pierre Michel Philippe Alain Nicolas Christophe Patrick Eric Laurent Frederic Stephane "
    "Julien Thomas Lucas Hugo Louis Gabriel Arthur Jules Adam Raphael Leo Paul Nathan Antoine Maxime "
    "Alexandre Vincent Olivier David Sebastien Guillaume Francois Daniel Bernard Yves Andre Karim Mehdi".split(),
}
LAST_NAMES = (
    "Martin Bernard Thomas Petit Robert Richard Durand Dubois Moreau Laurent Simon Michel Lefebvre Leroy "
    "Roux David Bertrand Morel Fournier Girard Bonnet Dupont Lambert Fontaine Rousseau Vincent Muller "
    "Lefevre Faure Andre Mercier Blanc Guerin Boyer Garnier Chevalier Francois Legrand Gauthier Garcia "
    "Perrin Robin Clement Morin Nicolas Henry Roussel Mathieu Gautier Masson Marchand Duval Denis Dumont "
    "Marie Lemaire Noel Meyer Dufour Meunier Brun Blanchard Giraud Joly Riviere Lucas Brunet Gaillard "
    "Barbier Arnaud Martinez Gerard Roche Renard Schmitt Roy Leroux Colin Vidal Caron Picard Roger Fabre "
    "Aubert Lemoine Renaud Dumas Lacroix Olivier Philippe Bourgeois Pierre Benoit Rey Leclerc Payet "
    "Rolland Leclercq Guillaume Lecomte Lopez Jean Dupuy Guillot Hubert Berger Carpentier Sanchez".split()
)


def checked_seed(seed) -> int:
    return check_integer(seed, "seed", minimum=0)


def checked_scale(scale) -> float:
    if isinstance(scale, bool) or not isinstance(scale, numbers.Real) or not math.isfinite(scale) or scale <= 0:
        raise ParameterError(f"scale must be a positive finite number (1 gives 10,000 patients), got {scale!r}")
    return float(scale)


def fit_k_to_sizes(schema: Schema, database: dict[str, pd.DataFrame]) -> Schema:
    """Lower ``k`` where a tiny scale leaves a table with no more rows than neighbours asked for."""
    tables = {}
    for table in schema:
        n_rows, k = len(database[table.name]), table.anonymize.k_or_default
        if table.anonymize.method == Method.AVATAR and k is not None and k >= n_rows:
            table = dataclasses.replace(table, anonymize=dataclasses.replace(table.anonymize, k=max(2, n_rows - 1)))
        tables[table.name] = table
    return schema.with_tables(tables)


def draw_rows(weights: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """One column index per row, drawn with probability proportional to the row's weights."""
    cumulative = np.cumsum(weights, axis=1)
    u = rng.random(len(weights)) * cumulative[:, -1]
    return (cumulative <= u[:, None]).sum(axis=1)


def allocate(n: int, shares: np.ndarray) -> np.ndarray:
    """Split ``n`` into integer counts proportional to ``shares`` (largest remainders)."""
    exact = n * shares / shares.sum()
    counts = np.floor(exact).astype(np.int64)
    leftover = n - counts.sum()
    counts[np.argsort(-(exact - counts), kind="stable")[:leftover]] += 1
    return counts


def codes(values: pd.Series, categories: list) -> np.ndarray:
    """Position of each value in ``categories``, as int64 (pandas' own codes may be int8)."""
    return pd.Categorical(values, categories=categories).codes.astype(np.int64)


def shares(weights: dict) -> np.ndarray:
    values = np.array(list(weights.values()), dtype=float)
    return values / values.sum()


def add_years(days: np.ndarray, years) -> np.ndarray:
    """Same day and month ``years`` later (29 February becomes 28 February)."""
    months = days.astype("datetime64[M]")
    day_in_month = days - months
    shifted = months + (np.asarray(years) * 12).astype("timedelta64[M]")
    month_length = (shifted + 1).astype("datetime64[D]") - shifted.astype("datetime64[D]")
    return shifted.astype("datetime64[D]") + np.minimum(day_in_month, month_length - 1)


def age_on(birth: np.ndarray, day: np.datetime64) -> np.ndarray:
    """Age in whole years on ``day`` of people born on ``birth``."""
    years = day.astype("datetime64[Y]").astype(np.int64) - birth.astype("datetime64[Y]").astype(np.int64)
    return years - (add_years(birth, years) > day)


def uniform_days(span, rng: np.random.Generator) -> np.ndarray:
    """A whole number of days drawn uniformly in [0, span)."""
    span = np.asarray(span).astype("timedelta64[D]").astype(np.int64)
    return np.floor(rng.random(len(span)) * np.maximum(span, 1)).astype(np.int64).astype("timedelta64[D]")


def full_names(female: np.ndarray, rng: np.random.Generator) -> pd.Series:
    n = len(female)
    women, men = (np.asarray(FIRST_NAMES[s], dtype=object) for s in ("F", "M"))
    first = np.where(female, women[rng.integers(len(women), size=n)], men[rng.integers(len(men), size=n)])
    initial = np.asarray(list("ABCDEFGHIJKLMNOPQRSTUVWXYZ"), dtype=object)[rng.integers(26, size=n)]
    last = np.asarray(LAST_NAMES, dtype=object)[rng.integers(len(LAST_NAMES), size=n)]
    return text(first + " " + initial + ". " + last)


def sex_labels(female: np.ndarray) -> pd.Series:
    return text(np.where(female, "F", "M").astype(object))


def text(values) -> pd.Series:
    return pd.Series(np.asarray(values, dtype=object), dtype="str")


def as_datetime(days: np.ndarray) -> np.ndarray:
    return np.asarray(days).astype("datetime64[D]").astype("datetime64[ns]")

"""The factor space: FAMD/PCA/MCA coordinates, frozen statistics, no rows kept, sparse high-cardinality path."""

import pickle
import warnings

import numpy as np
import pandas as pd
import prince
import pytest
from sklearn.decomposition import PCA
from sklearn.preprocessing import StandardScaler

import relanon.engine.axes as axes
import relanon.engine.factor_space as factor_space
from relanon.common.errors import DataError, ParameterError
from relanon.engine.columns import column_types, numeric_values, restore_numeric
from relanon.engine.factor_space import FactorSpace
from relanon.schema.model import Column

MIXED = {"height": "continuous", "age": "integer", "blood": "categorical", "smoker": "boolean"}


def people(n=400, seed=0):
    rng = np.random.default_rng(seed)
    age = rng.integers(18, 90, n)
    return pd.DataFrame({
        "height": 150 + 0.2 * age + rng.normal(0, 8, n),
        "age": age,
        "blood": rng.choice(["A", "B", "AB", "O"], n, p=[0.4, 0.1, 0.05, 0.45]),
        "smoker": rng.random(n) < 0.2 + age / 300,
    })


def same_up_to_sign(a, b, atol=1e-9):
    signs = np.sign(np.sum(a * b, axis=0))
    return np.allclose(a, b * signs, atol=atol)


def test_coordinates_equal_prince_famd_up_to_sign():
    frame = people()
    space = FactorSpace(MIXED, n_components=5).fit(frame)
    ours = space.transform(frame)
    reference = prince.FAMD(n_components=5, engine="scipy", categorical_columns=["blood", "smoker"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        reference.fit(frame.astype({"age": float}))
        theirs = reference.row_coordinates(frame.astype({"age": float})).to_numpy()
    assert np.allclose(space.eigenvalues_, reference.eigenvalues_, rtol=1e-10)
    assert same_up_to_sign(ours, theirs)


def test_all_continuous_is_a_standardized_pca():
    frame = people()[["height", "age"]].assign(weight=lambda f: f.height * 0.4 + np.arange(len(f)) % 7)
    space = FactorSpace({"height": "continuous", "age": "integer", "weight": "continuous"}, n_components=3).fit(frame)
    pca = PCA().fit(StandardScaler().fit_transform(frame))
    assert space.n_components_ == 3
    assert np.allclose(space.explained_inertia_, pca.explained_variance_ratio_)
    assert same_up_to_sign(space.transform(frame), pca.transform(StandardScaler().fit_transform(frame)))


def test_all_categorical_is_an_mca_scaled_by_the_square_root_of_the_number_of_columns():
    rng = np.random.default_rng(1)
    frame = pd.DataFrame({c: rng.choice(list(levels), 300) for c, levels in (("a", "xyz"), ("b", "pq"), ("c", "uvwt"))})
    space = FactorSpace(dict.fromkeys(frame, "categorical"), n_components=4).fit(frame)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        mca = prince.MCA(n_components=4, engine="scipy").fit(frame)
        theirs = mca.row_coordinates(frame).to_numpy()
    assert space.n_dims_ == 2 + 1 + 3
    assert np.allclose(space.eigenvalues_, 3 * np.asarray(mca.eigenvalues_))
    assert same_up_to_sign(space.transform(frame), np.sqrt(3) * theirs)


def test_a_row_projected_alone_gets_its_batch_coordinates():
    frame = people()
    space = FactorSpace(MIXED).fit(frame)
    batch = space.transform(frame)
    for i in (0, 17, 399):
        assert np.allclose(space.transform(frame.iloc[[i]]), batch[i], rtol=0, atol=1e-12)


def test_signs_are_fixed_whatever_the_row_order():
    frame = people()
    shuffled = frame.sample(frac=1.0, random_state=3)
    a = FactorSpace(MIXED, n_components=5).fit(frame).transform(frame)
    b = FactorSpace(MIXED, n_components=5).fit(shuffled).transform(frame)
    assert np.allclose(a, b, atol=1e-9)
    largest = np.abs(FactorSpace(MIXED, n_components=5).fit(frame).components_).argmax(axis=1)
    assert (FactorSpace(MIXED, n_components=5).fit(frame).components_[np.arange(5), largest] > 0).all()


def test_the_fitted_space_keeps_aggregates_not_rows():
    # above 20 rows per value, the ages (72 of them) are kept as the column's support: an aggregate
    # like a categorical's modalities, whose size does not grow with the rows
    small = FactorSpace(MIXED).fit(people(n=5_000, seed=1))
    large = FactorSpace(MIXED).fit(people(n=100_000, seed=1))
    assert len(pickle.dumps(large)) < 1.2 * len(pickle.dumps(small))
    assert len(large.statistics_["age"].support) == 72 and large.statistics_["height"].support is None
    for value in vars(large).values():
        assert np.size(value) < 1000


def test_inverse_transform_with_every_axis_gives_back_the_rows_and_dtypes():
    rng = np.random.default_rng(2)
    n = 300
    frame = pd.DataFrame({
        "x": np.where(rng.random(n) < 0.1, np.nan, rng.normal(size=n)),
        "count": pd.array(np.where(rng.random(n) < 0.1, None, rng.integers(0, 9, n)), dtype="Int64"),
        "when": pd.Series(pd.date_range("2021-03-01", periods=n, freq="37h", tz="Europe/Paris")),
        "city": pd.Series(np.where(rng.random(n) < 0.1, None, rng.choice(["Lyon", "Nice", "Brest"], n)), dtype="str"),
        "flag": rng.random(n) < 0.5,
    })
    types = {"x": "continuous", "count": "integer", "when": "datetime", "city": "categorical", "flag": "boolean"}
    space = FactorSpace(types, n_components=10**6).fit(frame)
    assert space.n_components_ == space.n_dims_
    back = space.inverse_transform(space.transform(frame))
    pd.testing.assert_frame_equal(back, frame[list(space.columns_)], check_exact=False, rtol=1e-6)


def test_transform_accepts_missing_and_unseen_values():
    frame = people()
    space = FactorSpace(MIXED).fit(frame)
    row = frame.iloc[[0]].copy()
    unseen, missing = row.assign(blood="Z"), row.assign(blood=None)
    assert np.allclose(space.transform(unseen), space.transform(missing))
    assert not np.allclose(space.transform(unseen), space.transform(row))
    median = float(np.median(frame["height"]))
    assert np.allclose(space.transform(row.assign(height=np.nan)), space.transform(row.assign(height=median)))


def test_a_missing_numeric_value_at_fit_gets_an_indicator_and_the_median():
    frame = people()
    frame.loc[::10, "height"] = np.nan
    space = FactorSpace(MIXED).fit(frame)
    stats = space.statistics_["height"]
    assert stats.missing_share == pytest.approx(0.1)
    assert stats.fill == pytest.approx(np.nanmedian(frame["height"]))
    assert "is_missing(height)=True" in space.feature_names_


def test_a_weight_multiplies_the_column_share_of_inertia():
    frame = people()
    plain = FactorSpace(MIXED).fit(frame)
    heavy_numeric = FactorSpace(MIXED, weights={"height": 4.0}).fit(frame)
    heavy_categorical = FactorSpace([Column("height", "continuous"), Column("age", "integer"),
                                     Column("blood", "categorical", 2.0), Column("smoker", "boolean")]).fit(frame)
    assert heavy_numeric.total_inertia_ == pytest.approx(plain.total_inertia_ + 3.0)
    blood_inertia = 4 - 1  # a categorical with m modalities has inertia m - 1
    assert heavy_categorical.total_inertia_ == pytest.approx(plain.total_inertia_ + blood_inertia)
    assert abs(heavy_numeric.components_[0, 0]) > abs(plain.components_[0, 0])


def test_default_and_capped_number_of_axes():
    frame = people()
    every = FactorSpace(MIXED, n_components=50).fit(frame)
    assert every.n_components_ == 6  # dims: 2 + 3 + 1
    auto = FactorSpace(MIXED).fit(frame)  # ncp auto: the fewest axes reaching 95 % of the inertia
    share = np.cumsum(every.eigenvalues_) / every.total_inertia_
    assert auto.n_components_ == int(np.argmax(share >= axes.AUTO_INERTIA_SHARE)) + 1
    assert share[auto.n_components_ - 2] < axes.AUTO_INERTIA_SHARE <= share[auto.n_components_ - 1]
    with pytest.raises(ParameterError, match="positive integer or 'auto'"):
        FactorSpace(MIXED, n_components="all").fit(frame)


def test_auto_is_capped_on_large_tables():
    assert axes.max_auto_axes(10**6) == axes.MIN_AUTO_AXES
    frame = people(n=200_000, seed=3).assign(city=lambda f: np.arange(len(f)) % 40)
    space = FactorSpace({**MIXED, "city": "categorical"}).fit(frame)
    assert space.n_components_ <= axes.max_auto_axes(len(frame))


def test_constant_all_missing_and_single_level_columns_carry_no_inertia():
    frame = people().assign(constant=7.5, empty=np.nan, one="only")
    types = {**MIXED, "constant": "continuous", "empty": "continuous", "one": "categorical"}
    space = FactorSpace(types, n_components=50).fit(frame)
    base = FactorSpace(MIXED, n_components=50).fit(frame)
    assert space.n_dims_ == base.n_dims_
    assert np.allclose(space.eigenvalues_, base.eigenvalues_)
    assert np.isfinite(space.transform(frame)).all()


def test_the_high_cardinality_path_matches_the_dense_decomposition(monkeypatch):
    rng = np.random.default_rng(4)
    n, levels = 5000, 400
    shares = 1 / np.arange(1, levels + 1)
    age = rng.integers(0, 100, n)
    frame = pd.DataFrame({
        "city": np.array([f"city_{i:04d}" for i in range(levels)])[rng.choice(levels, n, p=shares / shares.sum())],
        "age": age,
        "income": rng.lognormal(10, 1, n) * (1 + age / 50),
        "sex": rng.choice(["F", "M"], n),
    })
    types = {"city": "categorical", "age": "integer", "income": "continuous", "sex": "categorical"}
    dense = FactorSpace(types, n_components=3).fit(frame)
    monkeypatch.setattr(factor_space, "DENSE_LIMIT", 100)  # force the sparse (Lanczos) path
    sparse = FactorSpace(types, n_components=3, random_state=0).fit(frame)
    again = FactorSpace(types, n_components=3, random_state=0).fit(frame)
    assert len(sparse.feature_names_) > factor_space.DENSE_LIMIT
    assert np.array_equal(sparse.components_, again.components_)
    assert np.allclose(sparse.eigenvalues_, dense.eigenvalues_, rtol=1e-9)
    assert np.allclose(sparse.transform(frame), dense.transform(frame), atol=1e-6)


def test_datetimes_are_seconds_since_the_epoch_in_utc():
    naive = pd.Series(pd.to_datetime(["1970-01-02", None]))
    aware = pd.Series(pd.to_datetime(["1970-01-02 01:00"]).tz_localize("Europe/Paris"))
    assert np.array_equal(numeric_values(naive, "datetime"), [86400.0, np.nan], equal_nan=True)
    assert numeric_values(aware, "datetime").tolist() == [86400.0]


def test_dates_stay_dates_when_restored():
    dates = pd.Series(pd.to_datetime(["2020-01-01", "2020-03-05"]), name="d")
    stats = factor_space.numeric_statistics(dates, "datetime", 1.0, table="t")
    restored = restore_numeric(np.array([numeric_values(dates, "datetime").mean()]), np.array([False]), stats)
    assert restored.dtype == dates.dtype
    assert restored.iloc[0] == pd.Timestamp("2020-02-02")


def _restored_dates(dates: pd.Series, seconds) -> pd.Series:
    stats = factor_space.numeric_statistics(dates, "datetime", 1.0, table="t")
    seconds = np.asarray(seconds, dtype=np.float64)
    return restore_numeric(seconds, np.zeros(len(seconds), dtype=bool), stats)


def test_dates_sharing_a_time_of_day_keep_it_when_restored():
    rng = np.random.default_rng(0)
    for time in ("12:00", "10:00", "07:45:30"):
        dates = pd.Series(pd.to_datetime("2021-01-01 " + time) + pd.to_timedelta(rng.integers(0, 900, 50), unit="D"))
        values = numeric_values(dates, "datetime")
        restored = _restored_dates(dates, rng.uniform(values.min(), values.max(), 500))  # any instant in between
        assert restored.dtype == dates.dtype
        assert (restored.dt.strftime("%H:%M:%S") == pd.Timestamp(time).strftime("%H:%M:%S")).all()
    # only the minute within the hour is shared: every hour, at that minute
    quarter_past = pd.Series(pd.to_datetime(["2021-03-04 08:15", "2021-03-04 13:15", "2021-03-09 22:15"]))
    instants = [pd.Timestamp(f"2021-03-04 {time}", tz="UTC").timestamp() for time in ("10:40", "10:50")]
    assert _restored_dates(quarter_past, instants).tolist() == [pd.Timestamp("2021-03-04 10:15"),
                                                                pd.Timestamp("2021-03-04 11:15")]


def test_local_midnights_stay_local_midnights_across_a_change_of_daylight_saving_time():
    # Paris: UTC+1 in winter, UTC+2 from 2021-03-28 and until 2021-10-31
    days = pd.Series(pd.date_range("2021-03-20", "2021-11-10", freq="D", tz="Europe/Paris"), name="day")
    assert set(days.dt.tz_convert("UTC").dt.hour) == {22, 23}  # not one hour of the day in UTC
    values = numeric_values(days, "datetime")
    restored = _restored_dates(days, np.linspace(values.min(), values.max(), 2_000))
    assert str(restored.dtype) == str(days.dtype)
    assert (restored == restored.dt.normalize()).all()
    assert restored.min() == days.min() and restored.max() == days.max()
    around = restored[(restored >= "2021-03-27") & (restored <= "2021-03-29")]  # the 23-hour day is kept
    assert set(around.dt.strftime("%Y-%m-%d %H:%M%z")) == {
        "2021-03-27 00:00+0100", "2021-03-28 00:00+0100", "2021-03-29 00:00+0200"}


def test_a_wall_clock_time_skipped_or_read_twice_in_its_zone_is_placed_on_the_grid():
    half_past = pd.Series(pd.to_datetime(["2021-03-27 01:30", "2021-10-30 04:30"]).tz_localize("Europe/Paris"))
    assert _restored_dates(half_past, [600.0]).iloc[0] == pd.Timestamp("1970-01-01 01:30", tz="Europe/Paris")  # 01:10
    # 02:30 is skipped on 2021-03-28 (clocks from 02:00 to 03:00): the instant an hour later, 03:30
    skipped = pd.Timestamp("2021-03-28 01:25", tz="UTC").timestamp()  # 02:25 by the winter clock
    assert _restored_dates(half_past, [skipped]).iloc[0] == pd.Timestamp("2021-03-28 03:30", tz="Europe/Paris")
    # 02:30 is read twice on 2021-10-31: the reading nearest the value (summer, then winter time)
    for utc, expected in (("00:35", "00:30"), ("01:35", "01:30")):
        twice = pd.Timestamp(f"2021-10-31 {utc}", tz="UTC").timestamp()
        restored = _restored_dates(half_past, [twice]).iloc[0]
        assert restored == pd.Timestamp(f"2021-10-31 {expected}", tz="UTC")
        assert restored.strftime("%H:%M") == "02:30"


@pytest.mark.parametrize("tz", [None, "UTC"])
def test_whole_days_and_hours_are_rounded_as_before(tz):
    rng = np.random.default_rng(3)
    seconds = rng.uniform(0, 2e9, 1_000)
    for step in (86400, 3600):
        stamps = pd.Series(pd.to_datetime(rng.integers(0, 20_000, 30) * step, unit="s"))
        stamps = stamps.dt.tz_localize(tz) if tz else stamps
        expected = (np.rint(seconds / step) * step * 10**9).astype(np.int64)  # the rounding of every release so far
        restored = _restored_dates(stamps.astype(f"datetime64[ns{', ' + tz if tz else ''}]"), seconds)
        assert np.array_equal(restored.array.asi8, expected)


@pytest.mark.parametrize(
    ("frame", "types", "error", "words"),
    [
        (pd.DataFrame({"a": [1.0, 2.0]}), {"a": "continuous", "b": "integer"}, DataError, ["t.b", "absent"]),
        (pd.DataFrame({"a": [1.0, np.inf, 3.0]}), {"a": "continuous"}, DataError, ["t.a", "infinite", "inf"]),
        (pd.DataFrame({"a": ["1", "abc", "3"]}), {"a": "continuous"}, DataError, ["t.a", "not numbers", "'abc'"]),
        (pd.DataFrame({"a": ["2020-01-01"]}), {"a": "datetime"}, DataError, ["t.a", "to_datetime"]),
        (pd.DataFrame({"a": [1.0]}), {"a": "text"}, ParameterError, ["'text'", "categorical"]),
    ],
)
def test_bad_input_is_explained(frame, types, error, words):
    with pytest.raises(error) as caught:
        FactorSpace(types, name="t").fit(frame)
    for word in words:
        assert word in str(caught.value)


def test_bad_parameters_are_explained():
    frame = people()
    with pytest.raises(ParameterError, match="positive integer"):
        FactorSpace(MIXED, n_components=0).fit(frame)
    with pytest.raises(ParameterError, match="weight of column 'age'"):
        FactorSpace(MIXED, weights={"age": -1}).fit(frame)
    with pytest.raises(ParameterError, match="not a released column"):
        column_types(MIXED, {"nope": 2})
    with pytest.raises(ParameterError, match="not fitted"):
        FactorSpace(MIXED).transform(frame)


def test_fitting_never_modifies_the_frame():
    frame = people()
    frame.loc[::7, "height"] = np.nan
    before = frame.copy(deep=True)
    space = FactorSpace(MIXED).fit(frame)
    space.transform(frame)
    pd.testing.assert_frame_equal(frame, before)

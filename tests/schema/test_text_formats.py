"""A CSV release writes each column as the input wrote it: boolean words, date formats, numbers."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from relanon.multitable.pipeline import anonymize
from relanon.multitable.release import write_release
from relanon.schema.model import load_schema
from relanon.schema.text_formats import as_text, formats_of
from relanon.stores.io import read_database, write_database


def write_csv(folder, name, text):
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{name}.csv").write_text(text, encoding="utf-8")


def one_table(columns, **table):
    return load_schema({"relanon": 1, "tables": {"t": {"primary_key": "id", "columns": columns, **table}}})


def round_trip(tmp_path, schema, text, name="t"):
    """The CSV text of table ``name`` read with ``schema`` and written again."""
    write_csv(tmp_path / "in", name, text)
    out = write_database(read_database(tmp_path / "in", schema), tmp_path / "out", schema)
    return (out / f"{name}.csv").read_text(encoding="utf-8")


# --------------------------------------------------------------------------- booleans


def test_booleans_come_back_in_the_words_of_each_column(tmp_path):
    schema = one_table({"yn": "boolean", "words": "boolean", "digits": "boolean", "plain": "boolean",
                        "only_no": "boolean"})
    text = ("id,yn,words,digits,plain,only_no\n"
            "1,Y,yes,1,true,N\n"
            "2,N,no,0,false,\n"
            "3,,yes,,true,N\n")
    written = round_trip(tmp_path, schema, text).splitlines()
    assert written[1:] == ["1,Y,yes,1,true,N", "2,N,no,0,false,", "3,,yes,,true,N"]


def test_the_true_word_of_a_column_holding_only_false_matches_its_spelling(tmp_path):
    schema = one_table({"a": "boolean", "b": "boolean"})
    frame = read_database(_folder(tmp_path, "t", "id,a,b\n1,N,no\n2,N,No\n3,N,No\n"), schema)["t"]
    assert formats_of(frame)["a"] == ("boolean", "Y", "N")
    assert formats_of(frame)["b"] == ("boolean", "Yes", "No")  # the most frequent spelling


# --------------------------------------------------------------------------- dates


def test_dates_come_back_in_the_format_of_their_column(tmp_path):
    schema = one_table({"fr": "datetime", "us": "datetime", "de": "datetime", "iso": "datetime",
                        "fr_time": "datetime"})
    text = ("id,fr,us,de,iso,fr_time\n"
            "1,29/08/2020,08/29/2020,29.08.2020,2020-08-29,29/08/2020 10:33\n"
            "2,02/02/2021,02/02/2021,02.02.2021,,02/02/2021 01:06\n"
            "3,,12/31/2021,31.12.2021,2021-12-31,\n")
    written = round_trip(tmp_path, schema, text)
    assert written == text


def test_dates_with_month_names_come_back_with_them(tmp_path):
    schema = one_table({"us": "datetime", "uk": "datetime"})
    text = "id,us,uk\n1,\"Jun 03, 2021\",03 June 2021\n2,\"Dec 17, 2021\",17 December 2021\n"
    assert round_trip(tmp_path, schema, text) == text


def test_timestamps_keep_the_t_separator_and_the_z_suffix(tmp_path):
    schema = one_table({"utc": "datetime", "offset": "datetime", "mixed": "datetime"})
    text = ("id,utc,offset,mixed\n"
            "1,2013-01-01T11:00:00Z,2021-06-14T07:14:00+05:30,2022-05-29T10:33:00+02:00\n"
            "2,2013-09-14T07:00:00Z,2021-06-27T17:10:00+05:30,2022-01-29T10:33:00+01:00\n")
    written = round_trip(tmp_path, schema, text).splitlines()
    # offsets that differ within a column are read on UTC and written back with a zone rule that fits them
    # (before: on UTC, 2022-05-29T08:33:00+00:00 and 2022-01-29T09:33:00+00:00)
    assert written[1:] == text.splitlines()[1:]


def test_timestamps_in_milliseconds_keep_them(tmp_path):
    # as JavaScript's toISOString writes them; they were written 2021-06-03 20:45:17+00:00
    schema = one_table({"utc": "datetime", "local": "datetime"})
    text = ("id,utc,local\n"
            "1,2021-06-03T20:45:17.000Z,2021-06-03 20:45:17.250\n"
            "2,2021-11-14T15:22:58.123Z,\n")
    assert round_trip(tmp_path, schema, text) == text
    finer = pd.Series(pd.to_datetime(["2021-06-03 20:45:17.000250"]))
    assert as_text(finer, ("datetime", "%Y-%m-%d %H:%M:%S.%3f", None)) is None  # microseconds would be lost


def test_a_column_with_the_offsets_of_daylight_saving_is_written_in_them(tmp_path):
    schema = one_table({"d": "datetime"})
    text = ("id,d\n1,2020-03-28T10:00:00+01:00\n2,2020-03-30T10:00:00+02:00\n3,2020-10-26T09:00:00+01:00\n"
            "4,\n")
    frame = read_database(_folder(tmp_path, "t", text), schema)["t"]
    assert str(frame["d"].dt.tz) == "UTC"  # one instant per value; pandas holds no column of several offsets
    assert formats_of(frame)["d"] == ("datetime", "%Y-%m-%dT%H:%M:%S", "+HH:MM", "CET")
    # a value the input never held takes the offset of its own season
    assert as_text(pd.Series(pd.to_datetime(["2020-07-01T12:00:00Z", "2020-12-01T12:00:00Z"])),
                   formats_of(frame)["d"]).tolist() == ["2020-07-01T14:00:00+02:00", "2020-12-01T13:00:00+01:00"]
    # before: 2020-03-28T09:00:00+00:00, 2020-03-30T08:00:00+00:00, 2020-10-26T08:00:00+00:00
    assert round_trip(tmp_path, schema, text) == text


def test_offsets_no_zone_explains_are_written_in_the_one_used_most(tmp_path):
    schema = one_table({"d": "datetime"})
    text = "id,d\n1,2021-06-14T07:14:00+05:30\n2,2021-06-14T07:14:00-04:00\n3,2021-06-15T08:00:00+05:30\n"
    frame = read_database(_folder(tmp_path, "t", text), schema)["t"]
    assert formats_of(frame)["d"][3] == "+05:30"
    written = round_trip(tmp_path, schema, text).splitlines()
    # the same instant, in the offset used most: 07:14 at -04:00 is 11:14 UTC, 16:44 at +05:30
    assert written[1:] == ["1,2021-06-14T07:14:00+05:30", "2,2021-06-14T16:44:00+05:30", "3,2021-06-15T08:00:00+05:30"]


def test_a_column_mixing_date_formats_is_written_in_iso(tmp_path):
    schema = one_table({"d": "datetime"})
    written = round_trip(tmp_path, schema, "id,d\n1,2020-08-29\n2,31/12/2020\n")
    assert written.splitlines()[1:] == ["1,2020-08-29", "2,2020-12-31"]


def test_a_format_that_would_lose_part_of_a_value_gives_way_to_iso():
    days = pd.Series(pd.to_datetime(["2020-08-29", "2020-12-31 10:30"], format="ISO8601"))
    assert as_text(days, ("datetime", "%d/%m/%Y", None)) is None  # the time would be lost
    assert as_text(days, ("datetime", "%d/%m/%Y %H:%M", None)).tolist() == ["29/08/2020 00:00", "31/12/2020 10:30"]
    old = pd.Series(pd.to_datetime(["1950-01-01"]))
    assert as_text(old, ("datetime", "%d/%m/%y", None)) is None  # 50 would read back as 2050


# --------------------------------------------------------------------------- numbers


def test_numbers_keep_their_decimal_point_and_plain_digits(tmp_path):
    schema = one_table({"big": "continuous", "whole": "integer", "share": "continuous", "sci": "continuous"})
    text = ("id,big,whole,share,sci\n"
            "1,1002292124111596.5,38.0,7.0,1e+20\n"
            "2,990545734378907.0,,0.25,2.5e+30\n")
    written = round_trip(tmp_path, schema, text).splitlines()
    assert written[1:] == ["1,1002292124111596.5,38.0,7.0,1e+20", "2,990545734378907.0,,0.25,2.5e+30"]


# --------------------------------------------------------------------------- defaults, release


def test_a_csv_written_the_default_way_is_written_the_same_way(tmp_path):
    schema = one_table({"ok": "boolean", "day": "datetime", "at": "datetime", "x": "continuous", "n": "integer"})
    text = ("id,ok,day,at,x,n\n"
            "1,true,2020-08-29,2020-08-29 10:33:00,7,3\n"
            "2,false,,2021-01-01 00:00:00,1.5e+20,\n")
    assert round_trip(tmp_path, schema, text) == text
    frame = read_database(tmp_path / "in", schema)["t"]
    assert not formats_of(frame)  # nothing to remember


def test_a_keep_table_is_released_as_it_was_written_and_an_avatar_table_in_its_formats(tmp_path):
    schema = load_schema({"relanon": 1, "tables": {
        "teams": {"primary_key": "id", "anonymize": {"method": "keep"},
                  "columns": {"won": "boolean", "founded": "datetime", "at": "datetime", "ratio": "continuous"}},
        "people": {"primary_key": "pid", "foreign_keys": [{"column": "team", "references": "teams"}],
                   "columns": {"smoker": "boolean", "born": "datetime", "height": "continuous"}},
    }})
    teams = ("id,won,founded,at,ratio\n"
             "1,Y,29/08/1920,2013-01-01T11:00:00Z,7.0\n"
             "2,N,13/02/1901,2013-02-01T12:30:00Z,0.5\n"
             "3,,01/12/1950,,2.0\n")
    rng = np.random.default_rng(0)
    people = "pid,team,smoker,born,height\n" + "".join(
        f"{i},{1 + i % 3},{'yes' if rng.random() < 0.3 else 'no'},"
        f"{rng.integers(1, 29):02d}.{rng.integers(1, 13):02d}.{rng.integers(1940, 2000)},{rng.integers(150, 200)}.0\n"
        for i in range(60)
    )
    write_csv(tmp_path / "in", "teams", teams)
    write_csv(tmp_path / "in", "people", people)
    result = anonymize(schema, read_database(tmp_path / "in", schema), random_state=3, progress=False)
    out = write_release(result, tmp_path / "out")
    assert (out / "teams.csv").read_text(encoding="utf-8") == teams
    released = pd.read_csv(out / "people.csv", dtype=str)
    assert set(released["smoker"]) <= {"yes", "no"}
    assert released["born"].str.fullmatch(r"\d\d\.\d\d\.\d{4}").all()
    assert released["height"].str.fullmatch(r"\d+\.\d+").all()
    again = read_database(out, schema)  # the release reads back through its schema
    pd.testing.assert_frame_equal(again["teams"], result.tables["teams"], check_dtype=False)


@pytest.mark.parametrize("fmt", ["parquet", "sqlite"])
def test_other_stores_keep_their_native_types(tmp_path, fmt):
    schema = one_table({"yn": "boolean", "fr": "datetime"})
    write_csv(tmp_path / "in", "t", "id,yn,fr\n1,Y,29/08/2020\n2,N,02/02/2021\n")
    database = read_database(tmp_path / "in", schema)
    out = write_database(database, tmp_path / ("out" if fmt == "parquet" else "out.sqlite"), schema, format=fmt)
    back = read_database(out, schema)["t"]
    assert back["yn"].tolist() == [True, False]
    assert back["fr"].dt.strftime("%Y-%m-%d").tolist() == ["2020-08-29", "2021-02-02"]


def _folder(tmp_path, name, text):
    write_csv(tmp_path / "in", name, text)
    return tmp_path / "in"


def test_an_avatar_release_writes_each_date_in_the_offset_of_its_season(tmp_path):
    schema = one_table({"seen": "datetime", "x": "continuous"})
    rng = np.random.default_rng(0)
    instants = pd.Timestamp("2020-01-01", tz="UTC") + pd.to_timedelta(rng.integers(0, 365 * 24, 60), unit="h")
    local = instants.tz_convert("Europe/Paris")
    texts = [t.isoformat() for t in local]  # +01:00 in winter, +02:00 in summer
    write_csv(tmp_path / "in", "t", "id,seen,x\n" + "".join(
        f"{i},{t},{v:.1f}\n" for i, (t, v) in enumerate(zip(texts, rng.normal(size=60), strict=True))))
    result = anonymize(schema, read_database(tmp_path / "in", schema), random_state=0, progress=False)
    out = write_release(result, tmp_path / "out")
    written = pd.read_csv(out / "t.csv", dtype=str)["seen"]
    assert written.str.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\+0[12]:00").all()
    # each released instant, unchanged, in the offset its own date had in that zone
    instants = result.tables["t"]["seen"]
    expected = [t.isoformat() for t in instants.dt.tz_convert("Europe/Paris").dt.floor("s")]
    assert written.tolist() == expected

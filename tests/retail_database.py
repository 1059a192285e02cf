"""A retail database of 11 tables built for the tests (music store, after the shape of Chinook).

It holds what a real database holds and a first proposal gets wrong: lookup lists with a label only
(genres, media types, playlists), a constant column (every invoice line's ``Quantity`` is 1), a staff
reference named after a role (``Customer.SupportRepId`` -> ``Employee.EmployeeId``), a self-reference of
3 levels (``Employee.ReportsTo``), an association table whose key is the pair of its foreign keys
(``PlaylistTrack``), and dates stored as text with a time (``2007-01-01 00:00:00``).

:func:`retail_tables` makes the tables; :func:`write_retail_sqlite` writes them in a SQLite file that
declares every key (the database a user has), :func:`write_retail_csv` in CSV files without any key;
:func:`proposed` reads one of them back as ``relanon init`` proposes it.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import numpy as np
import pandas as pd

from relanon.schema.model import load_schema
from relanon.schema.proposal import propose_schema
from relanon.stores.io import declared_keys, read_tables

GENRES = ["Rock", "Jazz", "Metal", "Alternative", "Blues", "Latin", "Reggae", "Pop", "Soundtrack", "Classical"]
MEDIA_TYPES = ["MPEG audio file", "Protected AAC audio file", "Protected MPEG-4 video file",
               "Purchased AAC audio file", "AAC audio file"]
PLAYLISTS = ["Music", "Movies", "TV Shows", "Audiobooks", "90's Music", "Grunge", "Classical", "Brazilian Music"]
FIRST = ["Andrew", "Nancy", "Jane", "Margaret", "Steve", "Michael", "Robert", "Laura", "Luis", "Leonie", "Francois",
         "Bjorn", "Frantisek", "Helena", "Astrid", "Daan", "Kara", "Eduardo", "Alexandre", "Roberto", "Jennifer"]
LAST = ["Adams", "Edwards", "Peacock", "Park", "Johnson", "Mitchell", "King", "Callahan", "Goncalves", "Kohler",
        "Tremblay", "Hansen", "Wichterlova", "Holy", "Gruber", "Peeters", "Nielsen", "Martins", "Rocha", "Almeida"]
CITIES = {"Canada": ["Calgary", "Edmonton", "Lethbridge"], "USA": ["Boston", "Chicago", "Seattle", "Austin"],
          "Brazil": ["Sao Paulo", "Rio de Janeiro"], "Germany": ["Berlin", "Stuttgart"], "France": ["Paris", "Lyon"]}
DATE_TEXT = "%Y-%m-%d %H:%M:%S"

DDL = """
CREATE TABLE Genre (GenreId INTEGER PRIMARY KEY, Name TEXT);
CREATE TABLE MediaType (MediaTypeId INTEGER PRIMARY KEY, Name TEXT);
CREATE TABLE Playlist (PlaylistId INTEGER PRIMARY KEY, Name TEXT);
CREATE TABLE Artist (ArtistId INTEGER PRIMARY KEY, Name TEXT);
CREATE TABLE Album (AlbumId INTEGER PRIMARY KEY, Title TEXT, ArtistId INTEGER NOT NULL REFERENCES Artist (ArtistId));
CREATE TABLE Track (TrackId INTEGER PRIMARY KEY, Name TEXT, AlbumId INTEGER REFERENCES Album (AlbumId),
    MediaTypeId INTEGER NOT NULL REFERENCES MediaType (MediaTypeId), GenreId INTEGER REFERENCES Genre (GenreId),
    Milliseconds INTEGER, Bytes INTEGER, UnitPrice NUMERIC);
CREATE TABLE Employee (EmployeeId INTEGER PRIMARY KEY, LastName TEXT, FirstName TEXT, Title TEXT,
    ReportsTo INTEGER REFERENCES Employee (EmployeeId), BirthDate DATETIME, HireDate DATETIME, City TEXT);
CREATE TABLE Customer (CustomerId INTEGER PRIMARY KEY, FirstName TEXT, LastName TEXT, City TEXT, Country TEXT,
    Email TEXT, SupportRepId INTEGER REFERENCES Employee (EmployeeId));
CREATE TABLE Invoice (InvoiceId INTEGER PRIMARY KEY, CustomerId INTEGER NOT NULL REFERENCES Customer (CustomerId),
    InvoiceDate DATETIME, BillingCountry TEXT, Total NUMERIC);
CREATE TABLE InvoiceLine (InvoiceLineId INTEGER PRIMARY KEY,
    InvoiceId INTEGER NOT NULL REFERENCES Invoice (InvoiceId), TrackId INTEGER NOT NULL REFERENCES Track (TrackId),
    UnitPrice NUMERIC, Quantity INTEGER);
CREATE TABLE PlaylistTrack (PlaylistId INTEGER NOT NULL REFERENCES Playlist (PlaylistId),
    TrackId INTEGER NOT NULL REFERENCES Track (TrackId), PRIMARY KEY (PlaylistId, TrackId));
"""


def _dates(rng, start: str, days: int, n: int) -> list[str]:
    """Dates at midnight, written with their time, as SQLite databases often hold them."""
    base = pd.Timestamp(start)
    return [(base + pd.Timedelta(days=int(d))).strftime(DATE_TEXT) for d in rng.integers(0, days, n)]


def retail_tables(seed: int = 0, tracks: int = 400, customers: int = 120, invoices: int = 400) -> dict[str, pd.DataFrame]:
    """The 11 tables, parents first, in the order of :data:`DDL`."""
    rng = np.random.default_rng(seed)
    genre = pd.DataFrame({"GenreId": np.arange(1, len(GENRES) + 1), "Name": GENRES})
    media = pd.DataFrame({"MediaTypeId": np.arange(1, len(MEDIA_TYPES) + 1), "Name": MEDIA_TYPES})
    playlist = pd.DataFrame({"PlaylistId": np.arange(1, len(PLAYLISTS) + 1), "Name": PLAYLISTS})
    n_artists = 30
    artist = pd.DataFrame({"ArtistId": np.arange(1, n_artists + 1),
                           "Name": [f"The {w} {v}" for w, v in zip(rng.permutation(["Black", "Blue", "Red", "Iron", "Stone", "Velvet"] * 5),
                                                                      [f"Band {i}" for i in range(n_artists)], strict=True)]})
    n_albums = 60
    album = pd.DataFrame({"AlbumId": np.arange(1, n_albums + 1), "Title": [f"Album {i}" for i in range(1, n_albums + 1)],
                          "ArtistId": rng.integers(1, n_artists + 1, n_albums)})
    seconds = rng.gamma(4.0, 60.0, tracks)
    track = pd.DataFrame({
        "TrackId": np.arange(1, tracks + 1), "Name": [f"Track {i}" for i in range(1, tracks + 1)],
        "AlbumId": rng.integers(1, n_albums + 1, tracks),
        "MediaTypeId": rng.choice(np.arange(1, len(MEDIA_TYPES) + 1), tracks, p=[0.6, 0.2, 0.1, 0.05, 0.05]),
        "GenreId": rng.choice(np.arange(1, len(GENRES) + 1), tracks),
        "Milliseconds": (seconds * 1000).astype("int64"), "Bytes": (seconds * 32_000).astype("int64"),
        "UnitPrice": np.where(rng.random(tracks) < 0.9, 0.99, 1.99)})
    # three levels: a general manager, 3 managers under them, 4 agents under each manager
    reports_to = [None, 1, 1, 1] + [2 + i // 4 for i in range(12)]
    n_staff = len(reports_to)
    titles = ["General Manager"] + ["Sales Manager"] * 3 + ["Sales Support Agent"] * 12
    employee = pd.DataFrame({
        "EmployeeId": np.arange(1, n_staff + 1), "LastName": rng.choice(LAST, n_staff),
        "FirstName": rng.choice(FIRST, n_staff), "Title": titles,
        "ReportsTo": pd.array(reports_to, dtype="Int64"),
        "BirthDate": _dates(rng, "1950-01-01", 12_000, n_staff), "HireDate": _dates(rng, "2002-01-01", 1_500, n_staff),
        "City": rng.choice(CITIES["Canada"], n_staff)})
    countries = rng.choice(list(CITIES), customers, p=[0.2, 0.4, 0.15, 0.15, 0.1])
    first, last = rng.choice(FIRST, customers), rng.choice(LAST, customers)
    customer = pd.DataFrame({
        "CustomerId": np.arange(1, customers + 1), "FirstName": first, "LastName": last,
        "City": [rng.choice(CITIES[c]) for c in countries], "Country": countries,
        "Email": [f"{f.lower()}.{n.lower()}{i}@example.com" for i, (f, n) in enumerate(zip(first, last, strict=True))],
        "SupportRepId": rng.integers(5, n_staff + 1, customers)})
    buyer = rng.integers(1, customers + 1, invoices)
    invoice = pd.DataFrame({
        "InvoiceId": np.arange(1, invoices + 1), "CustomerId": buyer,
        "InvoiceDate": _dates(rng, "2007-01-01", 1_800, invoices),
        "BillingCountry": customer["Country"].to_numpy()[buyer - 1]})
    lines_per_invoice = rng.integers(1, 6, invoices)
    n_lines = int(lines_per_invoice.sum())
    line = pd.DataFrame({
        "InvoiceLineId": np.arange(1, n_lines + 1), "InvoiceId": np.repeat(invoice["InvoiceId"], lines_per_invoice).to_numpy(),
        "TrackId": rng.integers(1, tracks + 1, n_lines)})
    line["UnitPrice"] = track["UnitPrice"].to_numpy()[line["TrackId"] - 1]
    line["Quantity"] = 1
    invoice["Total"] = line.groupby("InvoiceId")["UnitPrice"].sum().round(2).to_numpy()
    pairs = pd.DataFrame({"PlaylistId": rng.choice(np.arange(1, len(PLAYLISTS) + 1), 3 * tracks,
                                                   p=[0.4, 0.05, 0.05, 0.02, 0.18, 0.1, 0.1, 0.1]),
                          "TrackId": rng.integers(1, tracks + 1, 3 * tracks)})
    playlist_track = pairs.drop_duplicates().reset_index(drop=True)
    return {"Genre": genre, "MediaType": media, "Playlist": playlist, "Artist": artist, "Album": album, "Track": track,
            "Employee": employee, "Customer": customer, "Invoice": invoice, "InvoiceLine": line,
            "PlaylistTrack": playlist_track}


def write_retail_sqlite(path: Path, tables: dict[str, pd.DataFrame] | None = None) -> Path:
    """The tables in a SQLite file declaring every primary and foreign key (dates as text with a time)."""
    tables = retail_tables() if tables is None else tables
    with sqlite3.connect(path) as connection:
        connection.executescript(DDL)
        for name, frame in tables.items():
            marks = ", ".join("?" for _ in frame.columns)
            rows = frame.astype(object).where(frame.notna(), None).itertuples(index=False, name=None)
            connection.executemany(f'INSERT INTO "{name}" VALUES ({marks})',
                                   [tuple(v.item() if hasattr(v, "item") else v for v in row) for row in rows])
    connection.close()
    return path


def write_retail_csv(folder: Path, tables: dict[str, pd.DataFrame] | None = None) -> Path:
    """The tables as CSV files, one per table, without any declared key."""
    tables = retail_tables() if tables is None else tables
    folder.mkdir(parents=True, exist_ok=True)
    for name, frame in tables.items():
        frame.to_csv(folder / f"{name}.csv", index=False)
    return folder


def proposed(location):
    """``relanon init``'s proposal for the database at ``location``, and the schema file it writes, read back
    without any edit."""
    proposal = propose_schema(read_tables(location), name="retail", declared=declared_keys(location))
    return proposal, load_schema(proposal.to_yaml())

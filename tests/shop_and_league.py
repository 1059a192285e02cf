"""A database built for the rules across tables: a shop (staff, customers, invoices, lines) and a league
(players, seasons)."""

from __future__ import annotations

import numpy as np
import pandas as pd


def shop_and_league(seed: int = 0) -> dict[str, pd.DataFrame]:
    """8 staff, 60 customers with invoices (lines and totals, the customer's country copied) and 60 players with
    seasons inside their careers; a category held by 1 to 3 people, dates."""
    rng = np.random.default_rng(seed)
    day = pd.Timestamp("1960-01-01")
    staff = pd.DataFrame({
        "staff_id": range(1, 9),
        "birth_date": [day + pd.Timedelta(days=int(d)) for d in rng.integers(0, 12_000, 8)],
        "role": ["clerk", "clerk", "clerk", "manager", "manager", "buyer", "clerk", "director"],
    })
    countries = ["France", "Germany", "Italy", "Spain", "Belgium", "Portugal"]
    customers = pd.DataFrame({
        "customer_id": range(100, 160),
        "country": rng.choice(countries, 60, p=[0.3, 0.25, 0.15, 0.15, 0.1, 0.05]),
        "birth_date": [day + pd.Timedelta(days=int(d)) for d in rng.integers(0, 15_000, 60)],
        "segment": rng.choice(["retail", "pro", "vip"], 60, p=[0.6, 0.35, 0.05]),
    })
    n_invoices = 240
    owner = rng.integers(0, 60, n_invoices)
    invoices = pd.DataFrame({
        "invoice_id": range(1000, 1000 + n_invoices),
        "customer_id": customers["customer_id"].to_numpy()[owner],
        "staff_id": rng.integers(1, 9, n_invoices),
        "billing_country": customers["country"].to_numpy()[owner],
        "invoice_date": [pd.Timestamp("2020-01-01") + pd.Timedelta(days=int(d)) for d in rng.integers(0, 1000, n_invoices)],
    })
    per_invoice = rng.integers(1, 6, n_invoices)
    lines = pd.DataFrame({
        "line_id": range(1, per_invoice.sum() + 1),
        "invoice_id": np.repeat(invoices["invoice_id"].to_numpy(), per_invoice),
        "amount": np.round(rng.gamma(2.0, 20.0, per_invoice.sum()), 2),
        "quantity": rng.integers(1, 10, per_invoice.sum()),
    })
    totals = lines.groupby("invoice_id")["amount"].sum()
    invoices["total"] = totals.reindex(invoices["invoice_id"]).to_numpy()
    invoices["n_lines"] = per_invoice
    start = rng.integers(1990, 2015, 60)
    players = pd.DataFrame({"player_id": range(500, 560), "debut_year": start,
                            "last_year": start + rng.integers(2, 12, 60),
                            "position": rng.choice(["goal", "defence", "midfield", "attack"], 60)})
    seasons = []
    for player, first, last in players[["player_id", "debut_year", "last_year"]].itertuples(index=False):
        for year in range(first, last + 1):
            seasons.append((player, year, int(rng.integers(0, 38))))
    seasons = pd.DataFrame(seasons, columns=["player_id", "season_year", "games"])
    seasons.insert(0, "season_id", range(1, len(seasons) + 1))
    return {"staff": staff, "customers": customers, "invoices": invoices, "lines": lines, "players": players,
            "seasons": seasons}

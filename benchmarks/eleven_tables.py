"""A retail database of 11 tables, released at ``relanon init``'s defaults: how wide is the verdict?

Writes the database as CSV files in ``FOLDER/data``, proposes its schema (``FOLDER/schema.yaml``, no edit),
anonymizes it with the command line (``FOLDER/released``, report in ``FOLDER/released-report``) and prints the
widest line of the terminal verdict, with the rules across tables ``init`` declared. The report's width is
checked in a browser:

    python benchmarks/eleven_tables.py /tmp/eleven
    chromium --headless --screenshot=/tmp/eleven/report.png --window-size=1400,3000 \\
        /tmp/eleven/released-report/report.html
"""

from __future__ import annotations

import argparse
import contextlib
import io
import sys
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from relanon.cli import main as relanon  # noqa: E402

SEED = 11


def retail(seed: int = SEED) -> dict[str, pd.DataFrame]:
    """11 tables: regions, stores, staff (8 people), customers, suppliers, categories, products, invoices with
    lines (totals and counts), payments, returns."""
    rng = np.random.default_rng(seed)

    def dates(start, days, n):
        return [pd.Timestamp(start) + pd.Timedelta(days=int(d)) for d in rng.integers(0, days, n)]

    regions = pd.DataFrame({"region_id": range(1, 6), "region_name": ["North", "South", "East", "West", "Centre"],
                            "population": rng.integers(100_000, 900_000, 5)})
    stores = pd.DataFrame({"store_id": range(1, 21), "region_id": rng.integers(1, 6, 20),
                           "surface_m2": rng.integers(200, 3000, 20), "opened": dates("1990-01-01", 10_000, 20)})
    staff = pd.DataFrame({"staff_id": range(1, 9), "store_id": rng.integers(1, 21, 8),
                          "birth_date": dates("1960-01-01", 12_000, 8), "hire_date": dates("2005-01-01", 5000, 8),
                          "role": ["clerk"] * 4 + ["manager"] * 2 + ["buyer", "director"]})
    countries = ["France", "Germany", "Italy", "Spain", "Belgium"]
    customers = pd.DataFrame({"customer_id": range(1, 301), "country": rng.choice(countries, 300),
                              "birth_date": dates("1940-01-01", 25_000, 300),
                              "segment": rng.choice(["retail", "pro", "vip"], 300, p=[0.6, 0.35, 0.05])})
    suppliers = pd.DataFrame({"supplier_id": range(1, 31), "country": rng.choice(countries, 30),
                              "rating": rng.integers(1, 6, 30)})
    categories = pd.DataFrame({"category_id": range(1, 13), "vat_rate": rng.choice([5.5, 10.0, 20.0], 12)})
    products = pd.DataFrame({"product_id": range(1, 201), "category_id": rng.integers(1, 13, 200),
                             "supplier_id": rng.integers(1, 31, 200),
                             "price": np.round(rng.gamma(2.0, 15.0, 200), 2)})
    n = 1500
    owner = rng.integers(0, 300, n)
    invoices = pd.DataFrame({"invoice_id": range(1, n + 1), "customer_id": customers["customer_id"].to_numpy()[owner],
                             "store_id": rng.integers(1, 21, n), "staff_id": rng.integers(1, 9, n),
                             "billing_country": customers["country"].to_numpy()[owner],
                             "invoice_date": dates("2021-01-01", 1000, n)})
    per = rng.integers(1, 5, n)
    lines = pd.DataFrame({"line_id": range(1, per.sum() + 1), "invoice_id": np.repeat(invoices["invoice_id"], per),
                          "product_id": rng.integers(1, 201, per.sum()),
                          "amount": np.round(rng.gamma(2.0, 20.0, per.sum()), 2)})
    invoices["total"] = lines.groupby("invoice_id")["amount"].sum().reindex(invoices["invoice_id"]).to_numpy()
    invoices["n_lines"] = per
    payments = pd.DataFrame({"payment_id": range(1, n + 1), "invoice_id": invoices["invoice_id"],
                             "method": rng.choice(["card", "cash", "transfer"], n), "paid": invoices["total"]})
    returned = rng.choice(lines["line_id"], 200, replace=False)
    returns = pd.DataFrame({"return_id": range(1, 201), "line_id": returned,
                            "reason": rng.choice(["broken", "late", "wrong"], 200)})
    return {"regions": regions, "stores": stores, "staff": staff, "customers": customers, "suppliers": suppliers,
            "categories": categories, "products": products, "invoices": invoices, "lines": lines,
            "payments": payments, "returns": returns}


def run(folder: Path) -> None:
    data = folder / "data"
    data.mkdir(parents=True, exist_ok=True)
    for name, frame in retail().items():
        frame.to_csv(data / f"{name}.csv", index=False)
    schema = folder / "schema.yaml"
    relanon(["init", "--data", str(data), "--out", str(schema), "--overwrite"])
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = relanon(["anonymize", str(schema), "--data", str(data), "--out", str(folder / "released"),
                        "--seed", "1", "-q", "--overwrite"])
    text = out.getvalue()
    print(text)
    verdict = text[text.find("privacy ("):]
    print(f"exit code {code}; widest verdict line: {max(len(line) for line in verdict.splitlines())} characters")
    print("rules declared:", [line.strip() for line in schema.read_text().splitlines() if "{rule:" in line])


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("folder", type=Path)
    run(parser.parse_args().folder)

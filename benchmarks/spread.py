"""The spread of a release, column by column: standard deviation ratio, tails, Hellinger, each with its noise floor.

Reads the folder ``relanon demo --out FOLDER`` writes (``schema.yaml``, ``original/``, ``anonymized/`` and
``report/metrics.json``) and prints, per table and number or date column, the released / original standard
deviation ratio and how far the 1 % and 99 % quantiles moved (in original standard deviations), with what two
halves of the original give (the noise floor; :mod:`relanon.metrics.columns`); then the hidden rates of the
run (from its metrics.json: they need the run's private pairing).

    python -m relanon demo --out /tmp/demo && python benchmarks/spread.py /tmp/demo
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from relanon.metrics.signal import signal  # noqa: E402
from relanon.schema.model import load_schema  # noqa: E402
from relanon.stores.io import read_database  # noqa: E402


def main(folder: Path) -> None:
    schema = load_schema(folder / "schema.yaml")
    original = read_database(folder / "original", schema)
    released = read_database(folder / "anonymized", schema)
    print(f"{'table.column':<32}{'std ratio':>10}{'(halves)':>10}{'tail shift':>11}{'(floor)':>9}"
          f"{'hellinger':>10}{'(floor)':>9}")
    for table in schema:
        types = {c.name: c.type for c in table.released_columns}
        metrics = {m.name: m for m in signal(original[table.name], released[table.name], types)}
        gaps, shifts = metrics.get("std_ratio_gap"), metrics.get("tail_quantile_shift")
        hellinger = metrics["hellinger_column"].breakdown.get("per_column", {})
        for column in (gaps.breakdown["per_column"] if gaps else {}):
            gap, shift = gaps.breakdown["per_column"][column], shifts.breakdown["per_column"][column]
            h = hellinger.get(column, {"value": float("nan"), "floor": float("nan")})
            ratio = gaps.breakdown["std_ratio"][column]
            print(f"{table.name + '.' + column:<32}{ratio:>10.3f}{'±' + format(gap['floor'], '.3f'):>10}"
                  f"{shift['value']:>11.3f}{shift['floor']:>9.3f}{h['value']:>10.3f}{h['floor']:>9.3f}"
                  + ("" if gap["passed"] and shift["passed"] and h.get("passed", True) else "  !"))
    metrics_file = folder / "report" / "metrics.json"
    if metrics_file.exists():
        matrix = json.loads(metrics_file.read_text())["privacy_matrix"]
        print("hidden rate % (privacy matrix):")
        for row, cells in matrix.items():
            print(f"  {row:<12}" + "  ".join(f"{col} {value:.1f}" for col, value in cells.items() if value is not None))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("folder", type=Path, help="a folder written by relanon demo --out")
    main(parser.parse_args().folder)

"""The demo's attack risks pooled over many seeds, at the demo schema's settings or at others.

    python benchmarks/risk_over_seeds.py --seeds 1-18                                  # the demo schema
    python benchmarks/risk_over_seeds.py --seeds 1-18 --k patients=40,visits=20,doctors=20   # other k
    python benchmarks/risk_over_seeds.py --seeds 1-18 --k patients=40 --min-count patients=20
    python benchmarks/risk_over_seeds.py --seeds 1-18 --combination-min-count doctors=5
    python benchmarks/risk_over_seeds.py --seeds 1-6 --only patients

Each seed is one :func:`relanon.assess` run on the demo database (``relanon demo``'s data, 50 / 50 balanced
split): its own split, anonymization and attacks, as one round of ``relanon assess --rounds``. The attack
counts are pooled over the seeds and printed per attack: success on training and on control people, the
risk ``(main - control) / (1 - control)`` and 1.96 standard errors of independent binomial rates (without
the design effect of singling out, so its errors are too small). A change that lowers a risk by less than its
error has not been shown to lower it.

``--k`` sets the ``k`` of some tables instead of the demo schema's, ``--min-count`` the ``min_count`` of every
column of some tables, ``--combination-min-count`` their ``anonymize.combination_min_count``: settings of the
schema file, applied to the loaded :class:`relanon.Schema`. Figures: docs/open-questions.md.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
import warnings
from dataclasses import replace
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import relanon  # noqa: E402
from relanon.datasets import hospital  # noqa: E402


def with_settings(schema, k: str | None, min_count: str | None, combination_min_count: str | None = None):
    """The schema with the ``k`` of the tables named in ``k`` (``patients=40,visits=20``), the ``min_count``
    of every column of those named in ``min_count`` and the ``combination_min_count`` of those named in
    ``combination_min_count`` changed."""
    tables = dict(schema.tables)
    for setting, text in (("k", k), ("combination_min_count", combination_min_count)):
        for part in text.split(",") if text else []:
            name, value = part.split("=")
            tables[name] = replace(tables[name], anonymize=replace(tables[name].anonymize, **{setting: int(value)}))
    for part in min_count.split(",") if min_count else []:
        name, value = part.split("=")
        tables[name] = replace(tables[name], columns=tuple(replace(c, min_count=int(value)) for c in tables[name].columns))
    return schema.with_tables(tables)


def seeds_from(text: str) -> list[int]:
    if "-" in text:
        first, last = (int(x) for x in text.split("-"))
        return list(range(first, last + 1))
    return [int(x) for x in text.split(",")]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", default="1-18", help="seeds, as 1-18 or 1,2,3")
    parser.add_argument("--only", help="print only the attacks on views of this individual table")
    parser.add_argument("--scale", type=float, default=1.0, help="size of the demo database (1 = relanon demo's)")
    parser.add_argument("--k", help="the k of some tables, as patients=40,visits=20 (default: the demo schema's)")
    parser.add_argument("--min-count", help="the min_count of every column of some tables, as patients=20 "
                        "(default: the table's k)")
    parser.add_argument("--combination-min-count", help="the anonymize.combination_min_count of some tables, as "
                        "doctors=5 (default: 2)")
    args = parser.parse_args()
    schema, database = hospital(scale=args.scale, seed=0)
    schema = with_settings(schema, args.k, args.min_count, args.combination_min_count)
    started = time.perf_counter()
    pooled: dict[str, np.ndarray] = {}
    for seed in seeds_from(args.seeds):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            assessment = relanon.assess(schema, database, holdout=0.5, random_state=seed, progress=False)
        for attack in assessment.attacks:
            key = f"{attack.view} | {attack.attack} {attack.target}"
            pooled.setdefault(key, np.zeros(4))
            pooled[key] += [attack.main.n_success, attack.main.n_attacks, attack.control.n_success,
                            attack.control.n_attacks]
        print(f"seed {seed} done ({time.perf_counter() - started:.0f} s)", file=sys.stderr, flush=True)
    print(f"seeds {args.seeds}, demo scale {args.scale}, k {args.k or 'of the demo schema'}, "
          f"min_count {args.min_count or 'of the demo schema'}, "
          f"combination_min_count {args.combination_min_count or 'of the demo schema'}: "
          "pooled success and risk "
          "(+- 1.96 binomial standard errors)")
    for key, (main_success, main_n, control_success, control_n) in pooled.items():
        if args.only and f"({args.only}" not in key.split(" | ")[0]:
            continue
        main_rate, control_rate = main_success / main_n, control_success / control_n
        if control_rate >= 1:
            continue
        risk = (main_rate - control_rate) / (1 - control_rate)
        error = math.sqrt(main_rate * (1 - main_rate) / main_n
                          + control_rate * (1 - control_rate) / control_n) / (1 - control_rate)
        print(f"{key[:80]:<80} training {main_rate:.3f} control {control_rate:.3f} risk {risk:+.3f} +- {1.96 * error:.3f}")
    print(f"done in {time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()

"""Singling out of the demo's patients and of the long-tailed table over several seeds, with the signal it costs.

    python benchmarks/singling_out_seeds.py                         # seeds 2024, 7, 11; both tables
    python benchmarks/singling_out_seeds.py --parts long-tail --seeds 1 2 3

For each seed: the individual table is split 50 / 50 into training and control people with relanon's
holdout, the training database anonymized at default settings (the demo: the whole hospital database,
as ``relanon assess`` does), and the univariate and multivariate singling-out attacks of ``relanon
assess`` run on the table alone. Printed: each risk and the upper bound of its 95 % interval, the
Hellinger distance of each column (training people against the release), and the columns of the
predicates that single out a training person most often. One seed's risk moves by about 0.02: read
several (docs/method.md, *Small groups*). ``benchmarks/attacks_vs_anonymeter.py`` runs every
attack on every view, and anonymeter beside relanon, for one seed.
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np
from attacks_vs_anonymeter import long_tail

from relanon import datasets
from relanon.metrics.attacks.coding import code_frames
from relanon.metrics.attacks.holdout import split_database
from relanon.metrics.attacks.singling_out import DEFAULT_COLUMNS, MODES, singling_out_coded
from relanon.metrics.signal import hellinger_distances
from relanon.multitable.pipeline import anonymize
from relanon.schema.validation import check_database

PARTS = {"demo": (lambda: datasets.hospital(scale=1, seed=0), "patients"), "long-tail": (long_tail, "people")}


def measure(part: str, seed: int, predicates: int) -> tuple[dict, dict, list]:
    make, table = PARTS[part]
    schema, database = make()
    split = split_database(schema, check_database(schema, database), holdout=0.5, random_state=seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        release = anonymize(schema, split.training, random_state=seed, progress=False).tables[table]
    types = {c.name: c.type for c in schema[table].released_columns}
    training = split.training[table]
    control = split.control[table][table].iloc[split.control_rows[table]].reset_index(drop=True)
    coded = code_frames({"release": release, "training": training, "control": control}, types)
    risks, top = {}, []
    for mode in MODES:
        attack = singling_out_coded(coded, mode=mode, n_attacks=predicates, n_columns=DEFAULT_COLUMNS,
                                    random_state=np.random.default_rng([seed, 1]))
        risks[mode] = (attack.risk.value, attack.risk.high)
        top = list(attack.details["succeeding_by_columns"].items())[:3]
    return risks, hellinger_distances(training, release, types), top


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--parts", nargs="+", choices=list(PARTS), default=list(PARTS))
    parser.add_argument("--seeds", nargs="+", type=int, default=[2024, 7, 11])
    parser.add_argument("--predicates", type=int, default=2000)
    args = parser.parse_args()
    for part in args.parts:
        for seed in args.seeds:
            start = time.perf_counter()
            risks, hellinger, top = measure(part, seed, args.predicates)
            shown = ", ".join(f"{mode} {v:.3f} [{high:.3f}]" for mode, (v, high) in risks.items())
            columns = ", ".join(f"{c} {v:.3f}" for c, v in hellinger.items())
            print(f"{part} seed {seed}: singling out {shown}; Hellinger {columns}; {time.perf_counter() - start:.0f} s")
            print(f"  most successful multivariate predicates: {top}", flush=True)


if __name__ == "__main__":
    main()

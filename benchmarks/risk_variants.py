"""The demo's attack risks pooled over many seeds, for the release and for variants of it not in the release.

    python benchmarks/risk_variants.py --seeds 1-18                       # the release
    python benchmarks/risk_variants.py --seeds 1-18 --variant protect50   # a variant
    python benchmarks/risk_variants.py --seeds 1-9 --variant other_doctors --only doctors
    python benchmarks/risk_variants.py --seeds 1-18 --k patients=40,visits=20,doctors=20   # other k
    python benchmarks/risk_variants.py --seeds 1-18 --k patients=40 --min-count patients=20
    python benchmarks/risk_variants.py --seeds 1-18 --combination-min-count doctors=5

Each seed is one ``relanon.assess`` run on the demo database (``relanon demo``'s data, 50 / 50 balanced
split): its own split, anonymization and attacks, as one round of ``relanon assess --rounds``. The attack
counts are pooled over the seeds and printed per attack: success on training and on control people, the
risk ``(main - control) / (1 - control)`` and 1.96 standard errors of independent binomial rates (without
the design effect of singling out, so its errors are too small). A change to the release that lowers a risk
by less than its error has not been shown to lower it.

Variants (README, Privacy attacks: what was measured and left out of the release), each changing one rule of
the avatar decoding for the length of the run:

- ``protect50``: a record never gives its sensitive values to the 50 released rows closest to it (20 in the
  release);
- ``flat``: the donors of sensitive values drawn among their look-alikes with flat random weights, not by
  closeness;
- ``no_pull``: numbers not moved half-way to the drawn neighbour;
- ``other_patients`` / ``other_doctors``: a visit's neighbours taken among the visits of other patients /
  of other doctors (the siblings of a record are skipped);
- ``hospital_groups``: a doctor's numbers spread like the group of her hospital's categories too;
- ``pair_holders2``: a donor's sensitive values may form with the avatar's other categorical values combinations
  and pairs that 2 records hold (``min_count``, the table's ``k`` by default, in the release);
- ``scaled_pairs``: those combinations and pairs held by ``min_count`` records times the share of the sensitive
  value over the share of the most frequent one (at least 2): the same chance for every value;
- ``wide_shift``: the small-group shifts of numbers 1.5 times as wide (``SHIFT_SCALE`` 1.5);
- ``parents_in_tuples``: an avatar's tuple of categorical values (the tuple rule, ``combination_min_count``)
  counted with the categorical columns of the parents broadcast into the table (a doctor's specialty with her
  hospital's city: the pair that steers her link), not her own columns alone.

``--k`` sets the ``k`` of some tables instead of the demo schema's, ``--min-count`` the ``min_count`` of every column
of some tables, ``--combination-min-count`` their ``anonymize.combination_min_count`` (settings of the schema, not
rules; ``--combination-min-count patients=5,doctors=5`` is the rule measured as the variant ``tuple_holders5``).
"""

from __future__ import annotations

import argparse
import functools
import math
import sys
import time
import warnings
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import relanon  # noqa: E402
import relanon.engine.avatar as avatar_module  # noqa: E402
import relanon.engine.mixing as mixing_module  # noqa: E402
import relanon.engine.private_values as private_values_module  # noqa: E402
import relanon.multitable.pipeline as pipeline_module  # noqa: E402
from relanon.datasets import hospital  # noqa: E402
from relanon.engine.neighbours import Neighbours  # noqa: E402

VARIANTS = ("release", "protect50", "flat", "no_pull", "other_patients", "other_doctors", "hospital_groups",
            "pair_holders2", "scaled_pairs", "wide_shift", "parents_in_tuples")


def apply_variant(variant: str) -> None:
    """Change one rule of the avatar decoding in this process (see the module's description)."""
    if variant == "protect50":
        avatar_module.sensitive_donors = functools.partial(avatar_module.sensitive_donors, protected=50)
    elif variant == "flat":
        # the donors' weights are Exp(1) / (distance + epsilon): a huge epsilon leaves Exp(1) alone
        private_values_module.DISTANCE_EPSILON = 1e6
    elif variant == "no_pull":
        mixing_module.SPREAD = 0.0
    elif variant in ("other_patients", "other_doctors"):
        _skip_siblings(0 if variant == "other_patients" else 1)
    elif variant == "hospital_groups":
        shifts = avatar_module.small_group_shifts

        def with_parents(table, columns, chosen, rng, *args, **kwargs):
            parents = [c for c in table.columns if "::" in c and not c.endswith("::present")
                       and not c.startswith("count::") and not pd.api.types.is_numeric_dtype(table[c])]
            return shifts(table, [*columns, *(c for c in parents if c not in columns)], chosen, rng, *args, **kwargs)

        avatar_module.small_group_shifts = with_parents
    elif variant == "pair_holders2":
        donors = avatar_module.sensitive_donors

        def two_holders(*args, **kwargs):
            kwargs["combination_holders"] = min(kwargs.get("combination_holders", 1), 2)
            return donors(*args, **kwargs)

        avatar_module.sensitive_donors = two_holders
    elif variant == "scaled_pairs":
        private_values_module._held_combinations = _scaled_combinations
    elif variant == "wide_shift":
        avatar_module.small_group_shifts = functools.partial(avatar_module.small_group_shifts, scale=1.5)
    elif variant == "parents_in_tuples":
        rare = avatar_module.rare_combination_records

        def with_parents_counted(table, columns, *args, **kwargs):
            parents = [c for c in table.columns if "::" in c and not c.endswith("::present")
                       and not c.startswith("count::") and not pd.api.types.is_numeric_dtype(table[c])]
            return rare(table, [*columns, *(c for c in parents if c not in columns)], *args, **kwargs)

        avatar_module.rare_combination_records = with_parents_counted


def _scaled_combinations(table, others, shared, secret, holders: int) -> tuple:
    """``_held_combinations`` with the count asked of a combination scaled by its sensitive value's share."""
    base = secret.max(initial=0) + 1
    share = np.bincount(secret, minlength=base) / max(len(secret), 1)
    need = np.maximum(min(2, holders), np.ceil(holders * share / share.max()))
    existing, count = np.unique(shared * base + secret, return_counts=True)
    pairs = []
    for column in others:
        codes = private_values_module.value_codes(table[column])
        held, count_pair = np.unique(codes * base + secret, return_counts=True)
        pairs.append((codes, held[count_pair >= need[held % base]]))
    return base, existing[count >= need[existing % base]], pairs


def _skip_siblings(link: int) -> None:
    """A child's neighbours searched past the children of the same parent (the ``link``-th foreign key)."""
    state = {}
    avatarize, search = pipeline_module.avatarize_in_run, avatar_module.pattern_neighbours

    def remembering(*args, **kwargs):
        groups = args[2].groups  # the run's hooks
        groups = None if groups is None else np.asarray(groups).reshape(len(args[0]), -1)
        state["parent"] = None if groups is None or groups.shape[1] <= link else groups[:, link]
        try:
            return avatarize(*args, **kwargs)
        finally:
            state["parent"] = None

    def past_siblings(coords, pattern, k):
        parent = state.get("parent")
        if parent is None:
            return search(coords, pattern, k)
        largest = int(np.bincount(parent[parent >= 0]).max()) if (parent >= 0).any() else 0
        wide = search(coords, pattern, min(len(coords) - 1, k + largest))
        sibling = parent[wide.indices] == parent[:, None]
        order = np.argsort(sibling, axis=1, kind="stable")[:, :k]
        rows = np.arange(len(coords))[:, None]
        return Neighbours(wide.distances[rows, order], wide.indices[rows, order])

    pipeline_module.avatarize_in_run = remembering
    avatar_module.pattern_neighbours = past_siblings


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
    parser.add_argument("--variant", choices=VARIANTS, default="release")
    parser.add_argument("--only", help="print only the attacks on views of this individual table")
    parser.add_argument("--scale", type=float, default=1.0, help="size of the demo database (1 = relanon demo's)")
    parser.add_argument("--k", help="the k of some tables, as patients=40,visits=20 (default: the demo schema's)")
    parser.add_argument("--min-count", help="the min_count of every column of some tables, as patients=20 "
                        "(default: the table's k)")
    parser.add_argument("--combination-min-count", help="the anonymize.combination_min_count of some tables, as "
                        "doctors=5 (default: 2)")
    args = parser.parse_args()
    apply_variant(args.variant)
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
    print(f"variant {args.variant}, seeds {args.seeds}, demo scale {args.scale}, k {args.k or 'of the demo schema'}, "
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

"""Where the demo patients' remaining inference risks come from: what the attacker's released row is to her.

    python benchmarks/leak_diagnosis.py --seeds 1-4
    python benchmarks/leak_diagnosis.py --seeds 1-8 --variant scaled_pairs       # a variant of risk_variants.py
    python benchmarks/leak_diagnosis.py --seeds 1-8 --k patients=40 --min-count patients=20

For each seed: the split and anonymization of ``relanon assess --seed`` (one round), then the inference
attacks on the patients, alone (``smoker``) and with their visits' aggregates (``smoker`` and the most
frequent visit reason). For every training patient, the released row the attacker reads (the closest to
everything else she knows) is traced back through the run's private pairing, kept in memory:

- is it her own avatar? did it take its categories from her (its drawn neighbour ``J`` is she)? did she
  give it its sensitive values (its donor is she)?
- with the visits: were the visits linked to it made from her visits, did they take their categories from hers
  (their drawn neighbour is one of her visits), or did her visits give their reasons?

and the attacker's success in each case, beside her success on training and on control people overall; how
far the row read is from training and from control people, the success by fifths of that distance, and the
columns that bring training people closest; and how many training and control people find their sex, zip code
and blood type together in the release.
"""

from __future__ import annotations

import argparse
import sys
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import relanon.engine.avatar as avatar_module  # noqa: E402
from benchmarks.risk_variants import VARIANTS, apply_variant, seeds_from, with_settings  # noqa: E402
from relanon.datasets import hospital  # noqa: E402
from relanon.metrics.attacks.assessment import _released_columns, _stream  # noqa: E402
from relanon.metrics.attacks.coding import code_frames, nearest  # noqa: E402
from relanon.metrics.attacks.holdout import split_database  # noqa: E402
from relanon.metrics.attacks.inference import DEFAULT_TOLERANCE, right_guesses  # noqa: E402
from relanon.multitable.pipeline import anonymize  # noqa: E402
from relanon.multitable.views import views  # noqa: E402
from relanon.schema.validation import check_database  # noqa: E402

CAUGHT: dict = {}


def _catch_donors() -> None:
    """Keep, per table size, the donors and drawn neighbours of each avatarization (private, in memory)."""
    donors_of = avatar_module.sensitive_donors

    def caught(table, avatars, space, chosen, *args, **kwargs):
        found = donors_of(table, avatars, space, chosen, *args, **kwargs)
        CAUGHT[len(table)] = (found.donors, np.asarray(chosen))
        return found

    avatar_module.sensitive_donors = caught


def attacked_rows(training, control, release, types, secret: str):
    """The released row the attacker reads for each training and control person, and whether she is right."""
    coded = code_frames({"release": release, "training": training, "control": control}, types)
    column = int(coded.index([secret])[0])
    known = np.setdiff1d(np.arange(len(coded.columns)), [column])
    rng = np.random.default_rng(0)
    read = {group: nearest(coded[group], coded["release"], coded, [known], random_state=rng)[0][:, 0]
            for group in ("training", "control")}
    right = {group: right_guesses(coded, column, coded["release"][read[group], column], coded[group][:, column],
                                  DEFAULT_TOLERANCE) for group in read}
    apart = {group: {coded.columns[j]: _paired_distance(coded, coded[group][:, j], coded["release"][read[group], j], j)
                     for j in known} for group in read}
    return read["training"], right, apart


def _paired_distance(coded, a: np.ndarray, b: np.ndarray, j: int) -> np.ndarray:
    """The attacker's distance on column ``j`` between ``a[i]`` and ``b[i]`` (relanon.metrics.attacks.coding)."""
    missing = np.isnan(a) | np.isnan(b)
    if coded.numeric[j]:
        distance = np.abs(np.where(missing, 0.0, a - b)) / coded.spans[j]
    else:
        distance = (np.where(missing, 0.0, a) != np.where(missing, 0.0, b)).astype(np.float64)
    return np.where(missing, (np.isnan(a) ^ np.isnan(b)).astype(np.float64), distance)


def _by_distance(found: dict) -> list[str]:
    """How far the row read is from training and control people, and the attacker's success by fifths of that
    distance: a leak by closeness (training people nearer, equally right at equal distance) or by values."""
    total = {g: sum(found[g]["apart"].values()) for g in ("training", "control")}
    edges = np.quantile(np.concatenate(list(total.values())), np.linspace(0, 1, 6))
    fifths = {g: np.clip(np.searchsorted(edges, total[g], side="right") - 1, 0, 4) for g in total}
    lines = [f"  the attacker's distance to the row read: median {np.median(total['training']):.3f} for training "
             f"people, {np.median(total['control']):.3f} for control"]
    for fifth in range(5):
        parts = [f"{g} {np.mean(fifths[g] == fifth):.2f} of people, right {found[g]['right'][fifths[g] == fifth].mean():.3f}"
                 for g in total]
        lines.append(f"    fifth {fifth + 1} of the distances ({edges[fifth]:.2f}-{edges[fifth + 1]:.2f}): " + "; ".join(parts))
    gaps = {c: found["control"]["apart"][c].mean() - found["training"]["apart"][c].mean() for c in found["training"]["apart"]}
    largest = sorted(gaps, key=gaps.get, reverse=True)[:3]
    lines.append("    columns that bring training people closest (mean distance, training / control): " + ", ".join(
        f"{c} {found['training']['apart'][c].mean():.3f} / {found['control']['apart'][c].mean():.3f}" for c in largest))
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", default="1-4")
    parser.add_argument("--variant", choices=VARIANTS, default="release", help="as in risk_variants.py")
    parser.add_argument("--k", help="the k of some tables, as patients=40,visits=20")
    parser.add_argument("--min-count", help="the min_count of every column of some tables, as patients=20")
    args = parser.parse_args()
    apply_variant(args.variant)
    _catch_donors()
    schema, database = hospital(scale=1.0, seed=0)
    schema = with_settings(schema, args.k, args.min_count)
    database = check_database(schema, database)
    totals: dict[str, np.ndarray] = {}
    coverage: dict[str, list] = {}
    closeness: dict[str, dict] = {}
    for seed in seeds_from(args.seeds):
        split = split_database(schema, database, holdout=0.5, random_state=_stream(seed, "holdout"))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            result = anonymize(schema, split.training, random_state=seed, progress=False)
        columns = _released_columns(schema, result.tables)
        patients, visits = split.training["patients"], split.training["visits"]
        released = result.releases["patients"]
        donors, drawn = CAUGHT[len(patients)]
        visit_donors, visit_drawn = CAUGHT[len(visits)]
        visit_rows = result.releases["visits"].original_position
        made_from = visits["patient_id"].to_numpy()[visit_rows]
        reason_from = visits["patient_id"].to_numpy()[visit_donors[visit_rows]]
        drawn_from = visits["patient_id"].to_numpy()[visit_drawn[visit_rows]]
        linked_to = result.tables["visits"]["patient_id"].to_numpy()
        released_keys = result.tables["patients"]["patient_id"].to_numpy()
        own_keys = patients["patient_id"].to_numpy()
        # the patients' views (alone, with their visits' aggregates) of each database, built once per seed
        trained_views, held_views, release_views = (views(schema, tables, "patients", columns) for tables in
                                                    (split.training, split.control["patients"], result.tables))
        for position, secret in ((0, "smoker"), (1, "smoker"), (1, "visits.mode(reason)")):
            trained, held, release = trained_views[position], held_views[position], release_views[position]
            control = held.frame.iloc[split.control_rows["patients"]].reset_index(drop=True)
            read, right, apart = attacked_rows(trained.frame, control, release.frame, trained.types, secret)
            person = np.arange(len(read))
            source = released.original_position[read]
            cases = {"own avatar": source == person, "took her categories": drawn[source] == person,
                     "her sensitive values": donors[source] == person}
            if position == 1:
                children = [np.flatnonzero(linked_to == released_keys[r]) for r in read]
                cases["visits made from hers"] = np.array([bool(np.any(made_from[c] == own_keys[i]))
                                                           for i, c in enumerate(children)])
                cases["visits whose drawn neighbour is hers"] = np.array(
                    [bool(np.any(drawn_from[c] == own_keys[i])) for i, c in enumerate(children)])
                cases["reasons given by hers"] = np.array([bool(np.any(reason_from[c] == own_keys[i]))
                                                           for i, c in enumerate(children)])
            key = f"{trained.name}, {secret}"
            counts = [right["training"].sum(), right["control"].sum(), len(read)]
            for mask in cases.values():
                counts += [mask.sum(), right["training"][mask].sum()]
            totals.setdefault(key, (list(cases), np.zeros(len(counts))))[1][:] += counts
            for group in right:
                kept = closeness.setdefault(key, {}).setdefault(group, {"right": [], "apart": {}})
                kept["right"].append(right[group])
                for column, values in apart[group].items():
                    kept["apart"].setdefault(column, []).append(values)
        tuples = (["sex", "zip_code", "blood_type"])
        in_release = set(map(tuple, result.tables["patients"][tuples].astype(str).to_numpy()))
        strangers = split.control["patients"]["patients"].iloc[split.control_rows["patients"]]
        for label, frame in (("training", patients), ("control", strangers)):
            found = [tuple(t) in in_release for t in frame[tuples].astype(str).to_numpy()]
            coverage.setdefault(label, []).append(float(np.mean(found)))
        print(f"seed {seed} done", file=sys.stderr, flush=True)
    print(f"variant {args.variant}, k {args.k or 'of the demo schema'}, min_count {args.min_count or 'of the demo schema'}")
    print(f"people whose sex, zip code and blood type are found together in the release: training "
          f"{np.mean(coverage['training']):.3f}, control {np.mean(coverage['control']):.3f}")
    for key, (names, counts) in totals.items():
        main_rate = counts[0] / counts[2]
        control_rate = counts[1] / sum(len(r) for r in closeness[key]["control"]["right"])
        print(f"{key}: right for {main_rate:.3f} of training people, {control_rate:.3f} of control (risk "
              f"{(main_rate - control_rate) / (1 - control_rate):.3f}, every person attacked)")
        for j, name in enumerate(names):
            held, right = counts[3 + 2 * j], counts[4 + 2 * j]
            print(f"  the row read is {name}: {held / counts[2]:.4f} of training people; right there "
                  f"{right / held if held else float('nan'):.3f}")
        found = {g: {"right": np.concatenate(kept["right"]),
                     "apart": {c: np.concatenate(v) for c, v in kept["apart"].items()}}
                 for g, kept in closeness[key].items()}
        print("\n".join(_by_distance(found)))


if __name__ == "__main__":
    main()

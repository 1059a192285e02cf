"""The assessment run: the holdout, the attacks across links, leaky releases flagged, the outputs."""

import json
import sys
import warnings

import numpy as np
import pandas as pd
import pytest

from relanon import datasets, load_schema
from relanon.audit import audit_database
from relanon.cli import main
from relanon.common.errors import ParameterError
from relanon.metrics.attacks import assess
from relanon.metrics.attacks.assessment import DEFAULT_HOLDOUT
from relanon.metrics.attacks.distances import reference_distances
from relanon.metrics.attacks.holdout import split_database
from relanon.metrics.attacks.inference import inference
from relanon.metrics.attacks.results import STATES
from relanon.metrics.attacks.view_attacks import linkability_splits, secret_columns
from relanon.multitable.views import views
from relanon.present.audit import audit_text
from relanon.schema.validation import check_database


@pytest.fixture(scope="module")
def demo():
    schema, db = datasets.hospital(scale=0.05, seed=3)
    return schema, check_database(schema, db)


@pytest.fixture(scope="module")
def assessment(demo):
    schema, db = demo
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return assess(schema, db, random_state=5, n_predicates=300, progress=False)


# --------------------------------------------------------------------------- holdout


def test_control_people_leave_with_their_descendants(demo):
    schema, db = demo
    split = split_database(schema, db, holdout=0.25, random_state=1)
    n_patients, n_doctors = len(db["patients"]), len(db["doctors"])
    assert split.sizes["patients"] == (n_patients - round(0.25 * n_patients), round(0.25 * n_patients))
    training = split.training
    held_patients = set(db["patients"]["patient_id"]) - set(training["patients"]["patient_id"])
    held_doctors = set(db["doctors"]["doctor_id"]) - set(training["doctors"]["doctor_id"])
    assert len(held_patients) == split.sizes["patients"][1] and len(held_doctors) == split.sizes["doctors"][1]
    # no training row descends from a control person, and every foreign key still finds its parent
    assert not training["visits"]["patient_id"].isin(held_patients).any()
    assert not training["visits"]["doctor_id"].isin(held_doctors).any()
    assert training["prescriptions"]["visit_id"].isin(training["visits"]["visit_id"]).all()
    assert training["visits"]["patient_id"].isin(training["patients"]["patient_id"]).all()
    kept_visits = db["visits"][~db["visits"]["patient_id"].isin(held_patients) & ~db["visits"]["doctor_id"].isin(held_doctors)]
    assert len(training["visits"]) == len(kept_visits)
    assert len(training["hospitals"]) == len(db["hospitals"])
    assert n_doctors == split.sizes["doctors"][0] + split.sizes["doctors"][1]


def test_control_views_are_built_like_the_training_views(demo):
    """A control patient's visits with control doctors are left out, as a training patient's are."""
    schema, db = demo
    split = split_database(schema, db, holdout=0.25, random_state=1)
    control_db = split.control["patients"]
    held_doctors = set(db["doctors"]["doctor_id"]) - set(split.training["doctors"]["doctor_id"])
    assert not control_db["visits"]["doctor_id"].isin(held_doctors).any()
    control_patients = control_db["patients"].iloc[split.control_rows["patients"]]
    assert not control_patients["patient_id"].isin(split.training["patients"]["patient_id"]).any()
    assert len(control_patients) == split.sizes["patients"][1]
    view = views(schema, control_db, "patients")[1].frame.iloc[split.control_rows["patients"]]
    own = db["visits"][db["visits"]["patient_id"].isin(control_patients["patient_id"])
                       & ~db["visits"]["doctor_id"].isin(held_doctors)]
    assert view["visits.count"].sum() == len(own)


def test_holdout_is_seeded_and_checked(demo):
    schema, db = demo
    first = split_database(schema, db, random_state=4)
    again = split_database(schema, db, random_state=4)
    other = split_database(schema, db, random_state=5)
    assert first.training["patients"].equals(again.training["patients"])
    assert not first.training["patients"].equals(other.training["patients"])
    with pytest.raises(ValueError, match="holdout"):
        split_database(schema, db, holdout=1.0)


def test_a_table_too_small_to_hold_people_out_is_not_attacked():
    schema = load_schema({"relanon": 1, "tables": {"people": {
        "primary_key": "id", "individual": True, "columns": {"x": "continuous"}}}})
    split = split_database(schema, {"people": pd.DataFrame({"id": [1, 2, 3], "x": [1.0, 2.0, 3.0]})}, random_state=0)
    assert split.sizes == {} and "too few" in split.notes[0]


def test_control_people_share_the_training_people_classes(demo):
    """Each class of the quasi-identifiers is split in the holdout's proportions, within one person."""
    schema, db = demo
    for seed in range(5):
        split = split_database(schema, db, holdout=0.5, random_state=seed)
        for name in ("doctors", "patients"):
            columns = list(schema[name].quasi_identifiers)
            training = split.training[name].groupby(columns).size()
            control = split.control[name][name].iloc[split.control_rows[name]].groupby(columns).size()
            both = pd.concat([training, control], axis=1).fillna(0)
            assert (both.iloc[:, 0] - both.iloc[:, 1]).abs().max() <= 1, (name, seed)


def _population(n, rng):
    job = rng.integers(0, 10, n)
    grade = np.where(rng.random(n) < 0.8, job, rng.integers(0, 10, n))
    return pd.DataFrame({"id": np.arange(n), "job": [f"j{j}" for j in job], "age": rng.integers(20, 65, n),
                         "grade": [f"g{g}" for g in grade]})


def test_a_release_that_knows_no_one_shows_no_risk_although_it_drops_rare_categories():
    """The release is a fresh sample of the population, without the jobs fewer than 10 training people
    hold (as the rare-value rule and the avatar draw leave out a category of a small table): nobody's
    grade is in it. A simple random split gave it inference risks of 0.06 to 0.24 (the control part
    held more people of the dropped jobs than the training part); the balanced split gives none."""
    schema = load_schema({"relanon": 1, "tables": {"people": {
        "primary_key": "id", "individual": True, "quasi_identifiers": ["job"], "sensitive": ["grade"],
        "columns": {"job": "categorical", "age": "integer", "grade": "categorical"}}}})
    kinds = {"job": "categorical", "age": "integer", "grade": "categorical"}
    risks = []
    for seed in range(5):
        rng = np.random.default_rng(seed)
        split = split_database(schema, {"people": _population(200, rng)}, holdout=0.5, random_state=seed)
        training = split.training["people"]
        control = split.control["people"]["people"].iloc[split.control_rows["people"]]
        counts = training["job"].value_counts()
        fresh = _population(2000, rng)
        release = fresh[fresh["job"].isin(counts.index[counts >= 10])].head(len(training))
        risks.append(inference(release, training, control, kinds, secret="grade", random_state=seed).risk.value)
    assert np.mean(risks) < 0.06, risks


# --------------------------------------------------------------------------- the assessment


def test_assessment_attacks_every_view_of_every_individual_table(demo, assessment):
    schema, db = demo
    assert list(assessment.risk_matrix.index) == ["doctors", "patients"]
    attacked = {a.view for a in assessment.attacks}
    for table in ("doctors", "patients"):
        assert {v.name for v in views(schema, db, table)} <= attacked
    kinds = {(a.view, a.attack) for a in assessment.attacks}
    assert ("TO_TOP_ENRICHED(patients, visits)", "linkability") in kinds
    assert ("TO_TOP_ENRICHED(patients, visits)", "inference") in kinds
    targets = {a.target for a in assessment.attacks if a.view == "TO_TOP_ENRICHED(patients, visits)"}
    assert {"bmi", "smoker", "visits.mode(reason)"} <= targets
    # every cell shows, among its view's attacks of the worst state, the highest upper bound
    measured = [a for a in assessment.attacks if a.view == "STANDALONE(patients)" and a.state is not None]
    worst_rank = max(STATES.index(a.state) for a in measured)
    worst = max(a.risk.high for a in measured if STATES.index(a.state) == worst_rank)
    assert assessment.risk_upper.loc["patients", "patients"] == pytest.approx(worst)
    assert np.isnan(assessment.risk_matrix.loc["patients", "doctors"])


def test_each_cell_holds_the_worst_state_of_its_attacks(assessment):
    states = {}
    for attack in assessment.attacks:
        if attack.state is not None:
            states.setdefault(assessment.cells[attack.view], []).append(attack.state)
        if attack.state == "inconclusive":  # too few people: no release could have passed, the estimate did
            assert attack.risk.value < 0.05 <= attack.floor and attack.risk.high >= 0.05
        if attack.state is not None:  # a leak only widens the interval beyond the no-leak one... or narrows it
            assert attack.floor >= 0 and (attack.state == "passed") == bool(attack.passed)
    for cell, found in states.items():
        worst = "failed" if "failed" in found else "inconclusive" if "inconclusive" in found else "passed"
        assert assessment.risk_state.loc[cell] == worst
        assert bool(assessment.risk_passed.loc[cell]) == (worst == "passed")
    # 4 control doctors: nothing can be proven about them, whatever the release
    doctors = [a for a in assessment.attacks if a.view == "STANDALONE(doctors)" and a.state is not None]
    assert doctors and all(a.floor >= 0.05 for a in doctors)


def test_assessment_calibrates_the_distance_targets(assessment):
    names = {m.name for _, m in assessment.distances}
    assert names == {"closer_to_training", "distance_to_closest", "closest_distances_ratio"}
    dcr = next(m for v, m in assessment.distances if v == "STANDALONE(patients)" and m.name == "distance_to_closest")
    assert dcr.target == pytest.approx(0.9 * dcr.breakdown["control_value"])
    replaced = [m for kind, v, m in assessment.evaluation.metrics if v == "STANDALONE(patients)" and m.name == dcr.name]
    assert replaced == [dcr]
    assert "closer_to_training" in assessment.evaluation.details.columns


def test_a_distance_of_zero_fails_nothing_when_strangers_have_identical_twins():
    # 40 kinds of rows, each held by 10 people: every stranger has twins among the training people
    rows = pd.DataFrame({"x": np.repeat(np.arange(40.0), 10), "g": np.tile(["a", "b"], 200)})
    kinds = {"x": "continuous", "g": "categorical"}
    training, control = rows.iloc[::2].reset_index(drop=True), rows.iloc[1::2].reset_index(drop=True)
    metrics = {m.name: m for m in reference_distances(training, control, control, kinds, random_state=0)}
    dcr = metrics["distance_to_closest"]
    assert dcr.value == 0 and dcr.breakdown["control_value"] == 0
    assert dcr.target is None and dcr.passed is None
    # a release of strangers is no closer to the training people than strangers are
    assert metrics["closer_to_training"].passed


def test_assessment_is_deterministic_and_json_ready(demo, assessment):
    schema, db = demo
    before = {name: frame.copy() for name, frame in db.items()}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        again = assess(schema, db, random_state=5, n_predicates=300, progress=False)
    assert again.to_json() == assessment.to_json()
    assert all(before[name].equals(db[name]) for name in db)  # the input is never modified
    data = json.loads(assessment.to_json())
    assert data["sizes"]["patients"]["control"] == round(DEFAULT_HOLDOUT * len(db["patients"]))
    assert {a["attack"] for a in data["attacks"]} == {"singling_out", "linkability", "inference"}


def test_splits_and_secrets_of_a_view(demo):
    schema, db = demo
    standalone, enriched = views(schema, db, "patients")[:2]
    assert linkability_splits(schema, standalone)[0] == (["sex", "blood_type"], ["age", "birth_date", "zip_code", "bmi", "smoker"])
    first, second = linkability_splits(schema, enriched)[0]
    assert first[:2] == ["sex", "blood_type"] and "visits.count" in first and "visits.count" not in second
    assert secret_columns(schema, enriched) == ["bmi", "smoker", "visits.mode(reason)"]


# --------------------------------------------------------------------------- leaky releases are flagged


def _people_and_children(n=600, seed=0):
    """People whose children share a value unique to each person (what original_order keeps together).

    Each person's town is shared by ten people: an avatar copies its drawn neighbour's town (with k = 2,
    often the person's own), while its numbers are shifted by their group's spread (the small-group rule),
    so the town is what a leaky link gives away with the children."""
    rng = np.random.default_rng(seed)
    towns = rng.permutation(np.repeat([f"T{i:03d}" for i in range(-(-n // 10))], 10)[:n])
    people = pd.DataFrame({"person_id": np.arange(n), "x1": rng.uniform(0, 100, n).round(1),
                           "town": towns, "sex": rng.choice(["F", "M"], n),
                           "smoker": rng.choice(["yes", "no"], n)})
    counts = rng.integers(1, 9, n)
    owner = np.repeat(np.arange(n), counts)
    children = pd.DataFrame({"child_id": np.arange(len(owner)), "person_id": owner,
                             "z": (rng.uniform(0, 1000, n)[owner] + rng.normal(0, 1, len(owner))).round(2)})
    return {"people": people, "children": children}


def _schema(method="avatar", link="linear_sum", k=10):
    return load_schema({"relanon": 1, "tables": {
        "people": {"primary_key": "person_id", "individual": True, "quasi_identifiers": ["sex"],
                   "sensitive": ["smoker"],
                   "columns": {"x1": "continuous", "town": "categorical", "sex": "categorical",
                               "smoker": "categorical"},
                   "anonymize": {"method": method, **({"k": k} if method == "avatar" else {})}},
        "children": {"primary_key": "child_id", "columns": {"z": "continuous"}, "anonymize": {"k": k},
                     "foreign_keys": [{"column": "person_id", "references": "people", "link": link}]}}})


def test_original_order_with_the_smallest_k_is_flagged_across_the_link():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = assess(_schema(link="original_order", k=2), _people_and_children(), random_state=0, progress=False)
    across = [a for a in result.attacks if a.view == "TO_TOP_ENRICHED(people, children)" and a.attack == "linkability"]
    assert max(a.risk.low for a in across) > 0.05
    assert result.risk_passed.loc["people", "children"] is np.False_ or not result.risk_passed.loc["people", "children"]
    alone = [a for a in result.attacks if a.view == "STANDALONE(people)" and a.attack == "linkability"]
    assert max(a.risk.value for a in alone) < max(a.risk.value for a in across)


def test_a_table_released_unchanged_is_flagged():
    result = assess(_schema(method="keep"), _people_and_children(), holdout=0.2, random_state=0, progress=False)
    alone = {a.attack: a for a in result.attacks if a.view == "STANDALONE(people)"}
    assert alone["inference"].risk.low > 0.5
    assert alone["singling_out"].risk.low > 0.5
    assert not result.passed


# --------------------------------------------------------------------------- the audit says what applies


def test_audit_of_synthetic_tables_is_for_information(demo):
    schema, db = demo
    gating = audit_database(schema, db, k=50)
    assert not gating.passed
    informative = audit_database(schema, db, k=50, synthetic=["patients", "doctors"])
    assert informative.passed
    assert all(v.synthetic and not v.gating for v in informative.views if v.table in ("patients", "doctors"))
    assert "relanon assess" in audit_text(informative)
    with pytest.raises(ValueError, match="absent from the schema"):
        audit_database(schema, db, synthetic=["nurses"])


def test_relanon_audit_reads_which_tables_are_synthetic_from_the_release(tmp_path, capsys):
    schema, db = datasets.hospital(scale=0.02, seed=1)
    folder = tmp_path / "demo"
    assert main(["demo", "--out", str(folder), "--scale", "0.02", "--no-report", "-q"]) == 0
    capsys.readouterr()
    assert main(["audit", str(folder / "anonymized" / "schema.yaml"), "--data", str(folder / "anonymized"),
                 "--k", "50"]) == 0
    assert "synthetic" in capsys.readouterr().out
    assert main(["audit", str(folder / "schema.yaml"), "--data", str(folder / "original"), "--k", "50"]) == 1


def test_release_notes_are_read_from_a_sqlite_release(tmp_path):
    from relanon.multitable import anonymize, write_release
    from relanon.stores.notes import release_methods

    schema, db = datasets.hospital(scale=0.02, seed=1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = anonymize(schema, db, random_state=0, progress=False)
    written = write_release(result, tmp_path / "release.sqlite")
    assert release_methods(written) == {t.name: "avatar" for t in schema}
    assert release_methods(tmp_path) == {}


# --------------------------------------------------------------------------- outputs


def test_relanon_assess_writes_the_report_and_prints_the_risk_matrix(tmp_path, capsys, monkeypatch):
    # the report without its pictures (drawing them is most of the command's time; tests/present checks them)
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # makes "import matplotlib" fail
    folder = tmp_path / "demo"
    assert main(["demo", "--out", str(folder), "--scale", "0.03", "--data-only", "-q"]) == 0
    code = main(["assess", str(folder / "schema.yaml"), "--data", str(folder / "original"), "--out",
                 str(tmp_path / "assessment"), "--seed", "3", "--predicates", "200", "-q"])
    out = capsys.readouterr().out
    assert code in (0, 1) and (code == 1) == ("RISK:" in out or "INCONCLUSIVE:" in out)
    assert "attack risk" in out and "privacy (hidden rate" in out
    page = (tmp_path / "assessment" / "report.html").read_text(encoding="utf-8")
    assert 'id="attacks"' in page and "TO_TOP_ENRICHED(patients, visits)" in page
    metrics = json.loads((tmp_path / "assessment" / "metrics.json").read_text(encoding="utf-8"))
    assert metrics["assessment"]["risk_matrix"]["patients"]["patients"] is not None
    # the verdict, its advice and the risk matrix, as the terminal printed them
    verdict = metrics["assessment"]["verdict"]
    assert all(line in out for line in verdict) and any(line.split(":")[0] in ("RISK", "INCONCLUSIVE", "PASSED")
                                                        for line in verdict)
    assert "\n".join(metrics["assessment"]["risk_matrix_text"]) in out
    assert '<div class="verdict">' in page and ("RISK</span>" in page or "INCONCLUSIVE</span>" in page
                                                or "PASSED</span>" in page)
    assert main(["assess", str(folder / "schema.yaml"), "--data", str(folder / "original"), "--out",
                 str(folder / "original" / "inside")]) == 2  # never writes inside the input


def test_an_assessment_without_individual_table_is_refused_before_any_work(tmp_path, capsys):
    from relanon.common.errors import SchemaError
    from relanon.schema.model import dump_schema
    from relanon.stores.io import write_database

    schema = load_schema({"relanon": 1, "tables": {
        "airlines": {"primary_key": "id", "columns": {"name": "categorical"}},
        "flights": {"primary_key": "id", "foreign_keys": [{"column": "airline", "references": "airlines"}],
                    "columns": {"delay": "integer"}}}})
    db = {"airlines": pd.DataFrame({"id": [1, 2], "name": ["a", "b"]}),
          "flights": pd.DataFrame({"id": range(6), "airline": [1, 2] * 3, "delay": range(6)})}
    with pytest.raises(SchemaError, match=r"no table is individual \(tables: airlines, flights\).*`individual: true`"):
        assess(schema, db, progress=False)
    dump_schema(schema, tmp_path / "s.yaml")
    data = write_database(db, tmp_path / "data", schema)
    code = main(["assess", str(tmp_path / "s.yaml"), "--data", str(data), "--out", str(tmp_path / "out"), "-q"])
    captured = capsys.readouterr()
    assert code == 2 and "no table is individual" in captured.err and "held out" not in captured.out
    assert not (tmp_path / "out").exists()


def test_rounds_are_chosen_within_the_time_budget_and_stop_when_settled():
    """After a round, another is run only when some attack is unsettled and the rounds that would settle them
    all fit the budget (by default twice the first round) and are practical."""
    from relanon.metrics.attacks.assessment import _more_rounds
    from relanon.metrics.attacks.confidence import success_rate
    from relanon.metrics.attacks.results import LINKABILITY, attack_result

    class Round:
        def __init__(self, n):  # 60 control people: inconclusive, two rounds would show 5 %; 1,000: passed
            rates = success_rate(1, n), success_rate(1, n), success_rate(0, n)
            self.attacks = [attack_result(LINKABILITY, "a | b", *rates)]

    assert _more_rounds([Round(60)], elapsed=10.0, budget=None)  # two rounds fit the default budget
    assert not _more_rounds([Round(60)], elapsed=10.0, budget=15.0)  # the second round would not fit
    assert not _more_rounds([Round(1000)], elapsed=10.0, budget=None)  # settled: stop early
    assert not _more_rounds([Round(60), Round(60)], elapsed=20.0, budget=1000.0)  # pooled over two: settled
    assert not _more_rounds([Round(5)], elapsed=10.0, budget=1e6)  # more rounds than practical: hold out more people
    with pytest.raises(ParameterError, match="time_budget must be a positive number of seconds"):
        assess(*datasets.hospital(scale=0.01, seed=1), time_budget=0, progress=False)

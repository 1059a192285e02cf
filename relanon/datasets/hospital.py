"""The embedded demo database: a hospital, generated from a seed, without downloads.

Five tables, declared in ``schemas/hospital.yaml``::

    hospitals (~20) -> doctors (~200, individual) -> visits (~30,000) <- patients (~10,000, individual)
                                                      visits -> prescriptions (~50,000)

The values are realistic enough for the metrics to mean something: BMI rises with age, birth dates
agree with ages at :data:`REFERENCE_DATE`, a visit's cost follows its duration, the drugs follow the
reason of the visit, which follows the doctor's specialty, and smokers, older patients and women
visit more often. It also holds the rare cases that make multi-table risk visible (docs/guide/verdict.md):

- one patient (a woman) with about twice as many visits as anyone else: harmless in the patients
  table alone, unique once her number of visits is joined (``TO_TOP_ENRICHED(patients, visits)``);
- one hospital whose only doctor of the rare specialty (medical genetics) is the only one in the
  region, since the other geneticists work in university hospitals of other regions: harmless in
  the doctors table alone, unique once the hospital's region is joined
  (``TO_BOTTOM_PROPAGATED(doctors, hospitals)``);
- women visit more often than men on average.
"""

from __future__ import annotations

import math
from importlib import resources
from typing import NamedTuple

import numpy as np
import pandas as pd

from relanon.datasets._common import (
    add_years,
    age_on,
    allocate,
    as_datetime,
    checked_scale,
    checked_seed,
    codes,
    draw_rows,
    fit_k_to_sizes,
    full_names,
    sex_labels,
    shares,
    text,
    uniform_days,
)
from relanon.datasets.hospital_world import (
    ADULT_CONSULTS,
    BLOOD_TYPES,
    CHILD_CONSULTS,
    CHRONIC_REFILLS,
    CITIES,
    DRUGS,
    FIRST_VISIT_DATE,
    HOSPITAL_PATRONS,
    RARE_SPECIALTY,
    REASONS,
    REFERENCE_DATE,
    SENIOR_CONSULTS,
    SMOKER_CONSULTS,
    SPECIALTIES,
    UNIVERSITY_CITIES,
)
from relanon.schema.model import Schema, load_schema


class DemoSizes(NamedTuple):
    """Row counts of the tables whose size is fixed by the scale (visits and prescriptions vary)."""

    hospitals: int
    doctors: int
    patients: int


def demo_sizes(scale: float = 1.0) -> DemoSizes:
    """How many hospitals, doctors and patients :func:`hospital` generates at ``scale``.

    Doctors and patients grow linearly with the scale, hospitals as its square root (a bigger
    region has more hospitals, and bigger ones). Visits follow at about 3 per patient and
    prescriptions at about 5 per patient.

    Examples
    --------
    >>> demo_sizes(1.0)
    DemoSizes(hospitals=20, doctors=200, patients=10000)
    >>> demo_sizes(0.01)
    DemoSizes(hospitals=3, doctors=4, patients=100)
    """
    scale = checked_scale(scale)
    return DemoSizes(
        hospitals=max(3, round(20 * math.sqrt(scale))),
        doctors=max(4, round(200 * scale)),
        patients=max(20, round(10_000 * scale)),
    )


def hospital_schema() -> Schema:
    """The schema of the demo database, as shipped in ``schemas/hospital.yaml``.

    Examples
    --------
    >>> schema = hospital_schema()
    >>> list(schema.tables)
    ['hospitals', 'doctors', 'patients', 'visits', 'prescriptions']
    >>> schema["patients"].quasi_identifiers
    ('sex', 'blood_type')
    """
    text = resources.files("relanon.schemas").joinpath("hospital.yaml").read_text(encoding="utf-8")
    return load_schema(text)


def hospital(scale: float = 1.0, seed: int = 0) -> tuple[Schema, dict[str, pd.DataFrame]]:
    """Generate the demo hospital database and its schema.

    Parameters
    ----------
    scale : float, default 1.0
        Size factor, any positive number: 1 gives about 20 hospitals, 200 doctors,
        10,000 patients, 30,000 visits and 50,000 prescriptions; 10 gives ten times as many doctors,
        patients, visits and prescriptions (hospitals grow as the square root). The rare cases are
        present at every scale, even 0.01.
    seed : int, default 0
        Seed of the generator (a non-negative integer): the same seed gives identical tables.

    Returns
    -------
    schema : Schema
        :func:`hospital_schema`, with each avatar table's ``k`` lowered to its row count minus one
        when a tiny scale leaves fewer rows than ``k + 1``.
    database : dict of str to DataFrame
        The tables, keyed by name in schema order, with the project's in-memory dtypes: keys int64,
        continuous float64, integer int64, boolean bool, datetime datetime64[ns], categorical
        str (zip codes int64).

    Examples
    --------
    >>> schema, db = hospital(scale=0.05, seed=1)
    >>> list(db)
    ['hospitals', 'doctors', 'patients', 'visits', 'prescriptions']
    >>> len(db["patients"]), db["patients"]["bmi"].dtype
    (500, dtype('float64'))
    """
    sizes = demo_sizes(scale)
    streams = [np.random.default_rng(s) for s in np.random.SeedSequence(checked_seed(seed)).spawn(5)]
    hospitals = _hospitals(sizes.hospitals, streams[0])
    doctors = _doctors(sizes.doctors, hospitals, streams[1])
    patients = _patients(sizes.patients, streams[2])
    visits = _visits(patients, doctors, hospitals, streams[3])
    prescriptions = _prescriptions(visits, streams[4])
    database = {
        "hospitals": hospitals,
        "doctors": doctors,
        "patients": patients,
        "visits": visits,
        "prescriptions": prescriptions,
    }
    return fit_k_to_sizes(hospital_schema(), database), database


# --------------------------------------------------------------------------- tables


def _hospitals(n: int, rng: np.random.Generator) -> pd.DataFrame:
    """University hospitals in the largest cities, the others anywhere, the last one in a region
    without a university hospital (the rare specialty's isolated doctor works there)."""
    city_names = list(CITIES)
    region = np.array([CITIES[c][0] for c in city_names], dtype=object)
    weight = np.array([CITIES[c][4] for c in city_names])
    n_university = min(UNIVERSITY_CITIES, max(1, round(n / 5)))
    university_regions = set(region[:n_university])
    remote = np.flatnonzero([r not in university_regions for r in region])

    city = rng.choice(len(city_names), size=n, p=weight / weight.sum())
    city[:n_university] = np.arange(n_university)
    city[-1] = rng.choice(remote)
    university = np.arange(n) < n_university

    beds = np.where(
        university,
        rng.integers(900, 2200, size=n),
        np.round(rng.lognormal(np.log(250), 0.5, size=n)).clip(60, 900),
    ).astype(np.int64)
    names = np.asarray(city_names, dtype=object)[city]
    # Consecutive patrons from a random start per city: names are unique up to 30 hospitals a city.
    within_city = pd.Series(city).groupby(city).cumcount().to_numpy()
    first_patron = rng.integers(len(HOSPITAL_PATRONS), size=len(city_names))[city]
    patron = (first_patron + within_city) % len(HOSPITAL_PATRONS)
    label = np.where(university, "CHU", "Hopital " + np.asarray(HOSPITAL_PATRONS, dtype=object)[patron])
    return pd.DataFrame(
        {
            "hospital_id": np.arange(1, n + 1, dtype=np.int64),
            "name": text(label + " - " + names),
            "city": text(names),
            "region": text(region[city]),
            "beds": beds,
            "university": university,
        }
    )


def _doctors(n: int, hospitals: pd.DataFrame, rng: np.random.Generator) -> pd.DataFrame:
    """(specialty, sex) allocated in fixed proportions, so that every pair is frequent; the rare
    specialty's doctors in university hospitals, except one alone in the last (remote) hospital."""
    specialties = list(SPECIALTIES)
    cell_share = np.array([[s * (1 - f), s * f] for s, f, _ in SPECIALTIES.values()]).ravel()
    counts = allocate(n - 1, cell_share)
    cell = rng.permutation(np.repeat(np.arange(len(cell_share)), counts))
    specialty, female = cell // 2, cell % 2 == 1

    rare = specialties.index(RARE_SPECIALTY)
    university = np.flatnonzero(hospitals["university"].to_numpy())
    beds = hospitals["beds"].to_numpy(dtype=float)
    hospital = np.where(
        specialty == rare,
        rng.choice(university, size=n - 1),
        rng.choice(len(hospitals), size=n - 1, p=beds / beds.sum()),
    )
    specialty = np.append(specialty, rare)
    female = np.append(female, rng.random() < 0.5)
    hospital = np.append(hospital, len(hospitals) - 1)

    birth = _birth_dates(np.round(rng.triangular(29, 45, 68, size=n)), rng)
    age = age_on(birth, REFERENCE_DATE)
    earliest_hire = np.maximum(add_years(birth, 28), np.datetime64("1985-01-01", "D"))
    latest_hire = REFERENCE_DATE - 60
    hire = earliest_hire + uniform_days(latest_hire - earliest_hire, rng)
    return pd.DataFrame(
        {
            "doctor_id": np.arange(1, n + 1, dtype=np.int64),
            "hospital_id": hospitals["hospital_id"].to_numpy()[hospital],
            "full_name": full_names(female, rng),
            "specialty": text(np.asarray(specialties, dtype=object)[specialty]),
            "sex": sex_labels(female),
            "age": age,
            "hire_date": as_datetime(hire),
        }
    )


def _patients(n: int, rng: np.random.Generator) -> pd.DataFrame:
    ages = np.arange(100)
    pyramid = np.where(ages < 60, 1.0, np.exp(-(ages - 60) / 12.0))
    age = rng.choice(ages, size=n, p=pyramid / pyramid.sum())
    female = rng.random(n) < 0.51
    birth = _birth_dates(age, rng)
    age = age_on(birth, REFERENCE_DATE)

    smoking_rate = np.where(female, 0.22, 0.30) * (age >= 15) * np.where(age >= 65, 0.6, 1.0)
    smoker = rng.random(n) < smoking_rate
    adult_bmi = 22.3 + 0.09 * (np.minimum(age, 65) - 18) + 0.8 * ~female - 0.6 * smoker
    mean_bmi = np.where(age < 18, 15.5 + 0.18 * age, adult_bmi)
    spread = np.where(age < 18, 1.6, 3.8)
    bmi = np.round(np.clip(mean_bmi + spread * rng.standard_normal(n), 13.0, 55.0), 1)
    bmi[rng.random(n) < 0.10] = np.nan

    cities = list(CITIES.values())
    weight = np.array([c[4] for c in cities])
    city = rng.choice(len(cities), size=n, p=weight / weight.sum())
    first, step, count = (np.array([c[i] for c in cities]) for i in (1, 2, 3))
    district = np.floor(rng.random(n) * count[city]).astype(np.int64)
    blood = rng.choice(len(BLOOD_TYPES), size=n, p=shares(BLOOD_TYPES))
    return pd.DataFrame(
        {
            "patient_id": np.arange(1, n + 1, dtype=np.int64),
            "full_name": full_names(female, rng),
            "sex": sex_labels(female),
            "age": age.astype(np.int64),
            "birth_date": as_datetime(birth),
            "zip_code": (first[city] + step[city] * district).astype(np.int64),
            "bmi": bmi,
            "smoker": smoker,
            "blood_type": text(np.asarray(list(BLOOD_TYPES), dtype=object)[blood]),
        }
    )


def _visits(
    patients: pd.DataFrame, doctors: pd.DataFrame, hospitals: pd.DataFrame, rng: np.random.Generator
) -> pd.DataFrame:
    female = patients["sex"].to_numpy() == "F"
    age = patients["age"].to_numpy()
    smoker = patients["smoker"].to_numpy()
    frequent = _frequent_visitor(female, age, rng)
    counts = _visit_counts(female, age, smoker, frequent, rng)

    who = np.repeat(np.arange(len(patients)), counts)
    specialty = _consulted_specialty(female[who], age[who], smoker[who], rng)
    patient_region = _patient_regions(patients)[who]
    doctor = _pick_doctor(specialty, patient_region, doctors, hospitals, rng)

    specialties = list(SPECIALTIES)
    reasons = list(REASONS)
    doctor_specialty = codes(doctors["specialty"], specialties)[doctor]
    reason_weights = np.array([[r[1] * (r[0] == s) for r in REASONS.values()] for s in specialties], dtype=float)
    reason = draw_rows(reason_weights[doctor_specialty], rng)

    minutes = np.array([r[2] for r in REASONS.values()], dtype=float)[reason]
    emergency = rng.random(len(who)) < np.array([r[3] for r in REASONS.values()])[reason]
    duration = np.maximum(5, np.round(minutes * rng.lognormal(0.0, 0.25, len(who)) + 20 * emergency)).astype(np.int64)
    fee = np.array([f for _, _, f in SPECIALTIES.values()])[doctor_specialty]
    cost = np.round(np.maximum(10.0, fee + 1.1 * duration + 60.0 * emergency + 6.0 * rng.standard_normal(len(who))), 2)

    birth = patients["birth_date"].to_numpy().astype("datetime64[D]")[who]
    hired = doctors["hire_date"].to_numpy().astype("datetime64[D]")[doctor]
    earliest = np.maximum(np.maximum(birth, hired), FIRST_VISIT_DATE)
    date = earliest + uniform_days(REFERENCE_DATE - earliest, rng)

    order = np.lexsort((who, date.astype(np.int64)))  # visit numbers follow the calendar, as in a real register
    return pd.DataFrame(
        {
            "visit_id": np.arange(1, len(who) + 1, dtype=np.int64),
            "patient_id": patients["patient_id"].to_numpy()[who][order],
            "doctor_id": doctors["doctor_id"].to_numpy()[doctor][order],
            "visit_date": as_datetime(date[order]),
            "reason": text(np.asarray(reasons, dtype=object)[reason][order]),
            "cost": cost[order],
            "duration_min": duration[order],
            "emergency": emergency[order],
        }
    )


def _prescriptions(visits: pd.DataFrame, rng: np.random.Generator) -> pd.DataFrame:
    reasons = list(REASONS)
    reason = codes(visits["reason"], reasons)
    rate = np.array([r[4] for r in REASONS.values()])[reason]
    # About 5 prescriptions per 3 visits, whatever the mix of reasons.
    counts = rng.poisson(rate * (5 / 3) / max(rate.mean(), 1e-12))
    visit = np.repeat(np.arange(len(visits)), counts)

    drugs = list(DRUGS)
    allowed = np.array([[d in r[5] for d in drugs] for r in REASONS.values()], dtype=float)
    drug = draw_rows(allowed[reason[visit]], rng)
    doses = [DRUGS[d][0] for d in drugs]
    padded = np.array([[*d, *[d[-1]] * (4 - len(d))] for d in doses])
    n_doses = np.array([len(d) for d in doses])
    dose = padded[drug, np.floor(rng.random(len(visit)) * n_doses[drug]).astype(np.int64)]
    chronic = np.array([DRUGS[d][1] for d in drugs])[drug]
    refills = np.where(
        chronic,
        rng.choice(len(CHRONIC_REFILLS), size=len(visit), p=CHRONIC_REFILLS / CHRONIC_REFILLS.sum()),
        (rng.random(len(visit)) < 0.2).astype(np.int64),
    ).astype(np.int64)
    return pd.DataFrame(
        {
            "prescription_id": np.arange(1, len(visit) + 1, dtype=np.int64),
            "visit_id": visits["visit_id"].to_numpy()[visit],
            "drug": text(np.asarray(drugs, dtype=object)[drug]),
            "dose_mg": dose.astype(np.float64),
            "refills": refills,
        }
    )


# --------------------------------------------------------------------------- visits, step by step


def _frequent_visitor(female: np.ndarray, age: np.ndarray, rng: np.random.Generator) -> int:
    """The patient with an unusually high number of visits: an adult woman when there is one."""
    adult_women = np.flatnonzero(female & (age >= 30))
    candidates = adult_women if len(adult_women) else np.arange(len(female))
    return int(rng.choice(candidates))


def _visit_counts(female, age, smoker, frequent: int, rng: np.random.Generator) -> np.ndarray:
    """Visits per patient: more for women, older patients and smokers; about 3 on average.

    The frequent visitor gets twice the highest other count plus ten. At tiny scales, sampling
    noise could reverse the gap between women and men: the counts are then drawn again (the
    gap holds at the first draw beyond a few hundred patients).
    """
    rate = np.where(female, 1.35, 1.0) * (1 + 0.5 * (age >= 60) + 0.3 * (age < 5)) * np.where(smoker, 1.3, 1.0)
    rate *= 3.0 / rate.mean()
    others = np.ones(len(rate), dtype=bool)
    others[frequent] = False
    while True:
        counts = rng.poisson(rate * rng.gamma(2.0, 0.5, size=len(rate)))
        counts[frequent] = 2 * counts[others].max() + 10
        men, women = counts[~female], counts[female]
        if len(men) == 0 or len(women) == 0 or women.mean() > men.mean():
            return counts.astype(np.int64)


def _consulted_specialty(female, age, smoker, rng: np.random.Generator) -> np.ndarray:
    specialties = list(SPECIALTIES)
    adult = np.array([ADULT_CONSULTS[s] for s in specialties], dtype=float)
    child = np.array([CHILD_CONSULTS[s] for s in specialties], dtype=float)
    weights = np.where((age < 18)[:, None], child, adult)
    for boosts, who in ((SMOKER_CONSULTS, smoker), (SENIOR_CONSULTS, age >= 60)):
        factor = np.array([boosts.get(s, 1.0) for s in specialties])
        weights = weights * np.where(who[:, None], factor, 1.0)
    weights[:, specialties.index("gynecology")] *= female & (age >= 14)
    return draw_rows(weights, rng)


def _patient_regions(patients: pd.DataFrame) -> np.ndarray:
    """Region code (index in the list of regions) of each patient, from the zip code."""
    regions = _regions()
    zip_to_region = {}
    for region, first, step, count, _ in CITIES.values():
        for zip_code in first + step * np.arange(count):
            zip_to_region[int(zip_code)] = regions.index(region)
    return patients["zip_code"].map(zip_to_region).to_numpy(dtype=np.int64)


def _pick_doctor(specialty, region, doctors: pd.DataFrame, hospitals: pd.DataFrame, rng) -> np.ndarray:
    """A doctor of the specialty, in the patient's region 85 % of the time when there is one,
    elsewhere otherwise; any doctor when nobody practises the specialty (tiny scales)."""
    regions = _regions()
    hospital_region = codes(hospitals["region"], regions)
    row_of_hospital = pd.Series(np.arange(len(hospitals)), index=hospitals["hospital_id"])
    doctor_region = hospital_region[row_of_hospital[doctors["hospital_id"]].to_numpy()]
    doctor_specialty = codes(doctors["specialty"], list(SPECIALTIES))
    n_regions = len(regions)

    local = _pick_member(doctor_specialty * n_regions + doctor_region, specialty * n_regions + region,
                         len(SPECIALTIES) * n_regions, rng)
    anywhere = _pick_member(doctor_specialty, specialty, len(SPECIALTIES), rng)
    any_doctor = rng.integers(len(doctors), size=len(specialty))
    chosen = np.where((local >= 0) & (rng.random(len(specialty)) < 0.85), local, anywhere)
    return np.where(chosen >= 0, chosen, any_doctor)


def _pick_member(member_group: np.ndarray, wanted_group: np.ndarray, n_groups: int, rng) -> np.ndarray:
    """For each wanted group, the index of a member drawn uniformly; -1 when the group is empty."""
    order = np.argsort(member_group, kind="stable")
    sizes = np.bincount(member_group, minlength=n_groups)
    starts = np.cumsum(sizes) - sizes
    size = sizes[wanted_group]
    position = starts[wanted_group] + np.floor(rng.random(len(wanted_group)) * size).astype(np.int64)
    return np.where(size > 0, order[np.minimum(position, len(order) - 1)], -1)


# --------------------------------------------------------------------------- helpers


def _regions() -> list[str]:
    return list(dict.fromkeys(c[0] for c in CITIES.values()))


def _birth_dates(age: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Birth dates of people who are ``age`` years old on the day before the reference date."""
    last_birthday = add_years(np.full(len(age), REFERENCE_DATE), -np.asarray(age, dtype=np.int64))
    return last_birthday - 1 - uniform_days(np.full(len(age), 364), rng)


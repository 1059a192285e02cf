"""The embedded demo database: a hospital, generated from a seed, without downloads.

Five tables, declared in ``schemas/hospital.yaml``::

    hospitals (~20) -> doctors (~200, individual) -> visits (~30,000) <- patients (~10,000, individual)
                                                      visits -> prescriptions (~50,000)

The values are realistic enough for the metrics to mean something: BMI rises with age, birth dates
agree with ages at :data:`REFERENCE_DATE`, a visit's cost follows its duration, the drugs follow the
reason of the visit, which follows the doctor's specialty, and smokers, older patients and women
visit more often. It also holds the rare cases that make multi-table risk visible (seed 004):

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
from relanon.schema.model import Schema, load_schema

REFERENCE_DATE = np.datetime64("2024-01-01", "D")
"""Ages are measured on this day, and every visit happens before it."""

FIRST_VISIT_DATE = np.datetime64("2021-01-01", "D")

RARE_SPECIALTY = "medical genetics"

# city: (region, first zip code, zip code step, number of zip codes, weight among patients).
# The first six, in distinct regions, host the university hospitals.
CITIES = {
    "Paris": ("Ile-de-France", 75001, 1, 20, 22.0),
    "Marseille": ("Provence-Alpes-Cote d'Azur", 13001, 1, 16, 9.0),
    "Lyon": ("Auvergne-Rhone-Alpes", 69001, 1, 9, 8.0),
    "Toulouse": ("Occitanie", 31000, 100, 5, 5.0),
    "Lille": ("Hauts-de-France", 59000, 100, 8, 4.5),
    "Bordeaux": ("Nouvelle-Aquitaine", 33000, 100, 3, 4.5),
    "Nantes": ("Pays de la Loire", 44000, 100, 3, 5.0),
    "Strasbourg": ("Grand Est", 67000, 100, 2, 4.0),
    "Montpellier": ("Occitanie", 34000, 70, 2, 4.0),
    "Rennes": ("Bretagne", 35000, 200, 2, 3.5),
    "Reims": ("Grand Est", 51100, 100, 1, 2.5),
    "Grenoble": ("Auvergne-Rhone-Alpes", 38000, 100, 2, 2.5),
    "Dijon": ("Bourgogne-Franche-Comte", 21000, 100, 1, 2.5),
    "Angers": ("Pays de la Loire", 49000, 100, 1, 2.0),
    "Brest": ("Bretagne", 29200, 0, 1, 2.0),
    "Tours": ("Centre-Val de Loire", 37000, 100, 2, 2.0),
    "Rouen": ("Normandie", 76000, 100, 2, 2.5),
    "Caen": ("Normandie", 14000, 0, 1, 2.0),
    "Orleans": ("Centre-Val de Loire", 45000, 100, 1, 2.0),
    "Besancon": ("Bourgogne-Franche-Comte", 25000, 0, 1, 1.5),
    "Ajaccio": ("Corse", 20000, 90, 2, 1.0),
}
UNIVERSITY_CITIES = 6

# specialty: (share of doctors, share of women among them, consultation fee in euros).
# Each (specialty, sex) pair holds at least 2.8 % of the doctors, so that at scale 1 every pair has
# five doctors or more and the doctors table is 5-anonymous over (specialty, sex).
SPECIALTIES = {
    "general medicine": (0.22, 0.55, 26.5),
    "cardiology": (0.10, 0.35, 51.0),
    "pediatrics": (0.11, 0.65, 32.0),
    "general surgery": (0.10, 0.30, 55.0),
    "gynecology": (0.09, 0.65, 50.0),
    "psychiatry": (0.09, 0.55, 55.0),
    "dermatology": (0.08, 0.60, 50.0),
    "pulmonology": (0.07, 0.45, 50.0),
    "oncology": (0.08, 0.45, 60.0),
    RARE_SPECIALTY: (0.06, 0.50, 60.0),
}

# Who consults which specialty (relative weights per visit), before the adjustments below.
ADULT_CONSULTS = {
    "general medicine": 40, "cardiology": 10, "pediatrics": 0, "general surgery": 7, "gynecology": 9,
    "psychiatry": 8, "dermatology": 7, "pulmonology": 6, "oncology": 5, RARE_SPECIALTY: 0.5,
}
CHILD_CONSULTS = {
    "general medicine": 25, "cardiology": 0.5, "pediatrics": 60, "general surgery": 4, "gynecology": 0,
    "psychiatry": 3, "dermatology": 5, "pulmonology": 3, "oncology": 0.3, RARE_SPECIALTY: 1,
}
SMOKER_CONSULTS = {"pulmonology": 2.5, "cardiology": 1.5, "oncology": 1.5}
SENIOR_CONSULTS = {"cardiology": 2.0, "oncology": 2.0, "pulmonology": 1.5}

# reason: (specialty, weight within it, typical minutes, share of emergencies,
#          prescriptions per visit before normalization, drugs prescribed for it)
REASONS = {
    "checkup": ("general medicine", 3, 20, 0.0, 0.4, ("paracetamol", "omeprazole")),
    "flu symptoms": ("general medicine", 3, 15, 0.05, 2.0, ("paracetamol", "ibuprofen", "amoxicillin")),
    "back pain": ("general medicine", 2, 20, 0.05, 1.8, ("ibuprofen", "paracetamol", "tramadol")),
    "hypertension follow-up": ("general medicine", 2, 20, 0.0, 2.2, ("amlodipine", "ramipril", "atorvastatin")),
    "chest pain": ("cardiology", 2, 45, 0.45, 1.5, ("bisoprolol", "atorvastatin", "apixaban")),
    "arrhythmia": ("cardiology", 1, 40, 0.2, 2.0, ("apixaban", "bisoprolol")),
    "heart failure follow-up": ("cardiology", 1, 35, 0.0, 2.5, ("ramipril", "bisoprolol", "furosemide")),
    "vaccination": ("pediatrics", 3, 15, 0.0, 0.3, ("paracetamol",)),
    "fever": ("pediatrics", 3, 20, 0.25, 1.6, ("paracetamol", "ibuprofen", "amoxicillin")),
    "growth check": ("pediatrics", 2, 25, 0.0, 0.2, ("vitamin d",)),
    "appendicitis": ("general surgery", 1, 120, 0.7, 2.5, ("amoxicillin", "tramadol", "paracetamol")),
    "hernia repair": ("general surgery", 1, 90, 0.1, 2.0, ("tramadol", "paracetamol")),
    "wound care": ("general surgery", 2, 30, 0.4, 1.2, ("amoxicillin", "paracetamol")),
    "prenatal care": ("gynecology", 3, 30, 0.05, 1.0, ("folic acid", "vitamin d")),
    "contraception": ("gynecology", 2, 20, 0.0, 1.0, ("levonorgestrel",)),
    "pelvic pain": ("gynecology", 1, 30, 0.3, 1.5, ("ibuprofen", "progesterone")),
    "depression": ("psychiatry", 3, 45, 0.05, 1.5, ("sertraline", "escitalopram")),
    "anxiety": ("psychiatry", 2, 40, 0.1, 1.3, ("escitalopram", "diazepam")),
    "eczema": ("dermatology", 2, 20, 0.0, 1.2, ("hydrocortisone",)),
    "acne": ("dermatology", 2, 15, 0.0, 1.0, ("doxycycline", "isotretinoin")),
    "skin lesion check": ("dermatology", 1, 20, 0.0, 0.3, ("hydrocortisone",)),
    "asthma": ("pulmonology", 2, 30, 0.2, 2.0, ("salbutamol", "budesonide")),
    "copd follow-up": ("pulmonology", 2, 35, 0.1, 2.5, ("tiotropium", "salbutamol", "prednisolone")),
    "chronic cough": ("pulmonology", 1, 25, 0.0, 1.0, ("prednisolone", "salbutamol")),
    "chemotherapy": ("oncology", 2, 180, 0.0, 3.0, ("ondansetron", "capecitabine", "dexamethasone")),
    "cancer follow-up": ("oncology", 2, 30, 0.0, 1.2, ("tamoxifen", "ondansetron")),
    "genetic counseling": (RARE_SPECIALTY, 1, 60, 0.0, 0.1, ("folic acid",)),
}

# drug: (usual doses in mg, chronic: refilled up to a year, instead of a one-off course)
DRUGS = {
    "paracetamol": ((500.0, 1000.0), False),
    "ibuprofen": ((200.0, 400.0), False),
    "amoxicillin": ((500.0, 1000.0), False),
    "tramadol": ((50.0, 100.0), False),
    "omeprazole": ((20.0, 40.0), True),
    "amlodipine": ((5.0, 10.0), True),
    "ramipril": ((2.5, 5.0, 10.0), True),
    "atorvastatin": ((10.0, 20.0, 40.0, 80.0), True),
    "bisoprolol": ((2.5, 5.0, 10.0), True),
    "apixaban": ((2.5, 5.0), True),
    "furosemide": ((20.0, 40.0), True),
    "vitamin d": ((0.025,), True),
    "folic acid": ((0.4, 5.0), True),
    "levonorgestrel": ((0.15,), True),
    "progesterone": ((100.0, 200.0), False),
    "sertraline": ((50.0, 100.0), True),
    "escitalopram": ((10.0, 20.0), True),
    "diazepam": ((5.0, 10.0), False),
    "hydrocortisone": ((10.0,), False),
    "doxycycline": ((100.0,), False),
    "isotretinoin": ((20.0, 40.0), True),
    "salbutamol": ((0.1,), True),
    "budesonide": ((0.2, 0.4), True),
    "tiotropium": ((0.018,), True),
    "prednisolone": ((20.0, 40.0), False),
    "ondansetron": ((8.0,), False),
    "capecitabine": ((500.0,), False),
    "dexamethasone": ((4.0, 8.0), False),
    "tamoxifen": ((20.0,), True),
}
# Refills of a chronic treatment, 0 to 11 (a year of monthly boxes): mostly a quarter, a half or a year.
CHRONIC_REFILLS = np.array([1, 2, 3, 6, 2, 6, 3, 2, 2, 1, 1, 5], dtype=float)

BLOOD_TYPES = {"O+": 36, "A+": 37, "B+": 9, "AB+": 3, "O-": 6, "A-": 7, "B-": 1, "AB-": 1}

HOSPITAL_PATRONS = (
    "Saint-Louis Saint-Joseph Sainte-Anne Saint-Antoine Pasteur Necker Bichat Cochin Tenon Lariboisiere "
    "Beaujon Foch Bellevue Nord Sud Est Ouest Central Saint-Jacques Sainte-Marie Saint-Vincent Hotel-Dieu "
    "Pitie Charcot Laennec Bretonneau Calmette Larrey Percy Begin".split()
)


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


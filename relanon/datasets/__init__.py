"""Embedded databases generated from a seed, without downloads.

- :func:`hospital`: the demo (hospitals, doctors, patients, visits, prescriptions), with the rare
  cases that make multi-table risk visible;
- :func:`careers`: people and their yearly records and leaves, whose rows must agree with their
  person (a year inside the person's active span): a test of what a release keeps across links.
"""

from relanon.datasets._common import FIRST_NAMES, LAST_NAMES
from relanon.datasets.careers import (
    COUNTRIES,
    EDUCATION,
    LEAVE_REASONS,
    OCCUPATIONS,
    SECTORS,
    CareersSizes,
    careers,
    careers_schema,
    careers_sizes,
    careers_violations,
)
from relanon.datasets.hospital import DemoSizes, demo_sizes, hospital, hospital_schema
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

__all__ = [
    "ADULT_CONSULTS",
    "BLOOD_TYPES",
    "CHILD_CONSULTS",
    "CHRONIC_REFILLS",
    "CITIES",
    "DRUGS",
    "EDUCATION",
    "FIRST_NAMES",
    "FIRST_VISIT_DATE",
    "HOSPITAL_PATRONS",
    "LAST_NAMES",
    "LEAVE_REASONS",
    "RARE_SPECIALTY",
    "REASONS",
    "REFERENCE_DATE",
    "COUNTRIES",
    "OCCUPATIONS",
    "SECTORS",
    "SENIOR_CONSULTS",
    "SMOKER_CONSULTS",
    "SPECIALTIES",
    "UNIVERSITY_CITIES",
    "CareersSizes",
    "DemoSizes",
    "careers",
    "careers_schema",
    "careers_sizes",
    "careers_violations",
    "demo_sizes",
    "hospital",
    "hospital_schema",
]

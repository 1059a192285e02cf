"""The world of the demo hospital: its dates, cities and regions, specialties, reasons, drugs and blood types.

The shares and rates that :mod:`relanon.datasets.hospital` draws from, in one place: a reader checks
what the demo assumes here, and the generator reads as the steps of a hospital's records.
"""

from __future__ import annotations

import numpy as np

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

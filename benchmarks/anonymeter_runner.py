"""anonymeter's side of benchmarks/attacks_vs_anonymeter.py: runs in a virtual environment holding anonymeter.

    /tmp/anonymeter-venv/bin/python benchmarks/anonymeter_runner.py FOLDER

FOLDER holds ``cases.json`` (written by attacks_vs_anonymeter.py or singling_out_multivariate.py) and, per view, the release, the
training people and the control people as Parquet files. A case runs both singling-out modes unless it names
them (``singling_out``), a linkability attack per column split and an inference attack per secret; a case
naming ``attacks`` runs only those, and one giving ``show_queries`` prints its first succeeding predicates.
The answers go to ``anonymeter.json``.
Only pandas, numpy and anonymeter are imported: this file must not import relanon.
"""

from __future__ import annotations

import json
import sys
import warnings
from importlib.metadata import version
from pathlib import Path

import numpy as np
import pandas as pd
from anonymeter.evaluators import InferenceEvaluator, LinkabilityEvaluator, SinglingOutEvaluator


def figures(evaluator) -> dict:
    results, risk = evaluator.results(), evaluator.risk()
    return {
        "main": float(results.attack_rate.value), "control": float(results.control_rate.value),
        "baseline": float(results.baseline_rate.value),
        "risk": float(risk.value), "low": float(risk.ci[0]), "high": float(risk.ci[1]),
        "n_attacks": int(results.n_attacks_ori), "n_success": float(results.n_success),
        "n_control": float(results.n_control),
    }


def run(folder: Path, case: dict) -> list[dict]:
    release, training, control = (pd.read_parquet(folder / f"{case['name']}.{part}.parquet")
                                  for part in ("release", "training", "control"))
    out = []
    attacks = case.get("attacks", ("singling_out", "linkability", "inference"))
    for mode in case.get("singling_out", ("univariate", "multivariate")) if "singling_out" in attacks else ():
        # the same cap on attempts as relanon's (anonymeter's default, 10 million, runs for hours on small tables)
        evaluator = SinglingOutEvaluator(ori=training, syn=release, control=control, n_attacks=case["n_predicates"],
                                         n_cols=3, seed=case["seed"], max_attempts=100 * case["n_predicates"],
                                         ).evaluate(mode=mode)
        out.append({"attack": "singling_out", "target": mode, **figures(evaluator)})
        shown = evaluator.queries()[:case.get("show_queries", 0)]
        if shown:
            print(f"anonymeter {case['view']} singling out ({mode}), predicates that single out a training person "
                  f"({len(evaluator.queries())}; the first {len(shown)}):" + "".join(f"\n    {q}" for q in shown),
                  file=sys.stderr, flush=True)
    if "linkability" not in attacks:
        return out
    n_link = min(case["n_attacks"], len(training), len(control))  # anonymeter samples as many controls
    for first, second in case["splits"]:
        evaluator = LinkabilityEvaluator(ori=training, syn=release, control=control, aux_cols=(first, second),
                                         n_attacks=n_link).evaluate(n_jobs=1)
        out.append({"attack": "linkability", "target": f"{', '.join(first)} | {', '.join(second)}", **figures(evaluator)})
    for secret, regression in case["secrets"] if "inference" in attacks else ():
        known = [c for c in training.columns if c != secret]
        evaluator = InferenceEvaluator(ori=training, syn=release, control=control, aux_cols=known, secret=secret,
                                       regression=regression, n_attacks=case["n_attacks"]).evaluate(n_jobs=1)
        out.append({"attack": "inference", "target": secret, **figures(evaluator)})
    return out


def main() -> None:
    folder = Path(sys.argv[1])
    cases = json.loads((folder / "cases.json").read_text(encoding="utf-8"))
    np.random.seed(cases[0]["seed"] if cases else 0)  # anonymeter's pandas samples use numpy's global state
    answers = {"anonymeter": version("anonymeter"), "cases": {}}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for case in cases:
            answers["cases"][case["name"]] = run(folder, case)
            print(f"anonymeter: {case['name']} done", file=sys.stderr, flush=True)
    (folder / "anonymeter.json").write_text(json.dumps(answers, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()

"""The assessment as text (terminal) and as a section of the HTML report."""

from __future__ import annotations

import html
import math

import pandas as pd

from relanon.metrics.attacks.results import FAILED, INCONCLUSIVE, PASSED, RISK_TARGET
from relanon.metrics.attacks.rounds import PRACTICAL_ROUNDS, rounds_needed, rounds_to_settle

MARKS = {FAILED: "!", INCONCLUSIVE: "?"}
LEGEND = (f"! = upper bound >= {100 * RISK_TARGET:.0f} %; ? = inconclusive: risk below {100 * RISK_TARGET:.0f} % "
          f"but too few people to show an upper bound below {100 * RISK_TARGET:.0f} %")
CLASSES = {PASSED: "pass", INCONCLUSIVE: "inconclusive", FAILED: "fail"}
VERDICTS = {PASSED: "PASSED", INCONCLUSIVE: "INCONCLUSIVE", FAILED: "RISK"}
"""The HTML class of each attack state (the report's CSS colours them)."""
TITLES = {"singling_out": "singling out", "linkability": "linkability", "inference": "inference"}


def risk_matrix_text(assessment) -> str:
    """The risk matrix: per cell the risk of the view's worst attack, its upper bound and its state.

    Examples
    --------
    >>> class A:  # the frames of an Assessment
    ...     risk_matrix = pd.DataFrame({"people": [0.01], "visits": [0.09]}, index=["people"])
    ...     risk_upper = pd.DataFrame({"people": [0.08], "visits": [0.14]}, index=["people"])
    ...     risk_state = pd.DataFrame({"people": ["inconclusive"], "visits": ["failed"]}, index=["people"])
    >>> print(risk_matrix_text(A()))  # doctest: +NORMALIZE_WHITESPACE
    attack risk (the view's worst attack: risk [upper bound of its 95 % interval]; ! = upper bound >= 5 %;
      ? = inconclusive: risk below 5 % but too few people to show an upper bound below 5 %)
                    people        visits
    people    0.01 [0.08]?  0.09 [0.14]!
    """
    values, upper, states = assessment.risk_matrix, assessment.risk_upper, assessment.risk_state
    cells = {(r, c): _cell(values.loc[r, c], upper.loc[r, c], states.loc[r, c]) for r in values.index for c in values.columns}
    width = max([len(str(c)) for c in values.columns] + [len(t) for t in cells.values()] + [8]) + 2
    label = max([len(str(i)) for i in values.index] + [5]) + 2
    first, second = LEGEND.split("; ? ")
    lines = [
        f"attack risk (the view's worst attack: risk [upper bound of its 95 % interval]; {first};",
        f"  ? {second})",
        " " * label + "".join(f"{c:>{width}}" for c in values.columns),
    ]
    for row in values.index:
        lines.append(f"{row:<{label}}" + "".join(f"{cells[(row, c)]:>{width}}" for c in values.columns))
    return "\n".join(lines)


def attacks_text(assessment, *, only_failed: bool = False) -> str:
    """One line per attack, grouped by view: success on training, control, at random, and the risk.

    The risk is marked ``!`` when the attack failed, ``?`` when it is inconclusive (too few people);
    ``only_failed`` keeps the failed attacks.
    """
    lines, current = [], None
    for attack in assessment.attacks:
        if only_failed and attack.state != FAILED:
            continue
        if attack.view != current:
            current = attack.view
            lines.append(current)
        mark = MARKS.get(attack.state, " ")
        lines.append(
            f"  {TITLES[attack.attack]:<13} {_short(attack.target, 34):<34} training {_pct(attack.main.share)}  "
            f"control {_pct(attack.control.share)}  random {_pct(attack.baseline.share)}  "
            f"risk {_risk(attack)}{mark} ({attack.main.n_attacks:,} attacks)"
        )
    return "\n".join(lines)


def verdict_text(assessment) -> str:
    """A few lines a release reviewer reads first: RISK, INCONCLUSIVE or PASSED, and why."""
    failed, unproven = assessment.failures, assessment.inconclusive
    sizes = ", ".join(f"{t}: {s[0]:,} training / {s[1]:,} control people" for t, s in assessment.sizes.items())
    rounds = assessment.rounds
    pooled_text = f"; {rounds} rounds of independent splits, their attacks pooled" if rounds > 1 else ""
    lines = [f"held out {100 * assessment.holdout:.0f} % of the people ({sizes}{pooled_text})"]
    target = f"{100 * RISK_TARGET:.0f} %"
    not_run = assessment.not_run
    if not assessment.attacks:
        lines.append("NOT RUN: no attack could be made (no individual table with enough training and control "
                     "people): nothing is shown; hold out a share nearer 0.5 (--holdout), or assess more people")
    elif failed:
        more = (f"; {len(unproven)} more cannot show a risk below {target} with so few people (marked ?: "
                f"{_more_evidence(assessment, unproven)})" if unproven else "")
        # a failed attack whose interval reaches 0 may be a leak or too few people: more rounds tell which
        unsettled = [a for a in failed if a.risk.low <= 0]
        measured = [a for a in failed if a.risk.low > 0]
        apart = (f"a leak or too few people, which more rounds would tell apart ({_settling(assessment, unsettled)})"
                 if unsettled else "")
        if not measured:
            why = f"; their intervals reach 0: {apart}"
        else:
            why = "; the release tells an attacker more about its own people than about others"
            lever = _smoother(assessment, measured)
            if unsettled:
                reach = "has an interval that reaches" if len(unsettled) == 1 else "have intervals that reach"
                why += f" ({len(measured)} of them{': ' + lever if lever else ''}); the other {len(unsettled)} {reach} 0: {apart}"
            elif lever:
                why += f"; to lower the risks, {lever}"
        lines.append(f"RISK: {len(failed)} of {len(assessment.attacks)} attacks have a risk whose upper bound reaches "
                     f"{target}{why}{more}")
    elif unproven:
        tables = _unproven_tables(assessment, unproven)
        lines.append(f"INCONCLUSIVE: {len(unproven)} of {len(assessment.attacks)} attacks cannot show a risk below {target} "
                     f"with so few people{f' ({tables})' if tables else ''}; their point estimates are below "
                     f"{target}, and even a release that leaked nothing would show an upper bound of at least "
                     f"{100 * min(a.floor for a in unproven):.0f} %: {_more_evidence(assessment, unproven)}, or read "
                     "these tables as unproven")
    elif not not_run:
        lines.append(f"PASSED: the upper bound of every risk ({len(assessment.attacks)} attacks) is below {100 * RISK_TARGET:.0f} %")
    if not_run and assessment.attacks:
        targets = ", ".join(dict.fromkeys(f"{TITLES[a.attack]} of {a.view}" for a in not_run))
        lines.append(f"NOT RUN: {len(not_run)} of {len(assessment.attacks)} attacks could not be made (no person to "
                     f"attack: {_short(targets, 200)}): their risk is not shown; hold out a share nearer 0.5 "
                     "(--holdout), or assess more people")
    lines += [f"note: {note}" for note in assessment.notes]
    return "\n".join(lines)


# --------------------------------------------------------------------------- HTML


def attacks_section(assessment) -> str:
    """The report's section on the attacks: how to read it, the risk matrix, every attack."""
    if assessment is None:
        return ""
    # the verdict and its advice, as the terminal prints them
    verdict = "".join(f"<li>{_e(line)}</li>" for line in verdict_text(assessment).splitlines())
    guide = (f'<div class="verdict"><span class="{CLASSES.get(assessment.state, "")}">'
             f'{_e(VERDICTS.get(assessment.state, ""))}</span><ul>{verdict}</ul></div>'

        "<p>The people of each individual table were split at random: "
        f"{_e(_sizes(assessment))}. The training people were anonymized exactly as a real run would "
        "anonymize the whole database, then three attacks were run against that release, once for "
        "the training people and once for the control people, whom the release never saw. "
        "<strong>Risk</strong> = (success on training &minus; success on control) / (1 &minus; success on "
        "control): 0 means the release tells an attacker no more about its own people than about anyone "
        "else of the population; 1 means every attack that could succeed did. A cell is green when the "
        f"upper bound of the 95&nbsp;% interval of every risk is below {100 * RISK_TARGET:.0f} %; yellow "
        "(inconclusive) when a risk is below that but its upper bound is not, and even a release that leaked "
        "nothing could not have shown an upper bound below it with so few people (the no-leak bound); red "
        "otherwise: a leak measured.</p>"
        "<ul><li><strong>Singling out</strong>: predicates read off the release (a rare value; or a random "
        "released row's values on three random columns, a bound towards the tail for a number, as anonymeter "
        "writes them) that exactly one person of the data satisfies; the control success is the chance of "
        "that had the release learned nothing about who is in the data.</li>"
        "<li><strong>Linkability</strong>: two partial records of a person (say, the quasi-identifiers "
        "and the number of visits on one side, the other columns on the other) joined through the "
        "closest released rows.</li>"
        "<li><strong>Inference</strong>: a sensitive value read off the released row closest to "
        "everything else the attacker knows.</li></ul>"
    )
    values, upper, states = assessment.risk_matrix, assessment.risk_upper, assessment.risk_state
    header = "".join(f'<th scope="col">{_e(c)}</th>' for c in values.columns)
    rows = []
    for row in values.index:
        cells = []
        for column in values.columns:
            state = CLASSES.get(states.loc[row, column], "na")
            text = "&ndash;" if pd.isna(values.loc[row, column]) else _e(_cell(values.loc[row, column], upper.loc[row, column], PASSED))
            cells.append(f'<td class="{state}">{text}</td>')
        rows.append(f'<tr><th class="row" scope="row">{_e(row)}</th>{"".join(cells)}</tr>')
    matrix = (f'<table class="matrix"><tr><th></th>{header}</tr>{"".join(rows)}</table>'
              '<p class="legend"><span class="pass">every upper bound below 5 %</span>'
              '<span class="inconclusive">inconclusive: risks below 5 %, too few people to show their upper bounds below it</span>'
              '<span class="fail">a risk may reach 5 %</span><span class="na">not applicable</span></p>')
    table_rows = []
    for attack in assessment.attacks:
        state = CLASSES.get(attack.state, "na")
        notes = "; ".join(attack.notes + ((f"inconclusive: even without a leak the upper bound would be "
                                           f"{attack.floor:.2f} with these numbers of attacks",)
                                          if attack.state == INCONCLUSIVE else ()))
        table_rows.append(
            f'<tr><td class="text">{_e(attack.view)}</td><td class="text">{_e(TITLES[attack.attack])}</td>'
            f'<td class="text">{_e(attack.target)}</td><td>{_pct(attack.main.share)}</td>'
            f"<td>{_pct(attack.control.share)}</td><td>{_pct(attack.baseline.share)}</td>"
            f'<td class="{state}">{_e(_risk(attack))}</td><td>{attack.main.n_attacks:,} / {attack.control.n_attacks:,}</td>'
            f'<td class="text note">{_e(notes)}</td></tr>'
        )
    details = (
        "<h3>Every attack</h3><table><tr><th class=\"row\">view</th><th class=\"row\">attack</th>"
        "<th class=\"row\">target</th><th>success on training</th><th>success on control</th>"
        "<th>random guess</th><th>risk [95 % interval]</th><th>attacks (training / control)</th>"
        f"<th class=\"row\">notes</th></tr>{''.join(table_rows)}</table>"
    )
    evidence = _evidence(assessment)
    notes = "".join(f"<li>{_e(n)}</li>" for n in assessment.notes)
    notes = f'<ul class="note">{notes}</ul>' if notes else ""
    return (f'<section id="attacks"><h2>Attacks</h2>{guide}{notes}<h3>Risk matrix</h3>{matrix}{details}{evidence}'
            "</section>")


def _evidence(assessment) -> str:
    items = []
    for attack in assessment.attacks:
        if attack.attack != "singling_out" or not attack.evidence or attack.passed is not False:
            continue
        shown = "".join(f"<li><code>{_e(p)}</code></li>" for p in attack.evidence[:5])
        items.append(f"<p>{_e(attack.view)}, {_e(attack.target)}: predicates that exactly one training person "
                     f"satisfies (first {min(5, len(attack.evidence))}):</p><ul>{shown}</ul>")
    if not items:
        return ""
    return ("<h3>What singles people out</h3><p class=\"note\">These predicates show values of the training "
            "people: keep this report as private as the data.</p>" + "".join(items))


def _cell(value, upper, state) -> str:
    if pd.isna(value):
        return "."
    return f"{value:.2f} [{upper:.2f}]{MARKS.get(state, ' ')}"


def _more_evidence(assessment, unproven) -> str:
    """What would let the inconclusive attacks show a bound below the target, per table: more rounds, or
    more people where the rounds needed are more than is practical."""
    needed: dict = {}
    for attack in unproven:
        table = assessment.cells.get(attack.view, (attack.view,))[0]
        needed[table] = max(needed.get(table, 0), rounds_needed(attack.floor, assessment.rounds))
    practical = {t: n for t, n in needed.items() if n <= PRACTICAL_ROUNDS}
    parts = []
    if practical:
        most = max(practical.values())
        each = ", ".join(f"{t}: about {n}" for t, n in practical.items())
        parts.append(f"run more rounds ({each}; --rounds {most})")
    if len(practical) < len(needed):
        each = ", ".join(f"{t}: about {n}" for t, n in needed.items() if t not in practical)
        parts.append(f"hold out more people ({each} rounds would be needed: more than is practical)")
    else:
        parts.append("hold out more people")
    return ", or ".join(parts)


def _settling(assessment, unsettled) -> str:
    """About how many rounds would settle every failed attack whose interval reaches 0, if the risks are what
    they measure now."""
    most = max(rounds_to_settle(a.risk.value, a.risk.high, assessment.rounds) for a in unsettled)
    if most > PRACTICAL_ROUNDS:
        return (f"about {most} rounds if the risks are what they measure now: more than is practical, hold out "
                "more people")
    return f"about {most} rounds if the risks are what they measure now: --rounds {most}"


def _smoother(assessment, leaks) -> str:
    """The levers against measured leaks: the ``k`` of the avatar tables their views read (more neighbours per
    avatar: training people no closer to the release than others, and a less faithful release; ``min_count``,
    when the schema leaves it to ``k``, rises with it: the demo's patients at ``k`` 40 keep 4 % smokers), and
    against a multivariate singling out, the ``combination_min_count`` of its individual table (fewer rare
    tuples of categories to build predicates from: the demo's doctors with their hospital 0.024 at 5, 0.047 at
    the default 2)."""
    tables = dict.fromkeys(t for a in leaks for t in assessment.cells.get(a.view, ()) if t in assessment.k)
    singled = (assessment.cells[a.view][0] for a in leaks if a.view in assessment.cells
               and a.attack == "singling_out" and a.target.startswith("multivariate"))
    combined = dict.fromkeys(t for t in singled if t in assessment.combination_min_count)
    levers = []
    if tables:
        now = ", ".join(f"{t}: k={assessment.k[t]}" for t in tables)
        levers.append(f"raise k of the tables they read ({now})")
    if combined:
        now = ", ".join(f"{t}: {assessment.combination_min_count[t]}" for t in combined)
        levers.append(f"against singling out by combinations, raise anonymize.combination_min_count ({now})")
    if not levers:
        return ""
    return (f"{' and, '.join(levers)} and assess again, reading the signal column by column: more neighbours per "
            "avatar keep less detail, a min_count left to follow k and more holders asked of a combination turn "
            "more rare values down (see docs/guide/attacks.md)")


def _unproven_tables(assessment, unproven) -> str:
    """The individual tables of inconclusive attacks, each with its number of control people."""
    tables = dict.fromkeys(assessment.cells[a.view][0] for a in unproven if a.view in assessment.cells)
    return ", ".join(f"{t}: {assessment.sizes[t][1]:,} control people" for t in tables if t in assessment.sizes)


def _risk(attack) -> str:
    risk = attack.risk
    if math.isnan(risk.value):
        return "not measured"
    return f"{risk.value:.2f} [{risk.low:.2f}, {risk.high:.2f}]"


def _pct(share: float) -> str:
    return "   -  " if share is None or math.isnan(share) else f"{100 * share:5.1f}%"


def _short(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 3] + "..."


def _sizes(assessment) -> str:
    sizes = "; ".join(f"{t}: {s[0]:,} training and {s[1]:,} control people ({100 * assessment.holdout:.0f} % held out)"
                      for t, s in assessment.sizes.items())
    rounds = assessment.rounds
    return sizes + (f", in each of {rounds} rounds of independent splits and releases whose attacks are pooled"
                    if rounds > 1 else "")


def _e(value) -> str:
    return html.escape(str(value), quote=True)

"""Portability scores per target, from the findings and the weights in rules/scoring.toml.

For each target and each rule with findings:
    cost(rule, target) = weight[severity] * factor[effect on target] * (1 + log2(files))
    score(target)      = 100 * exp(-sum(cost) / scale)
    overall            = mean of the target scores
`files` is the number of files where the rule fires: fixing a tie once per file (one central
device, one extension build) is the unit of migration work, and each doubling of the files
affected adds one more unit. Clean code around the ties changes nothing, so a large repo is not
punished for its size nor a small one rewarded; no finding ever raises a score (every term is
non-negative and exp is decreasing)."""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass

from auditor.catalogue import load_catalogue
from auditor.model import TARGETS, Finding


@dataclass(frozen=True)
class Cost:
    rule: str
    name: str
    count: int  # findings
    files: int  # files with at least one finding of the rule
    points: float  # share of the 100 - score this rule is responsible for on that target


@dataclass(frozen=True)
class Scores:
    overall: float
    targets: dict[str, float]
    grades: dict[str, str]
    costs: dict[str, list[Cost]]  # target -> rules that cost the most, worst first


def _config() -> dict:
    return load_catalogue().table("scoring")["scoring"]


def grade(score: float, grades: list | None = None) -> str:
    for letter, floor in grades or _config()["grades"]:
        if score >= floor:
            return letter
    return "F"


def compute_scores(findings: list[Finding]) -> Scores:
    config = _config()
    weights, factors, scale = config["severity_weight"], config["effect_factor"], config["scale"]
    counts = Counter((f.rule, f.name, f.severity) for f in findings)
    files: dict[str, set[str]] = {}
    effects: dict[str, dict[str, str]] = {}
    for f in findings:
        files.setdefault(f.rule, set()).add(f.path)
        effects[f.rule] = f.targets
    targets: dict[str, float] = {}
    costs: dict[str, list[Cost]] = {}
    for target in TARGETS:
        raw: list[tuple[str, str, int, int, float]] = []
        for (rule, name, severity), count in counts.items():
            spread = len(files[rule])
            cost = weights[severity] * factors[effects[rule].get(target, "raises")] * (1 + math.log2(spread))
            if cost > 0:
                raw.append((rule, name, count, spread, cost))
        total = sum(item[-1] for item in raw)
        score = 100.0 * math.exp(-total / scale)
        targets[target] = round(score, 1)
        lost = 100.0 - score
        costs[target] = sorted(
            (Cost(rule, name, count, spread, round(lost * cost / total, 1))
             for rule, name, count, spread, cost in raw),
            key=lambda c: (-c.points, c.rule),
        )
    overall = round(sum(targets.values()) / len(targets), 1)
    grades = {"overall": grade(overall, config["grades"])}
    grades.update({t: grade(s, config["grades"]) for t, s in targets.items()})
    return Scores(overall=overall, targets=targets, grades=grades, costs=costs)

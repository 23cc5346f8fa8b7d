"""Portability scores per target, from the findings and the weights in rules/scoring.toml.

For each target and each rule with findings:
    cost(rule, target) = weight[severity] * factor[effect on target] * (1 + log2(count))
    score(target)      = 100 * exp(-sum(cost) / scale)
    overall            = mean of the target scores
Repeating the same kind of tie costs less each time (each doubling adds one more unit), so a
large repo is not punished for size and a small one not rewarded for it; no finding ever raises
a score (every term is non-negative and exp is decreasing)."""

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
    count: int
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
    effects = {f.rule: f.targets for f in findings}
    targets: dict[str, float] = {}
    costs: dict[str, list[Cost]] = {}
    for target in TARGETS:
        raw: list[tuple[str, str, int, float]] = []
        for (rule, name, severity), count in counts.items():
            cost = weights[severity] * factors[effects[rule].get(target, "raises")] * (1 + math.log2(count))
            if cost > 0:
                raw.append((rule, name, count, cost))
        total = sum(c for *_, c in raw)
        score = 100.0 * math.exp(-total / scale)
        targets[target] = round(score, 1)
        lost = 100.0 - score
        costs[target] = sorted(
            (Cost(rule, name, count, round(lost * cost / total, 1)) for rule, name, count, cost in raw),
            key=lambda c: (-c.points, c.rule),
        )
    overall = round(sum(targets.values()) / len(targets), 1)
    grades = {"overall": grade(overall, config["grades"])}
    grades.update({t: grade(s, config["grades"]) for t, s in targets.items()})
    return Scores(overall=overall, targets=targets, grades=grades, costs=costs)

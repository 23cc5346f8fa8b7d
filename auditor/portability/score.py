"""Portability scores per target, from the findings and the weights in rules/scoring.toml.

For each target and each rule with findings, every finding weighs

    w(f, target) = severity_weight[f.severity] * effect_factor[f's effect on target] * context_weight[f.context]

(a finding in several contexts, e.g. "test+guarded", takes the product of their weights). A unit of
porting work is a file (a kernel rule's unit is its folder: one extension, however many .cu/.cuh
files, headers adding none) and weighs what its heaviest finding weighs. With the units' weights
sorted from the heaviest, w1 >= w2 >= ...,

    cost(rule, target) = w1 + w2 + w3 * log2(3/2) + ... + wk * (log2(k) - log2(k-1))
    score(target)      = 100 * exp(-sum(cost) / scale)
    overall            = mean of the scores of a named, versioned set of targets (rules/targets.toml
                         [overall], or the configuration's `overall-targets`): a new target moves no gate

For n equal units that is w * (1 + log2(n)): each doubling of the files a rule touches adds one
more unit, so spread costs more but not linearly, and fifty ties in one file cost what one does.
No finding ever raises a score: a unit's weight is a maximum (a new finding can only raise it), the
discounts do not increase (so the sum over the heaviest-first order is the largest pairing of
weights and discounts, which adding or raising a weight can only raise) and exp is decreasing."""

from __future__ import annotations

import math
import posixpath
from collections import Counter
from dataclasses import dataclass

from auditor import targets as registry
from auditor.catalogue import load_table
from auditor.model import Finding
from auditor.targets import OverallSet


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
    overall_set: OverallSet | None = None  # the targets `overall` averages
    # Why no score is given (files the auditor failed on): the numbers are then an upper bound no
    # report shows, as a clean score must never come from a run that missed files.
    withheld: str | None = None

    def score_map(self) -> dict[str, float | None]:
        """"overall" and each target, as reports and baselines show them (None: withheld)."""
        if self.withheld is not None:
            return {"overall": None, **dict.fromkeys(self.targets)}
        return {"overall": self.overall, **self.targets}

    def grade_map(self) -> dict[str, str | None]:
        if self.withheld is not None:
            return dict.fromkeys(self.grades)
        return dict(self.grades)


def _config() -> dict:
    return load_table("scoring")["scoring"]


def grade(score: float, grades: list | None = None) -> str:
    for letter, floor in grades or _config()["grades"]:
        if score >= floor:
            return letter
    return "F"


def context_weight(context: str | None, weights: dict[str, float]) -> float:
    """The product of the weights of a finding's contexts (1 on the main path)."""
    if not context:
        return 1.0
    weight = 1.0
    for name in context.split("+"):
        weight *= weights.get(name, 1.0)
    return weight


def discounted(weights: list[float]) -> float:
    """w1 + w2 + sum over k >= 3 of wk * (log2(k) - log2(k - 1)), heaviest first."""
    total = 0.0
    for k, weight in enumerate(sorted(weights, reverse=True), start=1):
        total += weight * (1.0 if k <= 2 else math.log2(k) - math.log2(k - 1))
    return total


def units_of(findings: list[Finding], by_folder: bool, headers: tuple[str, ...]) -> list[list[Finding]]:
    """The findings of one rule grouped into units of work: files, or kernel folders (a folder of
    headers only counts when the rule has nothing but headers)."""
    groups: dict[str, list[Finding]] = {}
    if not by_folder:
        for f in findings:
            groups.setdefault(f.path, []).append(f)
        return list(groups.values())
    sources = [f for f in findings if not f.path.endswith(headers)] or findings
    folders = {posixpath.dirname(f.path) for f in sources}
    for f in findings:
        folder = posixpath.dirname(f.path)
        if folder in folders:
            groups.setdefault(folder, []).append(f)
    return list(groups.values())


def compute_scores(findings: list[Finding], overall_targets: tuple[str, ...] = (), withheld: str | None = None) -> Scores:
    """Every target's score; `overall` over `overall_targets`, else the catalogue's named set."""
    config = _config()
    weights, factors, scale = config["severity_weight"], config["effect_factor"], config["scale"]
    contexts = config.get("context_weight", {})
    folder_rules = {name for name, unit in config.get("unit", {}).items() if unit == "folder"}
    headers = tuple(config.get("header_suffixes", ()))
    by_rule: dict[tuple[str, str], list[Finding]] = {}
    for f in findings:
        by_rule.setdefault((f.rule, f.name), []).append(f)
    counts = {key: len(items) for key, items in by_rule.items()}
    files = {key: len({f.path for f in items}) for key, items in by_rule.items()}
    units = {key: units_of(items, key[1] in folder_rules, headers) for key, items in by_rule.items()}
    base = {id(f): weights[f.severity] * context_weight(f.context, contexts) for f in findings}
    targets: dict[str, float] = {}
    costs: dict[str, list[Cost]] = {}
    for target in registry.names():
        raw: list[tuple[str, str, int, int, float]] = []
        for key, groups in units.items():
            unit_weights = [max(base[id(f)] * factors[f.targets.get(target, "raises")] for f in group) for group in groups]
            cost = discounted(unit_weights)
            if cost > 0:
                raw.append((key[0], key[1], counts[key], files[key], cost))
        total = sum(item[-1] for item in raw)
        score = 100.0 * math.exp(-total / scale)
        targets[target] = round(score, 1)
        lost = 100.0 - score
        costs[target] = sorted(
            (Cost(rule, name, count, spread, round(lost * cost / total, 1))
             for rule, name, count, spread, cost in raw),
            key=lambda c: (-c.points, c.rule),
        )
    members = registry.overall_set(overall_targets)
    overall = round(sum(targets[t] for t in members.members) / len(members.members), 1)
    grades = {"overall": grade(overall, config["grades"])}
    grades.update({t: grade(s, config["grades"]) for t, s in targets.items()})
    return Scores(overall=overall, targets=targets, grades=grades, costs=costs, overall_set=members, withheld=withheld)


def context_counts(findings: list[Finding]) -> dict[str, int]:
    """How many findings stand in each context ("main" for none); a finding in two counts in both."""
    counts: Counter = Counter()
    for f in findings:
        for name in (f.context or "main").split("+"):
            counts[name] += 1
    return dict(counts)

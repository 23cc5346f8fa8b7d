"""Portability scores per target, from the findings and the weights in rules/scoring.toml.

For each target and each rule with findings, every finding weighs

    w(f, target) = severity_weight[f.severity] * effect_factor[f's effect on target] * context_weight[f.context]

(a finding in several contexts, e.g. "test+guarded", takes the product of their weights). A unit of
porting work is a file (a kernel rule's unit is its folder: one extension, however many .cu/.cuh
files, headers adding none) and weighs what its heaviest finding weighs. With the units' weights
sorted from the heaviest, w1 >= w2 >= ...,

    cost(rule, target) = w1 + w2 + w3 * log2(3/2) + ... + wk * (log2(k) - log2(k-1))
    score(target)      = 100 * exp(-sum(cost) / (scale * size(part)))
    overall            = mean of the scores of a named, versioned set of targets (rules/targets.toml
                         [overall], or the configuration's `overall-targets`): a new target moves no gate

For n equal units that is w * (1 + log2(n)): each doubling of the files a rule touches adds one
more unit, so spread costs more but not linearly, and fifty ties in one file cost what one does.

Given the judged part (auditor.portability.verdict.Part: the package, a component), two things follow
what its verdict says. A tie that raises in only a few of its modules, which the verdict calls a
loss rather than a failure (the rest runs there), is charged the effect `degrades`. And the scale
grows with the part's Python modules N past `size_floor` (N0) as a rule's cost grows with its files,

    size(part) = max(1, (1 + log2 N) / (1 + log2 N0))

so a part whose every module holds the same tie scores the same at any size, and a framework with
ties in a few of its hundreds of modules scores above a package that is nothing but kernels.
No finding ever raises a score: a unit's weight is a maximum (a new finding can only raise it), the
discounts do not increase (so the sum over the heaviest-first order is the largest pairing of
weights and discounts, which adding or raising a weight can only raise) and exp is decreasing; a
new finding can only spread confined ties (to more files, or to one installed with the part) until
they fail it, never confine them."""

from __future__ import annotations

import math
import posixpath
from collections import Counter
from dataclasses import dataclass

from auditor import targets as registry
from auditor.catalogue import load_table
from auditor.model import Finding
from auditor.portability.verdict import Part, confined_ties
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


def _effect(finding: Finding, target: str, loss: set[int]) -> str:
    """A finding's effect on `target` as the part's score charges it (`loss`: confined ties)."""
    return "degrades" if id(finding) in loss else finding.targets.get(target, "raises")


def size_factor(modules: int, floor: float) -> float:
    """How much the scale grows for a part of `modules` Python modules (1 up to `floor`)."""
    if floor <= 0 or modules <= floor:
        return 1.0
    return (1.0 + math.log2(modules)) / (1.0 + math.log2(floor))


def compute_scores(findings: list[Finding], overall_targets: tuple[str, ...] = (), withheld: str | None = None,
                   part: Part | None = None, count_tests: bool = False) -> Scores:
    """Every target's score; `overall` over `overall_targets`, else the catalogue's named set.
    `part`: the judged part (its size, what is installed with it), for the confined ties and the
    size; `count_tests` as for its verdict (a tests component's)."""
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
    confined = confined_ties(findings, part, count_tests) if part is not None else {}
    scale *= size_factor(part.files if part is not None else 0, float(config.get("size_floor", 0)))
    targets: dict[str, float] = {}
    costs: dict[str, list[Cost]] = {}
    for target in registry.names():
        loss = {id(f) for f in confined.get(target, ())}  # the part runs there: these are a loss
        raw: list[tuple[str, str, int, int, float]] = []
        for key, groups in units.items():
            cost = discounted([max(base[id(f)] * factors[_effect(f, target, loss)] for f in group) for group in groups])
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

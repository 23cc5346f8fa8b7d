"""Which files cost the most points, per target: each rule's cost split over its units of work.

auditor/portability/score.py charges a rule, on one target, the sum over its units (files, or kernel folders)
of the unit's weight times its discount, heaviest unit first. Here each unit keeps its own term of
that sum, and a file's points are its terms' share of what the target loses (100 - score), the same
share the report's `costs` give each rule: a file's points over every file add up to the rule
costs' points (given those costs, each rule's own points are split over its units, since the score
also weighs the judged part's size and the ties confined to a few of its modules). A kernel folder
is one unit, so it is listed as the folder (`csrc/adam/`).

It works on the JSON report's finding dicts, so every format that renders the dict (the HTML page,
the plan) sees the same figures."""

from __future__ import annotations

import math
import posixpath
from collections.abc import Sequence
from dataclasses import dataclass

from auditor.catalogue import load_table
from auditor.portability.score import context_weight, units_of


@dataclass(frozen=True)
class _Point:
    """What units_of needs of a finding (its path) and what a unit weighs."""

    path: str
    weight: dict[str, float]  # target -> severity weight x effect factor x context weight


def _config() -> dict:
    return load_table("scoring")["scoring"]


def discount(k: int) -> float:
    """The k-th heaviest unit's discount (1-based), as auditor.portability.score.discounted applies it."""
    return 1.0 if k <= 2 else math.log2(k) - math.log2(k - 1)


def _units(findings: list[dict], targets: Sequence[str]) -> list[tuple[str, list[list[_Point]]]]:
    """(rule name, units of work) per rule, each unit a list of weighed findings."""
    config = _config()
    weights, factors = config["severity_weight"], config["effect_factor"]
    contexts = config.get("context_weight", {})
    folder_rules = {name for name, unit in config.get("unit", {}).items() if unit == "folder"}
    headers = tuple(config.get("header_suffixes", ()))
    by_rule: dict[tuple[str, str], list[_Point]] = {}
    for f in findings:
        base = weights[f["severity"]] * context_weight(f.get("context"), contexts)
        effects = f.get("targets") or {}
        point = _Point(f["path"], {t: base * factors[effects.get(t, "raises")] for t in targets})
        by_rule.setdefault((f["rule"], f["name"]), []).append(point)
    return [(name, units_of(points, name in folder_rules, headers)) for (_, name), points in by_rule.items()]


def _place(unit: list[_Point], by_folder: bool) -> str:
    return posixpath.dirname(unit[0].path) + "/" if by_folder else unit[0].path


def _terms(units: list[list[_Point]], target: str, by_folder: bool) -> dict[str, float]:
    """Each unit's term of its rule's cost on `target`: its weight times its discount, by place."""
    weighed = sorted(((max(p.weight[target] for p in unit), _place(unit, by_folder)) for unit in units),
                     key=lambda item: (-item[0], item[1]))
    out: dict[str, float] = {}
    for k, (weight, place) in enumerate(weighed, start=1):
        if weight > 0:
            out[place] = out.get(place, 0.0) + weight * discount(k)
    return out


def _spread(terms: dict[str, dict[str, float]], charged: dict[str, float] | None, scale: float) -> dict[str, float]:
    """Points per place: each rule's `charged` points split by its terms, or without them what the
    terms cost at `scale` (100 - score), split by term."""
    out: dict[str, float] = {}
    total = sum(sum(by_place.values()) for by_place in terms.values())
    lost = 100.0 - 100.0 * math.exp(-total / scale)
    for name, by_place in terms.items():
        rule_total = sum(by_place.values())
        if rule_total <= 0:
            continue
        share = (charged.get(name, 0.0) / rule_total) if charged is not None else lost / total
        for place, term in by_place.items():
            out[place] = out.get(place, 0.0) + term * share
    return out


def file_costs(findings: list[dict], targets: Sequence[str], limit: int = 25,
               members: Sequence[str] | None = None, rule_costs: dict | None = None) -> dict[str, list[dict]]:
    """target (and "overall", the mean over `members`, the targets the overall score averages:
    all of them when not given) -> the `limit` files (or kernel folders) that cost the most points
    there, worst first: `{"path", "points", "findings"}`, `findings` counting the finding dicts in
    that place. `rule_costs`: the report's `costs` (target -> [{name, points}]); each rule's points
    are then split over its units, so the files add up to what the score charged (which weighs the
    part's size and its confined ties, which finding dicts alone do not tell)."""
    config = _config()
    folder_rules = {name for name, unit in config.get("unit", {}).items() if unit == "folder"}
    rules = _units(findings, targets)
    counts: dict[str, int] = {}
    for name, units in rules:
        for unit in units:
            place = _place(unit, name in folder_rules)
            counts[place] = counts.get(place, 0) + len(unit)
    points: dict[str, dict[str, float]] = {}
    for target in targets:
        terms = {name: _terms(units, target, name in folder_rules) for name, units in rules}
        charged = {c["name"]: c["points"] for c in (rule_costs or {}).get(target, [])} if rule_costs else None
        points[target] = _spread(terms, charged, config["scale"])
    averaged = [t for t in (members or targets) if t in points]
    overall: dict[str, float] = {}
    for target in averaged:
        for place, value in points[target].items():
            overall[place] = overall.get(place, 0.0) + value / len(averaged)
    points["overall"] = overall
    return {target: [{"path": place, "points": round(value, 1), "findings": counts[place]}
                     for place, value in sorted(per_place.items(), key=lambda item: (-item[1], item[0]))[:limit]]
            for target, per_place in points.items()}

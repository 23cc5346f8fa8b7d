"""Every rule's VALID and INVALID examples run as tests (as in Fixit), through the real scanner
(discovery, prefilter, parse, walk, placement), one temporary repo per example."""

from __future__ import annotations

import pytest

from auditor.catalogue_check import template_fields
from auditor.checks.registry import all_rules

CASES = [
    pytest.param(rule, kind, index, example, id=f"{rule.code}-{rule.name}-{kind}-{index}")
    for rule in all_rules()
    for kind, examples in (("valid", rule.VALID), ("invalid", rule.INVALID))
    for index, example in enumerate(examples)
]


@pytest.mark.parametrize(("rule", "kind", "index", "example"), CASES)
def test_example(rule, kind, index, example, scan_source):
    result = scan_source({example.path: example.code})
    assert not result.errors, result.errors
    mine = [f for f in result.findings if f.rule == rule.code]
    if kind == "valid":
        assert mine == [], f"{rule.code} must not report:\n{example.code}\ngot {mine}"
    else:
        assert mine, f"{rule.code} must report:\n{example.code}\ngot {result.findings}"
        if example.line is not None:
            assert example.line in {f.line for f in mine}, (example.line, mine)
        if example.context is not None:
            at = [f for f in mine if example.line is None or f.line == example.line]
            assert example.context in {f.context or "main" for f in at}, (example.context, at)
        # every field its templates name was filled (a field the report did not carry leaves "{field}")
        for attribute in ("message", "suggestion"):
            for name in template_fields(getattr(rule, attribute)):
                assert all("{" + name + "}" not in getattr(f, attribute) for f in mine), (attribute, name, mine)


@pytest.mark.parametrize("rule", all_rules(), ids=lambda r: r.code)
def test_rule_is_complete(rule):
    assert rule.code[:2].isalpha() and rule.code[2:].isdigit(), rule.code
    assert rule.name == rule.name.lower() and " " not in rule.name and "_" not in rule.name
    assert rule.VALID and rule.INVALID, "every rule needs examples both ways"
    assert rule.what and rule.why and rule.instead and rule.message and rule.suggestion
    effects = rule.effects()
    assert set(effects.values()) <= {"works", "degrades", "raises"}


def test_codes_and_names_unique():
    rules = all_rules()
    assert len({r.code for r in rules}) == len(rules)
    assert len({r.name for r in rules}) == len(rules)


def test_code_family_matches_category():
    family = {"suppression": "0", "device": "1", "cuda-api": "2", "distributed": "3", "kernel": "4", "dependency": "5",
              "env": "6"}
    for rule in all_rules():
        if rule.code.startswith("LK"):
            assert rule.code[2] == family[rule.category.value], rule.code

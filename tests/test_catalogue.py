"""The catalogue agrees with itself: a library flagged in code is flagged, with the same effects,
when it is declared as a dependency, and the other way round."""

from __future__ import annotations

import pytest

from auditor.catalogue import load_catalogue
from auditor.checks._dependency import _build, match_package
from auditor.readers import Requirement, normalize
from auditor.targets import names as target_names

TARGETS = target_names()  # every target of the registry (rules/targets.toml)

CODE_RULES = ("gpu-kernel-library", "bitsandbytes-usage")


def _code_rows():
    catalogue = load_catalogue()
    rows = [*catalogue.apis.values(), *catalogue.api_prefixes.values()]
    return [row for row in rows if row.rule in CODE_RULES]


def _effects(rule: str, override) -> dict[str, str]:
    base = load_catalogue().effects[rule]
    return {t: dict(override).get(t, base[t]) for t in TARGETS}


@pytest.mark.parametrize("row", _code_rows(), ids=lambda r: r.name)
def test_every_library_flagged_in_code_names_its_package_and_both_sides_agree(row):
    assert row.package, f"{row.name} names no package: its dependency side cannot be checked"
    entries = _build(load_catalogue().table("packages"))
    key = normalize(row.package)
    entry = match_package(Requirement(name=row.package, key=key), entries)
    assert entry is not None, f"{row.package} (code: {row.name}) is not flagged as a dependency"
    assert _effects(row.rule, row.effects) == _effects(entry.rule, entry.effects), (row.name, row.package)


@pytest.mark.parametrize("package", ["tilelang", "quack-kernels", "unsloth", "fbgemm-gpu-genai", "liger-kernel",
                                     "sgl-kernel", "flash-attn", "xformers", "deep-gemm", "flash-mla"])
def test_kernel_packages_from_the_issue_are_flagged_on_both_sides(package):
    entries = _build(load_catalogue().table("packages"))
    assert match_package(Requirement(name=package, key=normalize(package)), entries) is not None
    assert any(normalize(row.package) == normalize(package) or
               (package == "fbgemm-gpu-genai" and row.package == "fbgemm-gpu") for row in _code_rows())


def test_every_rule_that_can_fail_or_degrade_a_target_says_why_in_the_verdicts_table():
    """A verdict's reasons name what a rule means there (rules/verdicts.toml); a new rule, from any
    reader, gets its phrase with it rather than falling back to its bare name."""
    from auditor.catalogue import load_table
    from auditor.checks.registry import select_rules

    phrases = load_table("verdicts")
    missing = [(rule.name, verdict) for rule in select_rules(None, None)
               for verdict, effect in (("fails", "raises"), ("degrades", "degrades"))
               if effect in rule.effects().values() and rule.name not in phrases[verdict]]
    assert missing == []

"""Every Invalid example that states its `fixed` code is a fix test (as Fixit's expected_replacement):
the rule alone, safe and unsafe fixes, the newest verified torch as the floor, run until stable
through the real fixer. The result must equal `fixed`, compile, and stay as it is on a second run."""

from __future__ import annotations

import pytest

from auditor.checks.base import UNCHANGED
from auditor.checks.registry import all_rules
from auditor.config.settings import Settings
from auditor.fix.apply import fix_paths
from auditor.pipeline.scan import scan

NEWEST = "2.13"
# Rules whose every report gets the same exact fix, so there is no case to leave alone.
NOTHING_TO_LEAVE = {"LK210": "every report is a scaler call without a device; naming the default is always exact"}
CASES = [
    pytest.param(rule, example, id=f"{rule.code}-{rule.name}-{index}")
    for rule in all_rules()
    for index, example in enumerate(rule.INVALID)
    if example.fixed is not None
]


def fix_once(root, code: str) -> bool:
    options = Settings(select=[code], torch_version=NEWEST, cache=False, jobs=1)
    result = scan([str(root)], options)
    run = fix_paths(result, unsafe=True, write=True, max_bytes=options.max_bytes)
    assert not run.errors, run.errors
    return bool(run.changed)


@pytest.mark.parametrize(("rule", "example"), CASES)
def test_fix_example(rule, example, tmp_path):
    path = tmp_path / example.path
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(example.code, encoding="utf-8")
    if example.fix_class is not None:
        found = scan([str(tmp_path)], Settings(select=[rule.code], torch_version=NEWEST, cache=False, jobs=1))
        mine = [f for f in found.findings if f.rule == rule.code and (example.line is None or f.line == example.line)]
        assert mine and all(f.fix is not None for f in mine), mine
        assert {f.fix.applicability for f in mine} == {example.fix_class}, [f.fix for f in mine]
    fix_once(tmp_path, rule.code)
    expected = example.code if example.fixed == UNCHANGED else example.fixed
    after = path.read_text(encoding="utf-8")
    assert after == expected, f"\n--- got ---\n{after}\n--- expected ---\n{expected}"
    if example.path.endswith(".py"):
        compile(after, str(path), "exec", dont_inherit=True)
    assert not fix_once(tmp_path, rule.code), "a second --fix run changed the file again"


def test_every_rule_with_fixes_has_fix_examples():
    """A rule that offers fixes shows each class it offers in an example, and a case it leaves alone."""
    from auditor.checks.registry import full_catalogue

    for rule in all_rules():
        specs = rule.fix_specs(full_catalogue())
        if not specs or not rule.__module__.startswith("auditor."):
            continue
        fixed = [e for e in rule.INVALID if e.fixed is not None]
        assert fixed, f"{rule.code} offers fixes but no Invalid example states its fixed code"
        if any(spec.applicability != "display" for spec in specs) and rule.code not in NOTHING_TO_LEAVE:
            assert any(e.fixed == UNCHANGED for e in fixed), f"{rule.code}: add a case the fix must leave alone"
            assert any(e.fixed != UNCHANGED for e in fixed), f"{rule.code}: add a case the fix rewrites"

"""The walker: family-wide (shared) handlers run once per node and respect the rule selection."""

from __future__ import annotations

CODE = 'import os\nos.environ["NCCL_DEBUG"] = "INFO"\nos.environ["CUDA_VISIBLE_DEVICES"] = "0"\n'


def test_shared_env_matcher_reports_under_each_owner(scan_source):
    result = scan_source({"m.py": CODE}, select=["LK304", "LK601"])
    assert sorted((f.line, f.rule) for f in result.findings) == [(2, "LK304"), (3, "LK601")]


def test_shared_env_matcher_respects_selection(scan_source):
    result = scan_source({"m.py": CODE}, select=["LK601"])
    assert [(f.line, f.rule) for f in result.findings] == [(3, "LK601")]


def test_shared_handler_is_registered_once():
    from auditor.checks.registry import full_catalogue, select_rules
    from auditor.python.walker import Walker

    walker = Walker(select_rules(["LK2"]), full_catalogue())
    import libcst as cst

    functions = [getattr(h, "__func__", h) for h in walker.handlers.get(cst.DictElement, [])]
    assert len(functions) == len(set(functions)) == 1

"""One `audit plan PATH [--target T]` run: scan PATH (as `audit scan` would, with its configuration
and cache), read the plan's signals, build the plan or the ranking, render it. The CLI
(auditor/cli.py) only reads the options; a usage problem raises PlanUsage (exit 2, one line)."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

from auditor import targets
from auditor.checks.registry import all_rules
from auditor.config.load import load_settings
from auditor.pipeline.scan import resolve_root, scan
from auditor.plan.build import Scan, plan_for, ranking
from auditor.plan.catalogue import check_rules, plan_catalogue
from auditor.plan.generated import check_entry
from auditor.plan.markdown import render_plan, render_ranking
from auditor.plan.page import for_page
from auditor.plan.signals import find_signals
from auditor.plan.write import WriteRefused, write_tests
from auditor.report.model import judge_components

FORMATS = ("markdown", "json", "html")


class PlanUsage(Exception):
    """A wrong argument of `audit plan`: exit 2 with this one line."""


@dataclass(frozen=True)
class PlanRequest:
    path: str
    target: str | None = None
    output_format: str = "markdown"
    write_tests: Path | None = None
    entry: str | None = None
    cache: bool = True
    cache_dir: str | None = None


def check_target(target: str | None) -> None:
    if target is not None and target not in targets.names():
        raise PlanUsage(f"unknown target {target!r}: choose one of {', '.join(targets.names())} "
                        "(or leave --target out to rank them)")


def run_plan(request: PlanRequest) -> str:
    """The rendered plan (or ranking) for `request`."""
    check_target(request.target)
    if request.output_format not in FORMATS:
        raise PlanUsage(f"unknown format {request.output_format!r}: choose one of {', '.join(FORMATS)}")
    if request.write_tests is not None and request.target is None:
        raise PlanUsage("--write-tests writes the files for one target: add --target T")
    if request.entry is not None and request.write_tests is None:
        raise PlanUsage("--entry names the model of the files --write-tests DIR writes: add --write-tests")
    try:
        check_entry(request.entry)
    except ValueError as exc:
        raise PlanUsage(str(exc)) from None
    if not os.path.lexists(request.path):
        raise PlanUsage(f"path not found: {request.path} (give an existing directory, e.g. `audit plan .`)")
    catalogue = plan_catalogue()
    check_rules(catalogue, {rule.name for rule in all_rules()})
    overrides: dict = {"cache": request.cache}
    if request.cache_dir is not None:
        overrides["cache_dir"] = request.cache_dir
    settings = load_settings(resolve_root([request.path]), overrides)
    result = scan([request.path], settings, base=os.getcwd())
    found = Scan(result.root, result.findings, result.errors, find_signals(result.files, catalogue),
                 settings.overall_targets, frozenset(f.kind for f in result.files), result.headline(),
                 judge_components(result, settings.overall_targets), result.component_of,
                 _device_owner(result), result.scan_root or result.root, shipped_part=result.shipped_part())
    if request.target is None:
        document = ranking(found, catalogue)
        return _render(document, request.output_format, render_ranking, result, found)
    written: list[str] = []
    if request.write_tests is not None:
        project = Path(result.scan_root or result.root).name or "project"
        try:
            written = [str(p) for p in write_tests(request.write_tests, request.target, project=project,
                                                    entry=request.entry)]
        except (WriteRefused, ValueError) as exc:
            raise PlanUsage(str(exc)) from None
    found.after_fix = _preview(result)
    document = plan_for(found, request.target, catalogue, written)
    return _render(document, request.output_format, render_plan, result, found)


def _device_owner(result):
    """The project's device owner, as `audit --fix` finds it (or the module it would create)."""
    # the fixer's modules only when a plan is built (the plan command's other paths do without them)
    from auditor.fix.device_owner import find_device_owner
    from auditor.fix.floor import TorchFloor
    from auditor.pipeline.runtime import catalogue_for

    paths = [s.path for s in result.files if s.kind in ("python", "setup-py")]
    return find_device_owner(result.scan_root or result.root, paths, result.floor or TorchFloor(),
                             catalogue_for(result.settings))


def _preview(result):
    """What `audit --fix` would leave (a dry run: nothing is written), for the plan's counts."""
    # the fixer only when a plan for a target is built (the ranking and the other paths do without it)
    from auditor.fix.preview import preview_fixes

    return preview_fixes(result)


def _render(document: dict, fmt: str, markdown, result, found: Scan) -> str:
    if fmt == "json":
        return json.dumps(document, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
    if fmt == "html":
        # only --format html: the page and its report dict
        from auditor.portability.score import compute_scores
        from auditor.report.html_report import render_html
        from auditor.report.json_report import build_report

        shipped, _errors = result.headline()  # the page's scores judge what ships, as the report's do
        report = build_report(result, compute_scores(shipped, part=result.shipped_part()))
        # the page's components table and filter: the parts the plan judged (build_report gives
        # them only with a Report)
        report["components"] = [judged.to_dict() for judged in found.components]
        return render_html(report, for_page(document, plan_catalogue().effort.order))  # the plan's steps, or the ranking
    return markdown(document)

"""The report model: what one scan found (`ScanResult`, built by auditor.pipeline.scan) and what
every reporter renders (`Report`: the scan with its scores, gate, baseline and changed lines).
Reporters import this module, never the pipeline."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING

from auditor import targets
from auditor.config.settings import Settings
from auditor.portability.verdict import Part, features, verdicts

if TYPE_CHECKING:
    from auditor.analysis.components import Component, Layout
    from auditor.checks.base import Rule
    from auditor.discover.files import SourceFile
    from auditor.fix.clean import FixSummary
    from auditor.fix.floor import TorchFloor
    from auditor.gates.baseline import Comparison
    from auditor.gates.changed_lines import ChangedLines
    from auditor.gates.judge import GateOutcome
    from auditor.model import FileError, Finding
    from auditor.portability.score import Scores
    from auditor.portability.verdict import Feature, Verdict


@dataclass
class ScanResult:
    root: str  # the folder reported paths are relative to: the working directory
    files: list[SourceFile] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    errors: list[FileError] = field(default_factory=list)
    # Findings a comment or per-file-ignores silenced, with how: inline, file, per-file-ignores.
    suppressed: list[tuple[Finding, str]] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)  # paths named but not read, and why
    scan_root: str = ""  # the folder scanned (the common folder of the paths given)
    settings: Settings = field(default_factory=Settings, repr=False)
    files_parsed: int = 0  # parsed in this run (files served from the cache are not counted)
    files_cached: int = 0  # results reused from the cache
    warnings: list[str] = field(default_factory=list)
    select: list[str] | None = None
    ignore: list[str] | None = None
    selected: list[Rule] | None = field(default=None, repr=False)
    floor: TorchFloor | None = None  # the project's torch floor the fixes were judged against
    layout: Layout | None = field(default=None, repr=False)  # the components (auditor.analysis.components)
    fixes: FixSummary | None = field(default=None, repr=False)  # --fix / --diff: what it did (auditor/fix/clean.py)
    _relative: dict[str, str] = field(default_factory=dict, repr=False)
    _sizes: dict[str, tuple[int, set[str]]] | None = field(default=None, repr=False)

    def component_of(self, path: str) -> str | None:
        """The component a reported path (relative to `root`) belongs to; None without a layout."""
        if self.layout is None:
            return None
        return self.layout.of(self._relative_path(path))

    def _relative_path(self, path: str) -> str:
        """A reported path relative to the scan root, as the layout reads it."""
        relative = self._relative.get(path)
        if relative is None:
            scan_root = self.scan_root or self.root
            if scan_root == self.root:
                relative = path
            else:
                relative = os.path.relpath(os.path.join(self.root, path), scan_root).replace(os.sep, "/")
                relative = path if relative.startswith("../") else relative
            self._relative[path] = relative
        return relative

    def part(self, names: set[str] | frozenset[str]) -> Part:
        """The size of the components named and their install files, for their verdicts: a tie that
        raises in a few of many files degrades them, one in a file installed or built with them fails
        them (auditor.portability.verdict.Part)."""
        if self.layout is None:
            return Part()
        sizes = self._part_sizes()
        return Part(sum(sizes.get(name, (0, set()))[0] for name in names),
                    frozenset().union(*(sizes.get(name, (0, set()))[1] for name in names)))

    def _part_sizes(self) -> dict[str, tuple[int, set[str]]]:
        """Per component: its Python modules (configs and scripts are many, and rarely hold a tie)
        and the reported paths of its files installed or built with it; counted once per run."""
        if self._sizes is None:
            self._sizes = {}
            for source in self.files:
                name = self.component_of(source.display) or ""
                count, installed = self._sizes.setdefault(name, (0, set()))
                if self.layout is not None and self.layout.installs(self._relative_path(source.display)):
                    installed.add(source.display)
                elif source.kind == "python":
                    self._sizes[name] = (count + 1, installed)
        return self._sizes

    def components(self) -> list[Component]:
        """The components the scanned files belong to, shipped ones first."""
        if self.layout is None:
            return []
        for source in self.files:
            self.component_of(source.display)
        return self.layout.components()

    def headline(self) -> tuple[list[Finding], list[FileError]]:
        """The findings and errors of what the repository ships (its shipped components; when
        none is shipped, every file but tests, examples, docs, benchmarks, containers and CI; when
        there is none of those either, every file: a repository of examples is its examples)."""
        shipped = self._headline_components()
        if shipped is None:
            return self.findings, self.errors
        return ([f for f in self.findings if self.component_of(f.path) in shipped],
                [e for e in self.errors if self.component_of(e.path) in shipped])

    def shipped_part(self) -> Part:
        """The size and install files of what the repository ships (`headline`'s components)."""
        shipped = self._headline_components()
        if shipped is None:
            return self.part({c.name for c in self.components()}) if self.layout is not None else Part()
        return self.part(shipped)

    def headline_verdicts(self) -> dict[str, Verdict]:
        """The headline's verdict per target (what the repository ships)."""
        return verdicts(*self.headline(), part=self.shipped_part())

    def _headline_components(self) -> set[str] | None:
        """The names of the components the headline judges; None: every file."""
        if self.layout is None:
            return None
        components = self.components()
        shipped = {c.name for c in components if c.shipped}
        if not shipped:
            shipped = {c.name for c in components if c.kind in self.layout.fallback}
        return shipped or None

    @property
    def rules(self) -> list[Rule]:
        """The selected rules, loaded on first use (a warm run does not need them)."""
        if self.selected is None:
            # the rules load on first use: a run served from the cache never needs them
            from auditor.checks.registry import select_rules

            self.selected = select_rules(self.select, self.ignore)
        return self.selected


@dataclass
class Report:
    """One run, as every reporter sees it.

    `findings` and `errors` are what the run reports: after suppressions, and with a baseline or
    --diff-base only what is new or on changed lines. `scores` always count every finding that is
    not suppressed (a baseline hides old lock-in from the gate, not from the score)."""

    result: ScanResult
    scores: Scores
    findings: list[Finding]
    errors: list[FileError]
    gate: GateOutcome
    settings: Settings
    suppressed: list[tuple[Finding, str]] = field(default_factory=list)  # listed with --show-suppressed
    baseline: Comparison | None = None
    changed: ChangedLines | None = None
    hidden_by_diff: int = 0  # findings off the changed lines
    hook: bool = False  # a pre-commit run on files: findings only, no whole-repository numbers
    quiet: bool = False
    color: str = "auto"
    to_file: bool = False
    unsafe_fixes: bool = False  # --unsafe-fixes: unsafe fixes count as fixable (`[*]`) too
    summary_only: bool = False  # --summary-only: the verdicts, scores and summary without the findings
    # --target narrows the report to these targets (None: every target); `hidden_by_target` counts
    # the findings left out because they only matter on other targets (auditor.report.narrow).
    focus: tuple[str, ...] | None = None
    hidden_by_target: int = 0

    @property
    def root(self) -> str:
        return self.result.root

    @property
    def shown_targets(self) -> tuple[str, ...]:
        """The targets every per-target part of the report shows, in registry order."""
        every = targets.names()
        return every if self.focus is None else tuple(t for t in every if t in self.focus)

    @cached_property
    def verdicts(self) -> dict[str, Verdict]:
        """Per-target verdicts (runs, runs-degraded, fails), judged like the scores on every
        finding that is not suppressed."""
        return self.result.headline_verdicts()

    @cached_property
    def components(self) -> list[ComponentJudgement]:
        """Every component with its own verdicts and scores, judged like the headline on its own
        findings (a tests component counts its test-only findings)."""
        return judge_components(self.result, self.settings.overall_targets)


def judge_components(result: ScanResult, overall_targets: tuple[str, ...] = ()) -> list[ComponentJudgement]:
    """Every component of `result` with its own verdicts and scores (the report's and the plan's)."""
    # the scores: only a report that shows components (or a plan)
    from auditor.model import withheld_reason
    from auditor.portability.score import compute_scores

    by_name: dict[str, tuple[list[Finding], list[FileError]]] = {}
    for f in result.findings:
        by_name.setdefault(result.component_of(f.path) or "", ([], []))[0].append(f)
    for e in result.errors:
        by_name.setdefault(result.component_of(e.path) or "", ([], []))[1].append(e)
    out = []
    for component in result.components():
        findings, errors = by_name.get(component.name, ([], []))
        tests, part = component.kind == "tests", result.part({component.name})
        out.append(ComponentJudgement(
            component, verdicts(findings, errors, count_tests=tests, part=part),
            compute_scores(findings, overall_targets, withheld_reason(errors), part, tests), len(findings),
            tuple(features(findings if tests else [f for f in findings if "test" not in (f.context or "").split("+")]))))
    return out


@dataclass(frozen=True)
class ComponentJudgement:
    """One component of the repository with its verdict and score per target."""

    component: Component
    verdicts: dict[str, Verdict]
    scores: Scores
    findings: int
    features: tuple[Feature, ...] = ()  # its opt-in NVIDIA-only features, each with its own verdicts

    def to_dict(self, shown: tuple[str, ...] | None = None) -> dict:
        """`shown`: the targets the report shows (--target), `overall` staying in the scores."""
        keep = set(self.verdicts) if shown is None else set(shown)
        return {**self.component.to_dict(), "shipped": self.component.shipped, "findings": self.findings,
                "features": [feature.to_dict() for feature in self.features],
                "verdicts": {t: v.to_dict() for t, v in self.verdicts.items() if t in keep},
                "scores": {t: v for t, v in self.scores.score_map().items() if t == "overall" or t in keep}}

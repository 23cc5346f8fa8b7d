"""The report model: what one scan found (`ScanResult`, built by auditor.pipeline.scan) and what
every reporter renders (`Report`: the scan with its scores, gate, baseline and changed lines).
Reporters import this module, never the pipeline."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING

from auditor import targets
from auditor.config.settings import Settings
from auditor.portability.verdict import verdicts

if TYPE_CHECKING:
    from auditor.checks.base import Rule
    from auditor.discover.files import SourceFile
    from auditor.fix.floor import TorchFloor
    from auditor.gates.baseline import Comparison
    from auditor.gates.changed_lines import ChangedLines
    from auditor.gates.judge import GateOutcome
    from auditor.model import FileError, Finding
    from auditor.portability.score import Scores
    from auditor.portability.verdict import Verdict


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
    # The repository's components ({name, kind, paths, verdicts, scores}), when the run judged them.
    components: list[dict] | None = None

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
        return verdicts(self.result.findings, self.result.errors)

"""The gate: whether a run passes. Exit 0 passed, 1 failed (`--exit-zero` reports a failure but
exits 0); usage and configuration errors exit 2 before a gate is ever judged.

Gates are what the settings ask for: `fail-under` (scores, per target), `fail-on` (findings at or
above a severity), `fail-on-regression` (a score below the baseline's). With any of them on:
- only what is reported counts: new findings against a baseline, findings on changed lines with
  --diff-base; old lock-in neither fails nor passes the gate, the scores still count all of it;
- files that could not be audited fail it, unless excluded or recorded in the baseline;
- a run that audited nothing fails it (a typo in a path or an exclude must not pass CI), except
  a pre-commit batch whose files the configuration excludes (--force-exclude): nothing to check.
Under pre-commit, a run on files (the per-file hook) gates at `minor` unless told otherwise.

Whatever the gates, a run in which files failed with an internal error (the auditor's own bug)
fails with exit 2, --exit-zero or not: its findings are incomplete, so no score may pass."""

from __future__ import annotations

from dataclasses import dataclass, field

from auditor.model import FileError, Finding, Severity

HOOK_FAIL_ON = Severity.MINOR
INCOMPLETE_EXIT = 2  # the exit code of an internal error (README, "Output and exit codes")


@dataclass
class GateOutcome:
    passed: bool = True
    exit_code: int = 0
    reasons: list[str] = field(default_factory=list)  # why it failed, one line each
    checks: list[str] = field(default_factory=list)  # the gates that were judged

    def to_dict(self) -> dict:
        return {"passed": self.passed, "exit_code": self.exit_code, "reasons": list(self.reasons),
                "checks": list(self.checks)}


@dataclass
class GateInput:
    findings: list[Finding]  # what the run reports (after suppressions, baseline, changed lines)
    errors: list[FileError]  # files that could not be audited, as reported
    scores: dict[str, float | None]  # "overall" and each target (None: withheld)
    files: int  # files audited
    nothing_to_check: bool = False  # every path named was excluded on purpose (--force-exclude)
    baseline_scores: dict[str, float] | None = None
    incomplete: str | None = None  # why the scores are withheld (files failed with an internal error)


def evaluate(data: GateInput, fail_under: tuple[tuple[str, float], ...], fail_on: str | None,
             fail_on_regression: bool, exit_zero: bool = False) -> GateOutcome:
    outcome = GateOutcome()
    reasons = outcome.reasons
    for target, threshold in fail_under:
        outcome.checks.append(f"fail-under {target} {threshold:g}")
        value = data.scores.get(target, 100.0)
        if value is not None and value < threshold:
            reasons.append(f"{target} score {value:.1f} is below --fail-under {threshold:g}")
    if fail_on is not None:
        level = Severity(fail_on)
        outcome.checks.append(f"fail-on {level.value}")
        worst = [f for f in data.findings if f.severity and Severity(f.severity).rank >= level.rank]
        if worst:
            reasons.append(f"{len(worst)} finding(s) at or above {level.value} (--fail-on)")
    if fail_on_regression:
        outcome.checks.append("fail-on-regression")
        if data.baseline_scores is None:
            reasons.append("--fail-on-regression needs a baseline (--baseline FILE or `baseline` in the configuration)")
        else:
            for target, before in sorted(data.baseline_scores.items()):
                now = data.scores.get(target)
                if now is not None and now < before:
                    reasons.append(f"{target} score {now:.1f} is below the baseline's {before:.1f} (--fail-on-regression)")
    if outcome.checks:
        if data.errors:
            reasons.append(f"{len(data.errors)} file(s) could not be audited (see errors); fix or exclude them, "
                           f"or record them with --write-baseline")
        if data.files == 0 and not data.nothing_to_check:
            reasons.append("no file was audited, so nothing was checked (check the paths and excludes)")
    outcome.passed = not reasons
    outcome.exit_code = 0 if outcome.passed or exit_zero else 1
    if data.incomplete is not None:
        outcome.checks.append("complete")
        reasons.append(data.incomplete)
        outcome.passed, outcome.exit_code = False, INCOMPLETE_EXIT
    return outcome

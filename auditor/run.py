"""One `audit scan` run after its options are read: scan, set the baseline and the changed lines
against what was found, judge the gate, render the report, and give the exit code. The CLI
(auditor/cli.py) only turns options into Settings; new run-time steps slot in here."""

from __future__ import annotations

import io
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from auditor.config import ConfigError, nearest
from auditor.config.settings import Settings
from auditor.console import silence_stdout, stderr_line
from auditor.gates.focus import focus_of, narrow
from auditor.gates.judge import HOOK_FAIL_ON, GateInput, evaluate
from auditor.model import FileError, Finding, withheld_reason
from auditor.pipeline.scan import scan
from auditor.portability.score import Scores, compute_scores
from auditor.report import REPORTERS, render
from auditor.report.model import Report, ScanResult
from auditor.sandbox.safe_files import requested_output

TRUTHY_OFF = ("", "0", "false")
STATISTICS_FORMATS = ("text", "concise", "json")


@dataclass
class Request:
    """What this invocation asks beyond the settings: where the report goes, and one-off actions."""

    output: Path | None = None
    color: str = "auto"
    write_baseline: Path | None = None
    add_noqa: bool = False
    fix: bool = False  # apply the fixes, then report what remains
    diff: bool = False  # print the fixes as a diff and write nothing
    unsafe_fixes: bool = False
    show_fixes: bool = False
    exit_non_zero_on_fix: bool = False  # with --fix: exit 1 when a file changed (ruff's)
    show_files: bool = False  # list the files the run would audit, and exit
    show_settings: bool = False  # print the settings, and exit
    stdin_filename: str | None = None  # with `-`: the source comes from stdin, checked as this file


def _env(name: str) -> bool:
    return os.environ.get(name, "").lower() not in TRUTHY_OFF


def under_pre_commit() -> bool:
    return _env("PRE_COMMIT")


def hook_run(paths: list[str]) -> bool:
    """A pre-commit batch: pre-commit hands over files; a whole-repository run names a folder."""
    return under_pre_commit() and all(not os.path.isdir(p) for p in paths)


def choose_format(settings: Settings, stdout: TextIO) -> str:
    """--format, else the configuration, else concise under pre-commit and in CI off a terminal."""
    chosen = settings.output_format
    if chosen is not None:
        if chosen not in REPORTERS:
            raise ConfigError(f"unknown output format {chosen!r} in {settings.origin('output-format')}"
                              f"{nearest(chosen, list(REPORTERS))}; choose from {', '.join(REPORTERS)}")
        return chosen
    if under_pre_commit():
        return "concise"
    try:
        terminal = stdout.isatty()
    except (AttributeError, ValueError):
        terminal = False
    if (_env("GITHUB_ACTIONS") or _env("CI")) and not terminal:
        return "concise"
    return "text"


# What this run may say on stderr beyond errors: warnings and notes (not with --quiet or --silent),
# why a gate failed (not with --silent).
_SAYS = {"notes": True, "reasons": True}


def _show(paths: list[str], settings: Settings, request: Request) -> int:
    """--show-settings, --show-files: print what the run would use instead of running it."""
    lines: list[str] = []
    if request.show_settings:
        # only --show-settings
        from auditor.config.show import settings_lines

        lines += settings_lines(settings)
    if request.show_files:
        # the walk's modules, only for --show-files (a scan loads them in auditor.cache.reuse)
        from auditor.discover.walk import discover

        found = discover(paths, os.getcwd(), settings.respect_gitignore, settings.excludes,
                         force_exclude=settings.force_exclude)
        lines += [source.display for source in found.files]
    # no scan ran: the folders named (a file's own folder) and the cwd are where no link is followed
    guarded = [os.path.abspath(path if os.path.isdir(path) else os.path.dirname(path) or ".") for path in paths]
    _write_text("".join(f"{line}\n" for line in lines), request.output, [*guarded, os.getcwd()])
    return 0


def _note(message: str) -> None:
    if _SAYS["notes"]:
        stderr_line(f"audit: {message}")


def check_request(settings: Settings, request: Request) -> None:
    """Combinations that cannot mean what they say: exit 2 before anything is read."""
    if settings.fail_on_regression and settings.baseline is None and request.write_baseline is None:
        where = settings.origin("fail-on-regression")
        raise ConfigError(f"{'--fail-on-regression' if where.startswith('--') else f'fail-on-regression in {where}'} "
                          f"compares the scores with a baseline's, and no baseline is given: add --baseline FILE (or "
                          f"`baseline` in the configuration), or write one first with --write-baseline FILE")
    if request.exit_non_zero_on_fix and not request.fix:
        raise ConfigError("--exit-non-zero-on-fix judges what --fix changed; add --fix")
    if request.stdin_filename is not None and (request.add_noqa or request.show_files):
        raise ConfigError(f"{'--add-noqa' if request.add_noqa else '--show-files'} works on files, not on standard "
                          f"input (`-`); give the file's path instead")


def execute(paths: list[str], settings: Settings, request: Request) -> int:
    check_request(settings, request)
    _SAYS.update(notes=not (settings.quiet or settings.silent), reasons=not settings.silent)
    if request.show_settings or request.show_files:
        return _show(paths, settings, request)
    fmt = choose_format(settings, sys.stdout)
    if settings.statistics and fmt not in STATISTICS_FORMATS:
        raise ConfigError(f"--statistics works with --format {', '.join(STATISTICS_FORMATS)}, not {fmt}")
    output = request.output
    if output is not None and not output.parent.is_dir():
        raise ConfigError(f"cannot write {output}: folder {output.parent} does not exist; choose a writable --output path")
    hook = hook_run(paths)
    changed_by_fix = False
    stdin = request.stdin_filename
    if stdin is not None:
        # only `audit - --stdin-filename PATH`
        from auditor.pipeline.stdin import read_stdin, scan_stdin

        data, oversized = read_stdin(sys.stdin.buffer, settings.max_bytes)
        result, runtime = scan_stdin(stdin, data, oversized, settings, os.getcwd())
    else:
        result = scan(paths, settings, base=os.getcwd())
    for warning in result.warnings:
        _note(f"warning: {warning}")
    nothing_to_check = _explain_skipped(result, paths)
    if stdin is not None and (request.fix or request.diff) and not oversized:
        fixed_data = _fix_stdin(result, runtime, data, settings, request, output)
        if request.diff:
            return 1 if fixed_data != data else 0
        if fixed_data != data:
            result = scan_stdin(stdin, fixed_data, False, settings, os.getcwd())[0]
            changed_by_fix = True
    elif request.fix or request.diff:
        # the fixer brings libcst and the rules: only --fix and --diff load it
        from auditor.fix.run import run_fixes

        fixed = run_fixes(result, settings, request.unsafe_fixes, write=not request.diff, show=request.show_fixes,
                          rescan=lambda: scan(paths, settings, base=os.getcwd()))
        if request.diff:  # the diff is the output; ruff's exit code: 1 when there is something to fix
            if not settings.silent:
                _write_text(fixed.run.diff(), output, guarded_folders(result))
            return 1 if fixed.run.changed else 0
        result = fixed.result
        changed_by_fix = bool(fixed.run.changed)
    if request.add_noqa:
        return _add_noqa(result)
    shipped, shipped_errors = result.headline()  # the headline judges what the repository ships
    scores = compute_scores(shipped, settings.overall_targets, withheld_reason(shipped_errors), result.shipped_part())
    findings, errors = result.findings, result.errors
    comparison = None
    if request.write_baseline is not None:
        # only --write-baseline
        from auditor.gates.baseline import write_baseline

        count = write_baseline(str(request.write_baseline), findings, errors, result.root, _score_map(scores),
                               guarded_folders(result))
        if scores.withheld is not None:
            _note(f"the baseline records no scores: {scores.withheld}")
        _note(f"wrote {count} finding(s) and {len(errors)} unreadable file(s) to the baseline {request.write_baseline}")
    elif settings.baseline is not None:
        # only with a baseline
        from auditor.gates.baseline import compare, load_baseline

        comparison = compare(load_baseline(settings.baseline), findings, errors, result.root)
        findings, errors = comparison.new, comparison.new_errors
    changed, hidden = None, 0
    if settings.diff_base is not None:
        # only --diff-base (it runs git)
        from auditor.gates.changed_lines import changed_lines

        changed = changed_lines(settings.diff_base, result.scan_root)
        findings, errors, hidden = _on_changed_lines(result, findings, errors, changed)
    focus = focus_of(settings)
    findings, off_focus = narrow(findings, focus)
    gate = _judge(result, settings, findings, errors, scores, comparison, hook, nothing_to_check,
                  skip=request.write_baseline is not None)
    suppressed = list(result.suppressed)
    if comparison is not None:
        suppressed += [(f, "baseline") for f in comparison.known]
        suppressed.sort(key=lambda item: item[0].sort_key())
    report = Report(result, scores, findings, errors, gate, settings, suppressed, comparison, changed, hidden,
                    hook=hook, quiet=settings.quiet, color=request.color, to_file=output is not None,
                    unsafe_fixes=request.unsafe_fixes, summary_only=settings.summary_only, focus=focus,
                    hidden_by_target=off_focus)
    if not settings.silent and not (stdin is not None and request.fix and output is None):
        _write(report, fmt, output)  # `--fix -` gives stdout the fixed source; the report only to --output
    if _SAYS["reasons"]:
        for reason in gate.reasons:
            stderr_line(f"audit: {reason}")
    if request.exit_non_zero_on_fix and changed_by_fix and not settings.exit_zero and gate.exit_code == 0:
        return 1  # ruff's --exit-non-zero-on-fix: a commit hook that fixed files must stop the commit
    return gate.exit_code


def _fix_stdin(result: ScanResult, runtime: object, data: bytes, settings: Settings, request: Request,
               output: Path | None) -> bytes:
    """`--fix -` writes the fixed source (the input when nothing applies) to stdout, as ruff does;
    `--diff -` prints the diff. Nothing is written to disk. The fixed bytes come back."""
    # the fixer: only `--fix -` and `--diff -`
    from auditor.fix.apply import FixRun
    from auditor.pipeline.stdin import fix_stdin

    outcome, fixed = fix_stdin(result, runtime, data, request.unsafe_fixes)  # type: ignore[arg-type]
    if outcome.error is not None:
        _note(f"warning: {outcome.error.path}: {outcome.error.message}")
    count = sum(outcome.applied.values()) if outcome.changed else 0
    _note(f"{'would fix' if request.diff else 'fixed'} {count} finding{'s' if count != 1 else ''} in "
          f"{1 if outcome.changed else 0} file{'' if outcome.changed else 's'}")
    if request.diff:
        if not settings.silent:
            _write_text(FixRun([outcome]).diff(), output, guarded_folders(result))
    elif sys.stdout is not None:
        try:
            sys.stdout.flush()
            sys.stdout.buffer.write(fixed)
            sys.stdout.buffer.flush()
        except BrokenPipeError:
            silence_stdout()
    return fixed


def _score_map(scores: Scores) -> dict[str, float]:
    """The scores a baseline records and the gates judge; none when they are withheld."""
    return {key: value for key, value in scores.score_map().items() if value is not None}


def _explain_skipped(result: ScanResult, paths: list[str]) -> bool:
    """Say on stderr what was named but not read, and when nothing was audited. True when every
    path named was excluded on purpose (a pre-commit batch of excluded files: nothing to check)."""
    excluded = [path for path, why in result.skipped if why.startswith("excluded")]
    for path, why in result.skipped:
        if not why.startswith("excluded"):
            _note(f"warning: skipped {path}: {why}")
    if result.files:
        return False
    purposely = bool(excluded) and len(excluded) == len(paths)
    if purposely:
        _note("nothing to audit: every file given is excluded by the configuration")
    else:
        _note(f"warning: no file audited under {', '.join(paths)}: no Python, requirements, pyproject.toml, "
              f"setup.cfg or CUDA file found (check the paths and --exclude)")
    return purposely


def _on_changed_lines(result: ScanResult, findings: list[Finding], errors: list[FileError],
                      changed: object) -> tuple[list[Finding], list[FileError], int]:
    absolute: dict[str, str] = {}

    def where(path: str) -> str:
        found = absolute.get(path)
        if found is None:
            found = absolute[path] = os.path.realpath(os.path.join(result.root, path))
        return found

    changed.files = {os.path.realpath(p): v for p, v in changed.files.items()}  # compare real paths on both sides
    kept = [f for f in findings if changed.touches(where(f.path), f.line, f.end_line)]
    kept_errors = [e for e in errors if changed.has_file(where(e.path))]
    return kept, kept_errors, len(findings) - len(kept)


def _judge(result: ScanResult, settings: Settings, findings: list[Finding], errors: list[FileError], scores: Scores,
           comparison: object, hook: bool, nothing_to_check: bool, skip: bool) -> object:
    if skip:  # --write-baseline records; it judges only whether the run is complete
        return evaluate(GateInput(findings, errors, scores.score_map(), len(result.files), nothing_to_check,
                                  incomplete=scores.withheld), (), None, False)
    fail_on = settings.fail_on
    if fail_on is None and hook and "fail-on" not in dict(settings.origins):
        fail_on = HOOK_FAIL_ON.value
    data = GateInput(findings, errors, scores.score_map(), len(result.files), nothing_to_check,
                     comparison.scores if comparison is not None else None, incomplete=scores.withheld)
    return evaluate(data, settings.fail_under, fail_on, settings.fail_on_regression, settings.exit_zero)


def _add_noqa(result: ScanResult) -> int:
    # only --add-noqa
    from auditor.gates.add_noqa import add_noqa

    files = {f.display: (f.path, f.kind) for f in result.files}
    outcome = add_noqa(result.findings, files, result.scan_root or result.root)
    for path, why in sorted(set(outcome.skipped)):
        _note(f"warning: no suppression added in {path}: {why}")
    _note(f"added {outcome.added} suppression comment(s) in {outcome.files} file(s)")
    return 0


def guarded_folders(result: ScanResult) -> list[str]:
    """Where a write must never follow a link: the scanned folder and the working directory."""
    return [folder for folder in (result.scan_root, result.root, os.getcwd()) if folder]


def _write_text(text: str, output: Path | None, guarded: list[str]) -> None:
    _write_with(lambda stream: stream.write(text), output, guarded)


def _write(report: Report, fmt: str, output: Path | None) -> None:
    def write(stream: TextIO) -> None:
        if report.settings.statistics:
            stream.write(statistics(report, fmt))
        else:
            render(fmt, report, stream)

    _write_with(write, output, guarded_folders(report.result))


def _write_with(write: Callable[[TextIO], object], output: Path | None, guarded: list[str]) -> None:
    """stdout, or the file the user named through auditor/sandbox/safe_files.py (never through a link the
    checkout planted; a regular file replaced atomically)."""
    try:
        if output is None:
            if sys.stdout is not None:  # else stdout is closed: there is nowhere to write the report
                write(sys.stdout)
                sys.stdout.flush()
            return
        with requested_output(str(output), guarded) as raw:
            # backslashreplace: a stray lone surrogate becomes `\udcff` text instead of a crash
            stream = io.TextIOWrapper(raw, encoding="utf-8", errors="backslashreplace")
            write(stream)
            stream.flush()
            stream.detach()
    except BrokenPipeError:  # `audit . | head`: the reader has what it wanted; keep the gate's code
        silence_stdout()
    except OSError as exc:  # a full disk, /dev/full: a plain error, exit 2
        if output is None:
            silence_stdout()
        where = output if output is not None else "the report to stdout"
        raise ConfigError(f"cannot write {where}: {exc.strerror or exc}") from None


def statistics(report: Report, fmt: str) -> str:
    """ruff's --statistics: one line per rule, most findings first: count, code, `[*]` when --fix
    can rewrite some of them (`[ ]` beside it for the others, so the names line up), name. JSON
    adds `fixable_count`, how many of them are fixable, as ruff does."""
    import json
    from collections import Counter

    from auditor.fix.applicability import fixable  # only --statistics

    counts = Counter((f.rule, f.name) for f in report.findings)
    fixes = Counter(f.rule for f in report.findings if fixable(f, report.unsafe_fixes))
    rows = sorted(counts.items(), key=lambda item: (-item[1], item[0][0]))
    if fmt == "json":
        return json.dumps([{"code": code, "name": name, "count": n, "fixable": code in fixes,
                            "fixable_count": fixes.get(code, 0)} for (code, name), n in rows], indent=2) + "\n"
    width = max((len(str(n)) for _, n in rows), default=1)
    code_width = max((len(code) for (code, _), _ in rows), default=1)
    mark = (lambda code: "[*] " if code in fixes else "[ ] ") if fixes else (lambda code: "")
    return "".join(f"{n:>{width}}\t{code:<{code_width}}\t{mark(code)}{name}\n" for (code, name), n in rows)

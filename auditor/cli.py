"""The `audit` command line: `audit PATH...` scans (the default command), `audit rules` lists
the rules, `audit explain CODE_OR_NAME` prints one rule's docs.

Exit codes: 0 the run succeeded and the gate passed; 1 a --fail-under / --fail-on gate failed;
2 a usage error, a missing path or an internal error, with one line on stderr saying what to do.
The report goes to stdout (or --output); warnings and gate messages go to stderr, so
`--format json` output is always parseable.

Colour (text report): `--color auto` colours a terminal unless NO_COLOR is set, and a pipe when
FORCE_COLOR is set; `--color always` and `--color never` win over both variables and the terminal
type. A file written with --output gets no colour unless `--color always`."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, TextIO

import typer

from auditor import TOOL_NAME, __version__

if TYPE_CHECKING:  # kept out of start-up: `audit --version` imports none of these
    from rich.console import Console

    from auditor.engine import ScanResult
    from auditor.model import Severity
    from auditor.score import Scores

COMMANDS = ("scan", "rules", "explain")
GROUP_OPTIONS = ("--help", "-h", "--version", "-V")

app = typer.Typer(
    name="audit", add_completion=False, no_args_is_help=False, pretty_exceptions_enable=False,
    help="Find NVIDIA lock-in in PyTorch code, score portability per target, suggest portable rewrites.",
    context_settings={"help_option_names": ["-h", "--help"]},
)


class UsageProblem(Exception):
    """A problem with what the user asked for: exit 2 with this one line."""


class OutputFormat(StrEnum):
    text = "text"
    json = "json"


class Color(StrEnum):
    auto = "auto"
    always = "always"
    never = "never"


def _version(value: bool) -> None:
    if value:
        typer.echo(f"{TOOL_NAME} {__version__}")
        raise typer.Exit(0)


@app.callback()
def main_callback(
    version: Annotated[bool, typer.Option("--version", "-V", callback=_version, is_eager=True,
                                          help="Print the version and exit.")] = False,
) -> None:
    """Find NVIDIA lock-in in PyTorch code. `audit PATH` is `audit scan PATH`."""


def _split(values: list[str] | None) -> list[str] | None:
    if not values:
        return None
    return [part.strip() for value in values for part in value.split(",") if part.strip()]


@app.command()
def scan(
    paths: Annotated[list[Path] | None, typer.Argument(
        help="Directories or files to scan (default: the current directory).", show_default=False)] = None,
    output_format: Annotated[OutputFormat, typer.Option("--format", "-f", help="Report format.")] = OutputFormat.text,
    output: Annotated[Path | None, typer.Option("--output", "-o", help="Write the report to FILE instead of stdout.")] = None,
    fail_under: Annotated[float | None, typer.Option(
        "--fail-under", min=0, max=100, help="Exit 1 when a chosen score (see --target) is below N.")] = None,
    target: Annotated[list[str] | None, typer.Option(
        "--target", "-t", help="Score(s) the --fail-under gate checks: overall (default), rocm, tpu, trainium, mps, xpu, cpu.")] = None,
    fail_on: Annotated[str | None, typer.Option(
        "--fail-on", help="Exit 1 when a finding of this severity or worse exists: blocker, major, minor, info.")] = None,
    select: Annotated[list[str] | None, typer.Option(
        "--select", help="Only these rules: codes, prefixes (LK2), names, or ALL; comma-separated.")] = None,
    ignore: Annotated[list[str] | None, typer.Option("--ignore", help="Skip these rules (same forms as --select).")] = None,
    exclude: Annotated[list[str] | None, typer.Option("--exclude", help="Skip files and folders matching this glob.")] = None,
    respect_gitignore: Annotated[bool, typer.Option(
        "--respect-gitignore/--no-respect-gitignore", help="Skip what .gitignore files ignore.")] = True,
    max_file_size: Annotated[float, typer.Option("--max-file-size", min=0.001, help="Skip files larger than this many MB.")] = 10.0,
    color: Annotated[Color, typer.Option("--color", help="Colour in the text report.")] = Color.auto,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="Text report: only the summary and the scores.")] = False,
    jobs: Annotated[int, typer.Option("--jobs", "-j", min=0, help="Worker processes (0: every core available).")] = 0,
    no_cache: Annotated[bool, typer.Option("--no-cache", help="Neither read nor write the results cache.")] = False,
    cache_dir: Annotated[Path | None, typer.Option(
        "--cache-dir", help="Where the results cache lives (default: .lockin_auditor_cache/ at the project root).",
        show_default=False)] = None,
) -> int:
    """Scan PATHS for NVIDIA lock-in and report findings and portability scores."""
    from auditor.engine import ScanOptions
    from auditor.engine import scan as run_scan
    from auditor.registry import RuleSelectionError
    from auditor.score import compute_scores

    given = _existing_paths(paths)
    targets = _targets(target)
    failing_severity = _severity(fail_on)
    if output is not None and not output.parent.is_dir():
        raise UsageProblem(f"cannot write {output}: folder {output.parent} does not exist; choose a writable --output path")
    options = ScanOptions(select=_split(select), ignore=_split(ignore), respect_gitignore=respect_gitignore,
                          excludes=tuple(_split(exclude) or ()), max_bytes=int(max_file_size * 1024 * 1024),
                          jobs=jobs or None, cache=not no_cache, cache_dir=str(cache_dir) if cache_dir else None,
                          progress=_show_progress(output_format))
    try:
        result = run_scan(given, options)
    except RuleSelectionError as exc:
        raise UsageProblem(str(exc)) from None
    scores = compute_scores(result.findings)
    _warn(result.warnings)
    outcome = _gate(result, scores, fail_under, targets, failing_severity)
    try:
        _write_report(result, scores, output_format, output, color, quiet)
    except BrokenPipeError:  # `audit . | head`: the reader has what it wanted; keep the gate's code
        _silence_stdout()
    for message in outcome.messages:
        print(f"audit: {message}", file=sys.stderr)
    return outcome.code


def _existing_paths(paths: list[Path] | None) -> list[str]:
    given = [str(p) for p in paths] if paths else ["."]
    for path in given:
        if not os.path.lexists(path):
            raise UsageProblem(f"path not found: {path} (give an existing directory or file, e.g. `audit .`)")
    return given


def _targets(values: list[str] | None) -> list[str]:
    from auditor.model import TARGETS

    targets = [name.lower() for name in _split(values) or ["overall"]]
    for name in targets:
        if name not in ("overall", *TARGETS):
            raise UsageProblem(f"unknown --target {name!r}; choose from overall, {', '.join(TARGETS)}")
    return targets


def _severity(value: str | None) -> Severity | None:
    from auditor.model import Severity

    if value is None:
        return None
    try:
        return Severity(value.lower())
    except ValueError:
        raise UsageProblem(f"unknown --fail-on {value!r}; choose from blocker, major, minor, info") from None


def _show_progress(output_format: OutputFormat) -> bool:
    """A progress bar only where a person watches: stderr is a terminal, not CI, not pre-commit."""
    if output_format is not OutputFormat.text or not sys.stderr.isatty():
        return False
    return not any(os.environ.get(name, "").lower() not in ("", "0", "false") for name in ("CI", "PRE_COMMIT"))


def _warn(warnings: Iterable[str]) -> None:
    for warning in warnings:
        print(f"audit: warning: {warning}", file=sys.stderr)


def _silence_stdout() -> None:
    """Point stdout at /dev/null so the interpreter's final flush cannot fail again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass


def _raise_broken_pipe() -> None:
    # rich's default turns a closed pipe into SystemExit(1), which would read as a failed gate.
    raise BrokenPipeError


def _console(stream: TextIO, color: Color, to_file: bool) -> Console:
    """The text report's console; see the module docstring for how colour is chosen."""
    from auditor.report.text import make_console

    choice = "never" if to_file and color is not Color.always else color.value
    console = make_console(stream, choice)
    console.on_broken_pipe = _raise_broken_pipe  # type: ignore[method-assign]
    return console


def _write_report(result: ScanResult, scores: Scores, output_format: OutputFormat, output: Path | None, color: Color,
                  quiet: bool) -> None:
    stream = None
    try:
        stream = open(output, "w", encoding="utf-8") if output is not None else sys.stdout
    except OSError as exc:
        raise UsageProblem(f"cannot write {output}: {exc.strerror}; choose a writable --output path") from None
    try:
        if output_format is OutputFormat.json:  # machine output never imports rich
            from auditor.report.json_report import render_json

            stream.write(render_json(result, scores))
        else:
            from auditor.report.text import render_text

            render_text(result, scores, _console(stream, color, to_file=output is not None), quiet)
    finally:
        if output is not None:
            stream.close()


@dataclass
class GateOutcome:
    code: int  # 0 passed, 1 failed
    messages: list[str]  # why it failed, one line each


def _gate(result: ScanResult, scores: Scores, fail_under: float | None, targets: list[str],
          failing: Severity | None) -> GateOutcome:
    messages = []
    if fail_under is not None:
        for name in targets:
            value = scores.overall if name == "overall" else scores.targets[name]
            if value < fail_under:
                messages.append(f"{name} score {value:.1f} is below --fail-under {fail_under:g}")
    if failing is not None:
        worst = [f for f in result.findings if f.severity and _rank(f.severity) >= failing.rank]
        if worst:
            messages.append(f"{len(worst)} finding(s) at or above {failing.value} (--fail-on)")
    return GateOutcome(1 if messages else 0, messages)


def _rank(severity: str) -> int:
    from auditor.model import Severity

    return Severity(severity).rank


@app.command("rules")
def list_rules(
    output_format: Annotated[OutputFormat, typer.Option("--format", "-f", help="List format.")] = OutputFormat.text,
) -> int:
    """List every rule: code, name, category, severity and summary."""
    from auditor.registry import registry_warnings
    from auditor.report.rules_view import print_rules

    _warn(registry_warnings())
    print_rules(output_format.value)
    return 0


@app.command()
def explain(code_or_name: Annotated[str, typer.Argument(help="A rule code (LK101) or name (hardcoded-cuda-device).")]) -> int:
    """Print a rule's docs: what it does, why it matters, an example and what to use instead."""
    from auditor.registry import find_rule
    from auditor.report.rules_view import print_explanation

    rule = find_rule(code_or_name)
    if rule is None:
        raise UsageProblem(f"unknown rule {code_or_name!r}; run `audit rules` to list them")
    print_explanation(rule)
    return 0


def route(args: list[str]) -> list[str]:
    """`audit PATH` means `audit scan PATH`: put `scan` in front unless a command or a group
    option comes first. A folder named like a command needs `audit ./rules` or `audit scan rules`."""
    if not args:
        return ["scan"]
    if args[0] in COMMANDS or args[0] in GROUP_OPTIONS:
        return args
    return ["scan", *args]


def main(argv: list[str] | None = None) -> int:
    from typer.exceptions import TyperException

    args = route(list(sys.argv[1:] if argv is None else argv))
    command = typer.main.get_command(app)
    try:
        outcome = command.main(args=args, prog_name="audit", standalone_mode=False)
    except UsageProblem as exc:
        print(f"audit: error: {exc}", file=sys.stderr)
        return 2
    except TyperException as exc:
        message = " ".join(exc.format_message().replace("Value error, ", "").split())
        print(f"audit: error: {message} (run `audit --help` for usage)", file=sys.stderr)
        return getattr(exc, "exit_code", 2) if getattr(exc, "exit_code", 2) != 1 else 2
    except typer.Exit as exc:
        return exc.exit_code
    except (typer.Abort, KeyboardInterrupt):
        print("audit: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        _silence_stdout()
        return 0
    except Exception as exc:  # no traceback ever reaches the user
        print(f"audit: internal error: {type(exc).__name__}: {exc} (please report it; rerun with "
              f"--select to narrow it down)", file=sys.stderr)
        return 2
    return outcome if isinstance(outcome, int) else 0


def entry_point() -> None:
    sys.exit(main())

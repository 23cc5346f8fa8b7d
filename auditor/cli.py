"""The `audit` command line: `audit PATH...` scans (the default command), `audit rules` lists
the rules, `audit explain CODE_OR_NAME` prints one rule's docs.

Exit codes: 0 the run succeeded and the gate passed; 1 a --fail-under / --fail-on gate failed;
2 a usage error, a missing path or an internal error, with one line on stderr saying what to do."""

from __future__ import annotations

import os
import sys
from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer

from auditor import TOOL_NAME, __version__

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
) -> int:
    """Scan PATHS for NVIDIA lock-in and report findings and portability scores."""
    from auditor.engine import ScanOptions
    from auditor.engine import scan as run_scan
    from auditor.model import TARGETS, Severity
    from auditor.registry import RuleSelectionError
    from auditor.score import compute_scores

    given = [str(p) for p in paths] if paths else ["."]
    for path in given:
        if not os.path.lexists(path):
            raise UsageProblem(f"path not found: {path} (give an existing directory or file, e.g. `audit .`)")
    targets = _split(target) or ["overall"]
    for name in targets:
        if name not in ("overall", *TARGETS):
            raise UsageProblem(f"unknown --target {name!r}; choose from overall, {', '.join(TARGETS)}")
    failing_severity = None
    if fail_on is not None:
        try:
            failing_severity = Severity(fail_on.lower())
        except ValueError:
            raise UsageProblem(f"unknown --fail-on {fail_on!r}; choose from blocker, major, minor, info") from None
    options = ScanOptions(select=_split(select), ignore=_split(ignore), respect_gitignore=respect_gitignore,
                          excludes=tuple(_split(exclude) or ()), max_bytes=int(max_file_size * 1024 * 1024))
    try:
        result = run_scan(given, options)
    except RuleSelectionError as exc:
        raise UsageProblem(str(exc)) from None
    scores = compute_scores(result.findings)
    for warning in result.warnings:
        print(f"audit: warning: {warning}", file=sys.stderr)
    _write_report(result, scores, output_format, output, color, quiet)
    return _gate(result, scores, fail_under, targets, failing_severity)


def _write_report(result, scores, output_format: OutputFormat, output: Path | None, color: Color, quiet: bool) -> None:
    from auditor.report.json_report import render_json
    from auditor.report.text import make_console, render_text

    stream = None
    try:
        stream = open(output, "w", encoding="utf-8") if output is not None else sys.stdout
    except OSError as exc:
        raise UsageProblem(f"cannot write {output}: {exc.strerror}; choose a writable --output path") from None
    try:
        if output_format is OutputFormat.json:
            stream.write(render_json(result, scores))
        else:
            render_text(result, scores, make_console(stream, "never" if output else color.value), quiet)
    finally:
        if output is not None:
            stream.close()


def _gate(result, scores, fail_under: float | None, targets: list[str], failing) -> int:
    failed = False
    if fail_under is not None:
        for name in targets:
            value = scores.overall if name == "overall" else scores.targets[name]
            if value < fail_under:
                print(f"audit: {name} score {value:.1f} is below --fail-under {fail_under:g}", file=sys.stderr)
                failed = True
    if failing is not None:
        worst = [f for f in result.findings if f.severity and _rank(f.severity) >= failing.rank]
        if worst:
            print(f"audit: {len(worst)} finding(s) at or above {failing.value} (--fail-on)", file=sys.stderr)
            failed = True
    return 1 if failed else 0


def _rank(severity: str) -> int:
    from auditor.model import Severity

    return Severity(severity).rank


@app.command("rules")
def list_rules(
    output_format: Annotated[OutputFormat, typer.Option("--format", "-f", help="List format.")] = OutputFormat.text,
) -> int:
    """List every rule: code, name, category, severity and summary."""
    from auditor.report.rules_view import print_rules

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
        message = exc.format_message().strip().replace("\n", " ")
        print(f"audit: error: {message} (run `audit --help` for usage)", file=sys.stderr)
        return getattr(exc, "exit_code", 2) if getattr(exc, "exit_code", 2) != 1 else 2
    except typer.Exit as exc:
        return exc.exit_code
    except (typer.Abort, KeyboardInterrupt):
        print("audit: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0
    except Exception as exc:  # no traceback ever reaches the user
        print(f"audit: internal error: {type(exc).__name__}: {exc} (please report it; rerun with "
              f"--select to narrow it down)", file=sys.stderr)
        return 2
    return outcome if isinstance(outcome, int) else 0


def entry_point() -> None:
    sys.exit(main())

"""The `audit` command line: `audit PATH...` scans (the default command), `audit rules` lists
the rules, `audit explain CODE_OR_NAME` prints one rule's docs.

Exit codes: 0 the run succeeded and the gate passed; 1 a --fail-under / --fail-on gate failed
(after --fix: on what remains), or --diff has something to fix; 2 a usage error, a missing path,
a report that cannot be written or an internal error, with one line on stderr saying what to do;
130 interrupted (Ctrl-C).
The report goes to stdout (or --output); warnings and gate messages go to stderr, so
`--format json` output is always parseable.

Colour (text report): `--color auto` colours a terminal unless NO_COLOR is set, and a pipe when
FORCE_COLOR is set; `--color always` and `--color never` win over both variables and the terminal
type. A file written with --output gets no colour unless `--color always`."""

# No `from __future__ import annotations` here: typer reads every option's Annotated[...] from the
# signature, and as strings each would be evaluated again on every run (~10 ms with this many options).
import math
import os
import sys
from collections.abc import Iterable
from dataclasses import replace
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from auditor import TOOL_NAME, __version__
from auditor.report import REPORTERS

if TYPE_CHECKING:  # kept out of start-up: `audit --version` imports none of these
    from auditor.config import Settings

COMMANDS = ("scan", "rules", "explain")
INTERRUPTED = 130  # exit code after Ctrl-C (128 + SIGINT), as shells report it
MAX_FILE_SIZE_MB = 10_000
GROUP_OPTIONS = ("--help", "-h", "--version", "-V")

app = typer.Typer(
    name="audit", add_completion=False, no_args_is_help=False, pretty_exceptions_enable=False,
    help="Find NVIDIA lock-in in PyTorch code, score portability per target, suggest portable rewrites.",
    context_settings={"help_option_names": ["-h", "--help"]},
)


class UsageProblem(Exception):
    """A problem with what the user asked for: exit 2 with this one line."""


def stderr_line(line: str) -> None:
    """One line on stderr; nothing when stderr is closed (print(file=None) would write to stdout
    and corrupt a JSON report)."""
    stream = sys.stderr
    if stream is None:
        return
    try:
        print(line, file=stream)
    except (OSError, ValueError):
        pass


class CacheCheck(StrEnum):
    stat = "stat"
    content = "content"


class ListFormat(StrEnum):
    text = "text"
    json = "json"


# The report formats come from the reporter registry (auditor/report/__init__.py).
OutputFormat = StrEnum("OutputFormat", {name: name for name in REPORTERS})  # type: ignore[misc]


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


# Help panels: options grouped the way ruff groups them, so a new option has an obvious home.
RULES, FILES, GATES, BASELINES, FIXES, OUTPUT, CONFIG, RUNNING = (
    "Rule selection", "File selection", "Gates", "Baselines and changed lines", "Fixes", "Output", "Configuration",
    "Running")


@app.command()
def scan(
    paths: Annotated[list[Path] | None, typer.Argument(
        help="Directories or files to scan (default: the current directory).", show_default=False)] = None,
    # -- rule selection
    select: Annotated[list[str] | None, typer.Option(
        "--select", help="Only these rules: codes, prefixes (LK2), names, or ALL; comma-separated.",
        rich_help_panel=RULES)] = None,
    extend_select: Annotated[list[str] | None, typer.Option(
        "--extend-select", help="Rules to add to the selection.", rich_help_panel=RULES)] = None,
    ignore: Annotated[list[str] | None, typer.Option(
        "--ignore", help="Skip these rules (same forms as --select).", rich_help_panel=RULES)] = None,
    # -- file selection
    exclude: Annotated[list[str] | None, typer.Option(
        "--exclude", help="Skip files and folders matching this glob (replaces the configuration's `exclude`).",
        rich_help_panel=FILES)] = None,
    extend_exclude: Annotated[list[str] | None, typer.Option(
        "--extend-exclude", help="More globs to skip.", rich_help_panel=FILES)] = None,
    force_exclude: Annotated[bool | None, typer.Option(
        "--force-exclude/--no-force-exclude", help="Apply the excludes and .gitignore to files named explicitly "
        "too (what pre-commit needs).", show_default=False, rich_help_panel=FILES)] = None,
    respect_gitignore: Annotated[bool | None, typer.Option(
        "--respect-gitignore/--no-respect-gitignore", help="Skip what .gitignore files ignore (default: respect).",
        show_default=False, rich_help_panel=FILES)] = None,
    max_file_size: Annotated[float, typer.Option(
        "--max-file-size", min=0.001, help="Skip files larger than this many MB.", rich_help_panel=FILES)] = 10.0,
    # -- gates
    fail_under: Annotated[float | None, typer.Option(
        "--fail-under", min=0, max=100, help="Exit 1 when a chosen score (see --target) is below N.",
        rich_help_panel=GATES)] = None,
    target: Annotated[list[str] | None, typer.Option(
        "--target", "-t", help="Score(s) the --fail-under gate checks: overall (default), rocm, tpu, trainium, "
        "mps, xpu, cpu.", rich_help_panel=GATES)] = None,
    fail_on: Annotated[str | None, typer.Option(
        "--fail-on", help="Exit 1 when a reported finding of this severity or worse exists: blocker, major, minor, "
        "info (pre-commit runs on files: minor unless configured).", rich_help_panel=GATES)] = None,
    fail_on_regression: Annotated[bool | None, typer.Option(
        "--fail-on-regression", help="Exit 1 when a score is lower than the baseline's.", show_default=False,
        rich_help_panel=GATES)] = None,
    exit_zero: Annotated[bool, typer.Option(
        "--exit-zero", help="Exit 0 even when a gate fails (errors still exit 2).", rich_help_panel=GATES)] = False,
    # -- baselines and changed lines
    baseline: Annotated[Path | None, typer.Option(
        "--baseline", help="Report and gate only findings this baseline file does not hold.",
        rich_help_panel=BASELINES)] = None,
    no_baseline: Annotated[bool, typer.Option(
        "--no-baseline", help="Ignore the baseline the configuration names.", rich_help_panel=BASELINES)] = False,
    write_baseline: Annotated[Path | None, typer.Option(
        "--write-baseline", help="Record every current finding (and unreadable file) in FILE.",
        rich_help_panel=BASELINES)] = None,
    diff_base: Annotated[str | None, typer.Option(
        "--diff-base", help="Report and gate only findings on lines changed since the branch left this git ref "
        "(its merge-base with HEAD, as REF...HEAD; staged, unstaged and untracked changes included).", rich_help_panel=BASELINES)] = None,
    add_noqa: Annotated[bool, typer.Option(
        "--add-noqa", help="Write a suppression comment on the line of every current finding, then exit.",
        rich_help_panel=BASELINES)] = False,
    # -- fixes
    fix: Annotated[bool, typer.Option(
        "--fix", help="Apply the safe fixes, then report what remains.", rich_help_panel=FIXES)] = False,
    unsafe_fixes: Annotated[bool, typer.Option(
        "--unsafe-fixes", help="Also apply (with --fix or --diff) and mark the unsafe fixes.", rich_help_panel=FIXES)] = False,
    diff: Annotated[bool, typer.Option(
        "--diff", help="Print the fixes as a unified diff and write nothing; exit 1 when there is something to fix.",
        rich_help_panel=FIXES)] = False,
    show_fixes: Annotated[bool, typer.Option(
        "--show-fixes", help="With --fix or --diff: list the fixes per file.", rich_help_panel=FIXES)] = False,
    torch_version: Annotated[str | None, typer.Option(
        "--torch-version", help="Oldest PyTorch the project supports (default: the configuration's torch-version, "
        "else read from its dependency files); fixes needing a newer one stay suggestions.", show_default=False,
        rich_help_panel=FIXES)] = None,
    # -- output
    output_format: Annotated[OutputFormat | None, typer.Option(
        "--format", "--output-format", "-f", help="Report format (default: text; concise under pre-commit and in "
        "CI when stdout is not a terminal).", show_default=False, rich_help_panel=OUTPUT)] = None,
    output: Annotated[Path | None, typer.Option(
        "--output", "-o", help="Write the report to FILE instead of stdout.", rich_help_panel=OUTPUT)] = None,
    color: Annotated[Color, typer.Option("--color", help="Colour in the text report.", rich_help_panel=OUTPUT)] = Color.auto,
    quiet: Annotated[bool, typer.Option(
        "--quiet", "-q", help="Text report: only the summary and the scores.", rich_help_panel=OUTPUT)] = False,
    statistics: Annotated[bool, typer.Option(
        "--statistics", help="Print a count per rule instead of the findings.", rich_help_panel=OUTPUT)] = False,
    show_suppressed: Annotated[bool | None, typer.Option(
        "--show-suppressed", help="Also list findings that comments, per-file-ignores or the baseline silence.",
        show_default=False, rich_help_panel=OUTPUT)] = None,
    # -- configuration
    config: Annotated[Path | None, typer.Option(
        "--config", help="Read this configuration file (lockin-auditor.toml or a pyproject.toml) instead of "
        "looking for one.", rich_help_panel=CONFIG)] = None,
    isolated: Annotated[bool, typer.Option(
        "--isolated", help="Read no configuration file.", rich_help_panel=CONFIG)] = False,
    # -- running
    jobs: Annotated[int, typer.Option(
        "--jobs", "-j", min=0, help="Worker processes (0: every core available).", rich_help_panel=RUNNING)] = 0,
    no_cache: Annotated[bool, typer.Option(
        "--no-cache", help="Neither read nor write the results cache.", rich_help_panel=RUNNING)] = False,
    cache_dir: Annotated[Path | None, typer.Option(
        "--cache-dir", help="Where the results cache lives (default: .lockin_auditor_cache/ at the project root).",
        show_default=False, rich_help_panel=RUNNING)] = None,
    cache_check: Annotated[CacheCheck, typer.Option(
        "--cache-check", help="How a cached file is known unchanged: stat (size and mtime, as ruff) or content "
        "(a hash of every file, for trees whose mtimes cannot be trusted).", rich_help_panel=RUNNING)] = CacheCheck.stat,
) -> int:
    """Scan PATHS for NVIDIA lock-in and report findings and portability scores."""
    from auditor.config import anchor, load_settings
    from auditor.engine import resolve_root
    from auditor.run import Request, execute

    given = _existing_paths(paths)
    if fail_under is not None and not math.isfinite(fail_under):
        raise UsageProblem("--fail-under must be a number from 0 to 100")
    if not math.isfinite(max_file_size) or max_file_size > MAX_FILE_SIZE_MB:
        raise UsageProblem(f"--max-file-size must be a number of MB from 0.001 to {MAX_FILE_SIZE_MB:,}")
    overrides: dict[str, object] = {
        "max_bytes": int(max_file_size * 1024 * 1024), "jobs": jobs or None, "cache": not no_cache,
        "cache_dir": str(cache_dir) if cache_dir else None, "cache_check": cache_check.value, "quiet": quiet,
        "statistics": statistics, "exit_zero": exit_zero,
    }
    cwd = os.getcwd()
    optional = {
        "select": _split(select), "extend_select": _split(extend_select), "ignore": _split(ignore),
        "force_exclude": force_exclude, "respect_gitignore": respect_gitignore,
        "fail_on": _severity(fail_on), "fail_on_regression": fail_on_regression,
        "show_suppressed": show_suppressed, "diff_base": diff_base,
        "output_format": output_format.value if output_format is not None else None,
        "targets": tuple(_targets(target)) if target else None,
        "fail_under_number": fail_under,
        "baseline": os.path.abspath(baseline) if baseline is not None else None,
        "torch_version": _torch_version(torch_version),
    }
    overrides.update({key: value for key, value in optional.items() if value is not None})
    if exclude is not None:
        overrides["excludes"] = tuple(anchor(p, cwd) for p in _split(exclude) or ())
    settings = load_settings(resolve_root(given), overrides, str(config) if config else None, isolated)
    if extend_exclude:
        settings = replace(settings, excludes=(*settings.excludes, *(anchor(p, cwd) for p in _split(extend_exclude) or ())))
    if no_baseline:
        settings = replace(settings, baseline=None)
    settings = replace(settings, progress=_show_progress(settings))
    if show_fixes and not (fix or diff):
        raise UsageProblem("--show-fixes lists what --fix or --diff changes; add one of them")
    request = Request(output=output, color=color.value, write_baseline=write_baseline, add_noqa=add_noqa, fix=fix,
                      diff=diff, unsafe_fixes=unsafe_fixes, show_fixes=show_fixes)
    try:
        return execute(given, settings, request)
    except EOFError as exc:  # click would report it as Ctrl-C ("interrupted", exit 130): it is a failure
        raise RuntimeError(f"unexpected end of data from a child process ({exc or 'EOF'})") from None


def _existing_paths(paths: list[Path] | None) -> list[str]:
    given = [str(p) for p in paths] if paths else ["."]
    for path in given:
        if not os.path.lexists(path):
            raise UsageProblem(f"path not found: {path} (give an existing directory or file, e.g. `audit .`)")
    return given


def _targets(values: list[str] | None) -> list[str]:
    from auditor.config import GATE_TARGETS, nearest

    targets = [name.lower() for name in _split(values) or ["overall"]]
    for name in targets:
        if name not in GATE_TARGETS:
            raise UsageProblem(f"unknown --target {name!r}{nearest(name, GATE_TARGETS)}; choose from "
                               f"{', '.join(GATE_TARGETS)}")
    return targets


def _torch_version(value: str | None) -> str | None:
    from auditor.fix.floor import valid_version_argument

    if value is not None and not valid_version_argument(value):
        raise UsageProblem(f"--torch-version {value!r} is not a version; give e.g. 2.4 or 2.4.1")
    return value.strip() if value is not None else None


def _severity(value: str | None) -> str | None:
    from auditor.config import ConfigError, severity_name

    if value is None:
        return None
    try:
        return severity_name(value, "--fail-on")
    except ConfigError as exc:
        raise UsageProblem(str(exc)) from None


def _show_progress(settings: "Settings") -> bool:
    """A progress bar only where a person watches: stderr is a terminal, not CI, not pre-commit."""
    if settings.output_format not in (None, "text") or not sys.stderr.isatty():
        return False
    return not any(os.environ.get(name, "").lower() not in ("", "0", "false") for name in ("CI", "PRE_COMMIT"))


def _warn(warnings: Iterable[str]) -> None:
    for warning in warnings:
        stderr_line(f"audit: warning: {warning}")


def silence_stdout() -> None:
    """Point stdout at /dev/null so the interpreter's final flush cannot fail again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass


_silence_stdout = silence_stdout


@app.command("rules")
def list_rules(
    output_format: Annotated[ListFormat, typer.Option("--format", "-f", help="List format.")] = ListFormat.text,
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

    from auditor.cache import CacheDirRefused
    from auditor.config import ConfigError

    args = route(list(sys.argv[1:] if argv is None else argv))
    command = typer.main.get_command(app)
    try:
        outcome = command.main(args=args, prog_name="audit", standalone_mode=False)
    except (UsageProblem, ConfigError, CacheDirRefused) as exc:
        stderr_line(f"audit: error: {exc}")
        return 2
    except TyperException as exc:
        message = " ".join(exc.format_message().replace("Value error, ", "").split())
        stderr_line(f"audit: error: {message} (run `audit --help` for usage)")
        return getattr(exc, "exit_code", 2) if getattr(exc, "exit_code", 2) != 1 else 2
    except typer.Exit as exc:
        if exc.exit_code == INTERRUPTED:
            stderr_line("audit: interrupted")
        return exc.exit_code
    except (typer.Abort, KeyboardInterrupt):
        stderr_line("audit: interrupted")
        return INTERRUPTED
    except BrokenPipeError:
        silence_stdout()
        return 0
    except Exception as exc:  # no traceback ever reaches the user
        stderr_line(f"audit: internal error: {type(exc).__name__}: {exc} (please report it; rerun with "
                    f"--select to narrow it down)")
        return 2
    if outcome == INTERRUPTED:  # typer turns Ctrl-C into a silent return of 130
        stderr_line("audit: interrupted")
    return outcome if isinstance(outcome, int) else 0


def _standard_streams() -> None:
    """A closed stdin, stdout or stderr (`audit . 2>&-`) is reopened on /dev/null, so no file this
    run opens can take its descriptor and receive what was meant for it; report text that cannot
    be encoded is escaped rather than fatal."""
    for fd in (0, 1, 2):
        try:
            os.fstat(fd)
        except OSError:
            try:
                opened = os.open(os.devnull, os.O_RDWR)
                if opened != fd:
                    os.dup2(opened, fd)
                    os.close(opened)
            except OSError:
                pass
    if sys.stdout is not None and hasattr(sys.stdout, "reconfigure"):
        sys.stdout.reconfigure(errors="backslashreplace")


def entry_point() -> None:
    from auditor.interpreter import make_path_safe

    make_path_safe()  # what this process and its children import never comes from the checkout
    _standard_streams()
    sys.exit(main())

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
import inspect
import os
import sys
from collections.abc import Callable, Iterable
from dataclasses import replace
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from auditor import TOOL_NAME, __version__
from auditor.cache.folder import CacheDirRefused
from auditor.config import ConfigError
from auditor.config.keys import options
from auditor.console import silence_stdout, stderr_line
from auditor.sandbox.interpreter import make_path_safe
from auditor.targets import CatalogueError

if TYPE_CHECKING:  # kept out of start-up: `audit --version` imports none of these
    from auditor.config.settings import Settings

COMMANDS = ("scan", "rules", "explain", "plan", "server")
ALIASES = {"check": "scan"}  # ruff's habit: `audit check .` is `audit .`
INTERRUPTED = 130  # exit code after Ctrl-C (128 + SIGINT), as shells report it
GROUP_OPTIONS = ("--help", "-h", "--version", "-V", "--install-completion", "--show-completion")

app = typer.Typer(
    name="audit", add_completion=True, no_args_is_help=False, pretty_exceptions_enable=False,
    help="Find NVIDIA lock-in in PyTorch code, score portability per target, suggest portable rewrites.",
    context_settings={"help_option_names": ["-h", "--help"]},
)


class UsageProblem(Exception):
    """A problem with what the user asked for: exit 2 with this one line."""


class ListFormat(StrEnum):
    text = "text"
    json = "json"


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


PATHS = inspect.Parameter("paths", inspect.Parameter.POSITIONAL_OR_KEYWORD, default=None, annotation=Annotated[
    list[Path] | None, typer.Argument(help="Directories or files to scan (default: the current directory).",
                                      show_default=False)])


def _options(command: Callable[..., int]) -> Callable[..., int]:
    """Give `command(paths, **values)` the options of the key table (auditor.config.keys) as its
    signature, in the table's order: that is what typer reads, and what `--help` lists."""
    parameters = [PATHS]
    for key in options():
        option = typer.Option(*key.flags, help=key.help, rich_help_panel=key.panel, **key.extra)
        parameters.append(inspect.Parameter(key.param, inspect.Parameter.KEYWORD_ONLY, default=key.option_default,
                                            annotation=Annotated[key.option, option]))
    command.__signature__ = inspect.Signature(parameters, return_annotation=int)  # type: ignore[attr-defined]
    command.__annotations__ = {**{p.name: p.annotation for p in parameters}, "return": int}
    return command


@app.command()
@_options
def scan(paths: list[Path] | None = None, **values: Any) -> int:
    """Scan PATHS for NVIDIA lock-in and report findings and portability scores."""
    # only `scan` loads the scan's modules: `audit --version`, `rules` and `explain` stay fast
    from auditor.config.load import load_settings
    from auditor.pipeline.scan import resolve_root
    from auditor.run import Request, execute

    given, stdin_folder = None, None
    if values["stdin_filename"] is not None or any(str(p) == "-" for p in paths or ()):
        # only `audit - --stdin-filename PATH` (and its misuses: exit 2, one line)
        from auditor.pipeline.stdin import config_folder, stdin_request

        stdin = stdin_request([str(p) for p in paths or ()], values["stdin_filename"])
        given, stdin_folder = ["-"], config_folder(stdin)
    given = given or _existing_paths(paths)
    cwd = os.getcwd()
    overrides: dict[str, Any] = {}
    request: dict[str, Any] = {}
    search: dict[str, Any] = {}  # how the configuration is found (--config, --isolated)
    rows = options()
    for key in rows:  # each value where its row says it goes, checked as its row says
        value = key.cli(values[key.param], cwd) if key.cli is not None else values[key.param]
        kind, _, name = key.destination.rpartition(".")
        if kind == "request":
            request[name] = value
        elif kind == "config":
            search[name] = value
        elif name and value is not None:
            overrides[name] = value
    root = resolve_root([stdin_folder] if stdin_folder is not None else given)
    settings = load_settings(root, overrides, search["config"], search["isolated"])
    for key in rows:
        if key.after is not None:
            settings = key.after(settings, values[key.param], cwd)
    settings = replace(settings, progress=_show_progress(settings))
    if request["show_fixes"] and not (request["fix"] or request["diff"]):
        raise UsageProblem("--show-fixes lists what --fix or --diff changes; add one of them")
    try:
        return execute(given, settings, Request(**request, unsafe_fixes=settings.unsafe_fixes))
    except EOFError as exc:  # click would report it as Ctrl-C ("interrupted", exit 130): it is a failure
        raise RuntimeError(f"unexpected end of data from a child process ({exc or 'EOF'})") from None


def _existing_paths(paths: list[Path] | None) -> list[str]:
    given = [str(p) for p in paths] if paths else ["."]
    for path in given:
        if not os.path.lexists(path):
            raise UsageProblem(f"path not found: {path} (give an existing directory or file, e.g. `audit .`)")
    return given


RICH_HELP_COLUMNS = 120  # narrower than this, rich's option table cuts names (`--force-excl…`)


def _with_full_help(command: "typer.main.TyperGroup") -> None:
    """--help: the help of the options whose full text reads data (the --target choices come from
    the target registry), built only now. Piped, or on a terminal too narrow for rich's panels,
    the help is click's plain layout, which wraps the text and never cuts an option's name."""
    import shutil

    if not sys.stdout.isatty() or shutil.get_terminal_size().columns < RICH_HELP_COLUMNS:
        for each in (command, *getattr(command, "commands", {}).values()):
            each.rich_markup_mode = None  # type: ignore[attr-defined]
    scan = command.commands.get("scan") if hasattr(command, "commands") else None
    shown = {key.param: key.shown_help for key in options() if key.shown_help is not None}
    for param in getattr(scan, "params", ()):
        if param.name in shown:
            param.help = shown[param.name]()


def _show_progress(settings: "Settings") -> bool:
    """A progress bar only where a person watches: stderr is a terminal, not CI, not pre-commit."""
    if settings.output_format not in (None, "text") or settings.quiet or settings.silent or not sys.stderr.isatty():
        return False
    return not any(os.environ.get(name, "").lower() not in ("", "0", "false") for name in ("CI", "PRE_COMMIT"))


def _warn(warnings: Iterable[str]) -> None:
    for warning in warnings:
        stderr_line(f"audit: warning: {warning}")


@app.command("rules")
def list_rules(
    output_format: Annotated[ListFormat, typer.Option("--format", "-f", help="List format.")] = ListFormat.text,
) -> int:
    """List every rule: code, name, category, severity and summary."""
    # the rules and rich load only for `audit rules`
    from auditor.checks.registry import registry_warnings
    from auditor.report.rules_view import print_rules

    _warn(registry_warnings())
    print_rules(output_format.value)
    return 0


@app.command()
def explain(
    code_or_name: Annotated[str | None, typer.Argument(
        help="A rule code (LK101) or name (hardcoded-cuda-device).", show_default=False)] = None,
    every: Annotated[bool, typer.Option("--all", help="Every rule's docs, in code order.")] = False,
    output_format: Annotated[ListFormat, typer.Option("--format", "-f", help="Docs format.")] = ListFormat.text,
) -> int:
    """Print a rule's docs: what it does, why it matters, an example and what to use instead."""
    # the rules and rich load only for `audit explain`
    from auditor.checks.registry import all_rules, close_rules, find_rule
    from auditor.report.rules_view import print_explanations

    if every == (code_or_name is not None):
        raise UsageProblem("give one rule (`audit explain LK101`, a code or a name) or --all, not "
                           + ("both" if every else "neither"))
    rules = all_rules() if every else [find_rule(code_or_name or "")]
    if rules[0] is None:
        near = close_rules(code_or_name or "")
        hint = f"did you mean {' or '.join(near)}? " if near else ""
        raise UsageProblem(f"unknown rule {code_or_name!r}; {hint}run `audit rules` to list them")
    print_explanations([r for r in rules if r is not None], output_format.value, single=not every)
    return 0


class PlanFormat(StrEnum):
    markdown = "markdown"
    json = "json"
    html = "html"


@app.command("plan")
def plan(
    path: Annotated[Path, typer.Argument(help="The repository to plan a move for.")] = Path("."),
    target: Annotated[str | None, typer.Option("--target", "-t", help="The target to plan the move to; without it, "
                                               "the targets are ranked.", show_default=False)] = None,
    output_format: Annotated[PlanFormat, typer.Option("--format", "-f", help="Plan format.")] = PlanFormat.markdown,
    write_tests: Annotated[Path | None, typer.Option("--write-tests", help="Write test_parity_T.py and bench_T.py "
                                                     "into this folder.", show_default=False)] = None,
    entry: Annotated[str | None, typer.Option("--entry", help="module:function that builds the model and inputs "
                                              "for the parity test and benchmark.", show_default=False)] = None,
    no_cache: Annotated[bool, typer.Option("--no-cache", help="Neither read nor write the results cache.")] = False,
    cache_dir: Annotated[Path | None, typer.Option("--cache-dir", help="Where the results cache lives.",
                                                   show_default=False)] = None,
) -> int:
    """Plan a move to one target in seven steps (--target T), or rank the targets for PATH."""
    # only `audit plan` loads the plan's modules and catalogue
    from auditor.plan.command import PlanRequest, PlanUsage, run_plan

    try:
        text = run_plan(PlanRequest(str(path), target, output_format.value, write_tests, entry, not no_cache,
                                    str(cache_dir) if cache_dir is not None else None))
    except PlanUsage as exc:
        raise UsageProblem(str(exc)) from None
    sys.stdout.write(text)
    return 0


SERVER_EXTRA = "lockin-auditor[server]"


@app.command("server")
def server(
    unsafe_fixes: Annotated[bool, typer.Option("--unsafe-fixes", help="Offer the unsafe fixes as code actions too "
                                               "(an editor can also send the initialization option unsafeFixes).")] = False,
    max_file_size: Annotated[float | None, typer.Option("--max-file-size", min=0.001, show_default=False, help=(
        "Leave documents larger than this many MB unchecked (one diagnostic says so; default: as `audit`)."))] = None,
) -> int:
    """Run a language server over stdio for editors: each open file's findings as diagnostics
    (checked as `audit - --stdin-filename FILE` checks it, with its folder's configuration), its
    safe fixes as code actions. Needs the `server` extra (pygls)."""
    try:
        import pygls  # noqa: F401  (only to know it is there)
    except ImportError:
        raise UsageProblem(f"`audit server` needs pygls: install {SERVER_EXTRA} (pip install '{SERVER_EXTRA}')") from None
    # the server (pygls) and the scan's modules load only for `audit server`
    from auditor.config.keys import _cli_max_file_size
    from auditor.lsp.server import serve

    overrides = {"max_bytes": _cli_max_file_size(max_file_size, os.getcwd())} if max_file_size is not None else {}
    return serve(unsafe_fixes, overrides)


def route(args: list[str]) -> list[str]:
    """`audit PATH` means `audit scan PATH`: put `scan` in front unless a command or a group
    option comes first; `audit check` is `audit scan`, as in ruff. A folder named like a command
    needs `audit ./rules` or `audit scan rules`."""
    if not args:
        return ["scan"]
    if args[0] in ALIASES:
        return [ALIASES[args[0]], *args[1:]]
    if args[0] in COMMANDS or args[0] in GROUP_OPTIONS:
        return args
    return ["scan", *args]


def main(argv: list[str] | None = None) -> int:
    from typer.exceptions import TyperException

    args = route(list(sys.argv[1:] if argv is None else argv))
    command = typer.main.get_command(app)
    try:
        if any(arg in ("--help", "-h") for arg in args):
            _with_full_help(command)
        outcome = command.main(args=args, prog_name="audit", standalone_mode=False)
    except (UsageProblem, ConfigError, CacheDirRefused, CatalogueError) as exc:
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
    make_path_safe()  # what this process and its children import never comes from the checkout
    _standard_streams()
    sys.exit(main())

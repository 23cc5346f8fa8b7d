"""Fixing files: rounds until stable, each validated, then an atomic write (or a diff).

For each file with a fix the run may apply, from its bytes on disk (never from cached edits):

1. check the text with the same rules, floor and gate as the scan; take the applicable fixes
   that do not overlap (auditor/fix/edits.py); apply them; drop the imports they left unused;
2. re-parse the result with libcst's full validation and `compile()` it (when the original
   compiled with this interpreter): a round that breaks either is reverted for that file and
   reported, and the file keeps the last good text;
3. repeat until no applicable fix remains, at most MAX_ROUNDS times (a fix can make another one
   possible: `memory_cached` -> `memory_reserved` -> `torch.accelerator.memory_reserved`).

Writing keeps the file's encoding, byte-order mark, line endings (edits are built in the file's
own newline style) and mode; it goes through a temporary file in the same folder and a rename,
and refuses when the file changed on disk since it was read, when it is a symlink, or when it
lies outside the scanned folder. Nothing is written outside the scanned tree.
"""

from __future__ import annotations

import codecs
import os
import warnings
from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from auditor.fix.applicability import device_rules, fixable, rewritable_ties
from auditor.fix.edits import TextEdit, apply_edits, select, to_offsets
from auditor.fix.imports import name_uses, remove_unused
from auditor.fix.reexports import ReExports
from auditor.model import FileError, FileResult, Finding
from auditor.paths import inside
from auditor.pipeline.runtime import Runtime, catalogue_for
from auditor.python import scan as python_scan
from auditor.python.positions import LineIndex
from auditor.python.scan import parse_module, unvalidated_parsing
from auditor.read import toml_guard
from auditor.read.text import SourceError, decode_python, decode_text, lines_with_ends
from auditor.readers.notebook import NotebookError, read_notebook
from auditor.sandbox.deep import run_deep
from auditor.sandbox.safe_files import TreeFile, WriteRefused

if TYPE_CHECKING:
    from collections.abc import Callable

    import libcst as cst

    from auditor.discover.files import SourceFile
    from auditor.fix.device_owner import DeviceOwner
    from auditor.report.model import ScanResult

MAX_RETRIED_FIXES = 40  # a failed round's fixes tried one by one up to this many (a parse each)
MAX_ROUNDS = 6
PYTHON_KINDS = ("python", "setup-py")
# Other files get text fixes too (LK001 deletes a stale suppression comment); dependency files'
# own rewrites are display-only and never applied.
TEXT_KINDS = ("requirements", "pyproject", "setup-cfg", "cuda")
# A notebook's code cells are fixed in their cells (edits in cell lines); the JSON is written back
# only when re-serialising it reproduces the file byte for byte (nbformat's own layout).
NOTEBOOK_KINDS = ("notebook",)
FIXABLE_KINDS = (*PYTHON_KINDS, *TEXT_KINDS, *NOTEBOOK_KINDS)


@dataclass
class FileFix:
    """What fixing one file did."""

    path: str  # as reported
    original: str = ""
    fixed: str = ""
    applied: Counter = field(default_factory=Counter)  # (rule, name) -> fixes applied
    rounds: int = 0
    error: FileError | None = None  # a round reverted, a write refused, a file not readable
    written: bool = False
    creates: dict[str, str] = field(default_factory=dict)  # root-relative path -> content the applied fixes need
    # The findings of the last check of `fixed` (Python files): what remains, for the CUDA-clean summary.
    remaining: list[Finding] | None = None
    # The names other modules of the project import from this one: imports the fixes left unused stay.
    exported: Callable[[], frozenset[str]] | None = field(default=None, repr=False, compare=False)
    # Finds the project's device owner when a round's findings first need it (True: found now, check again).
    find_owner: Callable[[list[Finding]], bool] | None = field(default=None, repr=False, compare=False)

    @property
    def changed(self) -> bool:
        return self.fixed != self.original


@dataclass
class Created:
    """A file the run created (or, with --diff, would create): the project's device module."""

    path: str  # relative to the scanned root
    shown: str  # as reported (relative to the report's base)
    content: str
    written: bool = False
    error: str | None = None


@dataclass
class FixRun:
    files: list[FileFix] = field(default_factory=list)
    created: list[Created] = field(default_factory=list)
    device_owner: DeviceOwner | None = None  # the project's device owner the rewrites used

    @property
    def changed(self) -> list[FileFix]:
        return [f for f in self.files if f.changed]

    @property
    def fixed_count(self) -> int:
        return sum(sum(f.applied.values()) for f in self.files if f.changed)

    @property
    def errors(self) -> list[FileError]:
        return [f.error for f in self.files if f.error is not None]

    def diff(self) -> str:
        import difflib

        out: list[str] = []
        for new in self.created:
            if new.error is None:
                lines = difflib.unified_diff([], lines_with_ends(new.content), "/dev/null", f"b/{new.shown}")
                out.extend(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n"
                           for line in lines)
        for item in self.changed:
            lines = difflib.unified_diff(lines_with_ends(item.original), lines_with_ends(item.fixed),
                                         f"a/{item.path}", f"b/{item.path}")
            for line in lines:
                out.append(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n")
        return "".join(out)


def fix_paths(result: ScanResult, unsafe: bool, write: bool, max_bytes: int, runtime: Runtime | None = None) -> FixRun:
    """Fix every file of `result` that has an applicable fix; write them when `write`."""
    device_paths, device_ties = _device_candidates(result)
    wanted = sorted({f.path for f in result.findings if fixable(f, unsafe)} | device_paths)
    run = FixRun()
    if not wanted:
        return run
    root = result.scan_root or result.root
    if runtime is None:
        runtime = Runtime(result.rules, catalogue_for(result.settings), max_bytes, result.settings, result.floor,
                          root=root)
    if device_ties:  # known for every file the run checks, so that a second run judges as the first did
        run.device_owner = runtime.device_owner = _device_owner(result, runtime, root)
    find_owner = None if device_ties else _OwnerOnDemand(result, runtime, root, run)
    creator = _Creator(run, root, result.root, write)
    sources = {source.display: source for source in result.files}
    reexports = ReExports(((s.path, s.display) for s in result.files if s.kind in PYTHON_KINDS), max_bytes)
    with unvalidated_parsing():  # the checks parse as the scan does; validation happens in _validate
        for path in wanted:
            source = sources.get(path)
            if source is None or source.kind not in FIXABLE_KINDS:
                continue
            if os.path.islink(os.path.join(result.root, path)):  # discovery read it through its resolved target
                run.files.append(FileFix(path, error=FileError(
                    path, "fix", "not fixed: the file is a symlink (audit never writes through links)")))
                continue
            try:
                run.files.append(fix_file(runtime, source, root, unsafe, write, max_bytes, reexports, creator,
                                          find_owner))
            except Exception as exc:  # a bug must not stop the other files from being fixed
                run.files.append(FileFix(path, error=FileError(
                    path, "fix", f"not fixed: internal error ({type(exc).__name__}: {exc}); please report it")))
    return run


def _device_candidates(result: ScanResult) -> tuple[set[str], bool]:
    """(the files the device rewrites may change, whether any finding has such a fix at all). A
    candidate has a finding of a rule with a device rewrite outside the contexts where they stay
    suggestions (rules/fixes.toml `[context] hold_device`, test code without --fix-tests): only
    these are checked again for them, a check per file being most of a fix run."""
    rules = device_rules(result)
    ties = [f for f in result.findings if f.rule in rules]
    if not ties:
        return set(), False
    return {f.path for f in rewritable_ties(ties, result)}, True


class _OwnerOnDemand:
    """The device owner for a run whose scan had no device tie, found when a round creates one
    (`GradScaler()` -> `GradScaler("cuda")`): so that one run reaches what a second would."""

    def __init__(self, result: ScanResult, runtime: Runtime, root: str, run: FixRun) -> None:
        self.result, self.runtime, self.root, self.run = result, runtime, root, run
        self.rules = device_rules(result)
        self.looked = False

    def __call__(self, findings: list[Finding]) -> bool:
        if self.looked:
            return False
        ties = [f for f in findings if f.rule in self.rules]
        if not ties or not rewritable_ties(ties, self.result):
            return False
        self.looked = True
        self.run.device_owner = self.runtime.device_owner = _device_owner(self.result, self.runtime, self.root)
        return self.runtime.device_owner is not None


def _device_owner(result: ScanResult, runtime: Runtime, root: str) -> DeviceOwner | None:
    """The project's device owner for this run (auditor/fix/device_owner.py), with --fix-tests."""
    from dataclasses import replace

    # the owner (it reads the project's Python files) only when a device rule has a finding
    from auditor.fix.device_owner import find_device_owner
    from auditor.fix.floor import TorchFloor

    paths = [s.path for s in result.files if s.kind in PYTHON_KINDS]
    owner = find_device_owner(root, paths, result.floor or TorchFloor(), runtime.catalogue)
    fix_tests = bool(getattr(result.settings, "fix_tests", False))
    return replace(owner, fix_tests=fix_tests) if owner is not None and fix_tests else owner


class _Creator:
    """Creates the files the applied fixes need, once per run, before the first file that needs
    them is written: only where nothing exists (never over a file, a link or a folder), only inside
    the scanned root, after checking that the content compiles."""

    def __init__(self, run: FixRun, root: str, base: str, write: bool) -> None:
        self.run, self.root, self.base, self.write = run, root, base, write
        self.done: dict[str, Created] = {}

    def ensure(self, creates: dict[str, str]) -> str | None:
        """None when every file in `creates` exists now (or, without writing, would); else why not."""
        for path, content in sorted(creates.items()):
            item = self.done.get(path)
            if item is None:
                item = self.done[path] = self._create(path, content)
                self.run.created.append(item)
            if item.error is not None:
                return item.error
        return None

    def _create(self, path: str, content: str) -> Created:
        absolute = os.path.normpath(os.path.join(self.root, path))
        shown = os.path.relpath(absolute, self.base).replace(os.sep, "/")
        item = Created(path, shown, content)
        if os.path.isabs(path) or not inside(absolute, os.path.abspath(self.root)):
            item.error = f"not created: {path} is outside the scanned folder"
        elif _compiles(content, shown) is not None:
            item.error = f"not created: {shown} would not compile"
        elif self.write:
            try:
                with TreeFile(absolute, self.root) as folder:
                    folder.create(content.encode("utf-8"))
                item.written = True
            except (WriteRefused, OSError) as exc:
                item.error = f"not created: {shown}: {exc if isinstance(exc, WriteRefused) else exc.strerror or exc}"
        elif os.path.lexists(absolute):
            item.error = f"not created: {shown} exists (audit never writes over a file)"
        return item


def fix_file(runtime: Runtime, source: SourceFile, root: str, unsafe: bool, write: bool, max_bytes: int,
             reexports: ReExports | None = None, creator: _Creator | None = None,
             find_owner: Callable[[list[Finding]], bool] | None = None) -> FileFix:
    """Fix one file, read and written through its folder's descriptor (auditor/sandbox/safe_files.py).
    The files its fixes need (`creates`) are created first; when they cannot be, it is not written."""
    outcome = FileFix(source.display, find_owner=find_owner)
    if reexports is not None:
        outcome.exported = lambda: reexports.imported_from(source.display)
    try:
        with TreeFile(source.path, root) as tree_file:
            data = tree_file.read(max_bytes)
            _fix_data(runtime, source, outcome, data, unsafe)
            needed = creator.ensure(outcome.creates) if creator is not None and outcome.creates and outcome.changed \
                else None
            if needed is not None:
                raise WriteRefused(f"{needed}, which its fixes import")
            encoded = _encoded(outcome, data, source.kind in PYTHON_KINDS) if write and outcome.changed else None
            if encoded is not None:
                tree_file.replace(encoded, data)
                outcome.written = True
    except (WriteRefused, OSError) as exc:
        why = str(exc) if isinstance(exc, WriteRefused) else f"cannot read ({exc.strerror or exc})"
        outcome.error = FileError(source.display, "fix", f"not fixed: {why}")
        outcome.fixed = outcome.original
    return outcome


def _fix_data(runtime: Runtime, source: SourceFile, outcome: FileFix, data: bytes, unsafe: bool) -> None:
    try:
        text = decode_python(data) if source.kind in PYTHON_KINDS else decode_text(data)
    except SourceError as exc:
        raise WriteRefused(exc.message) from None
    outcome.original = outcome.fixed = text
    run_deep(_rounds, runtime, source, outcome, unsafe)  # libcst and the walk need the large stack


def _encoded(outcome: FileFix, data: bytes, python: bool) -> bytes:
    """The fixed text (after a reverted round: the last good one) in the file's encoding and BOM."""
    encoding = _encoding(data) if python else "utf-8"
    try:
        return (codecs.BOM_UTF8 if data.startswith(codecs.BOM_UTF8) else b"") + outcome.fixed.encode(encoding)
    except (UnicodeEncodeError, LookupError):
        raise WriteRefused(f"the result cannot be written as {encoding}") from None


def _rounds(runtime: Runtime, source: SourceFile, outcome: FileFix, unsafe: bool) -> None:
    """Safe fixes until stable first, then (with --unsafe-fixes) the unsafe ones: a safe fix can
    add code the CUDA-clean gate looks at (`torch.amp.autocast("cuda")`), so the gated swaps are
    judged on the file as the safe fixes leave it."""
    import libcst as cst

    if source.kind in NOTEBOOK_KINDS:
        _notebook_rounds(runtime, source, outcome, unsafe)
        return
    if source.kind not in PYTHON_KINDS:
        _text_rounds(runtime, source, outcome, unsafe)
        return
    compiles = _compiles(outcome.original, source.display) is None
    try:
        module = parse_module(outcome.original)
    except (cst.ParserSyntaxError, cst.CSTValidationError, RecursionError):
        return  # the scan reported it; nothing to fix in a file that does not parse
    for phase_unsafe in (False, True) if unsafe else (False,):
        module = _phase(runtime, source, outcome, phase_unsafe, compiles, module)
        if module is None:
            return


def _phase(runtime: Runtime, source: SourceFile, outcome: FileFix, unsafe: bool, compiles: bool,
           module: cst.Module) -> cst.Module | None:
    """Rounds of one phase on `outcome.fixed` (whose tree is `module`); the tree of the text it
    leaves, or None when the file cannot go on (a reverted round). Each round parses its result
    once (twice when it drops imports) and the next round checks that tree, not the text again."""
    text = outcome.fixed
    for _ in range(MAX_ROUNDS):
        result = _check(runtime, source, outcome, text, module)
        outcome.remaining = result.findings
        findings = [f for f in result.findings if fixable(f, unsafe)]
        taken, edits = select([f.fix for f in findings], text)  # type: ignore[misc]
        if not taken:
            return module
        number = outcome.rounds + 1
        attempt = _attempt(text, edits, module, outcome, source.display, compiles)
        if isinstance(attempt, str):
            _keep_what_validates(text, [findings[i] for i in taken], module, outcome, source.display, compiles,
                                 attempt)
            return None  # the file stops: a further round would offer the broken fix again
        new, new_module = attempt
        if new == text:
            return module
        _applied(outcome, number, new, [findings[i] for i in taken])
        text, module = new, new_module
    outcome.remaining = runtime.check_text(source, text, module).findings
    if any(fixable(f, unsafe) for f in outcome.remaining):
        outcome.error = FileError(source.display, "fix", f"still fixable after {MAX_ROUNDS} rounds; run audit again")
        return None
    return module


def _attempt(text: str, edits: list[TextEdit], module: cst.Module, outcome: FileFix, display: str,
             compiles: bool) -> tuple[str, cst.Module] | str:
    """The text and tree a round's edits give (imports they leave unused removed), or what is wrong
    with them: they do not parse, or (when the file compiled) do not compile."""
    import libcst as cst

    new = apply_edits(text, edits)
    try:
        with _validated():
            new_module = cst.parse_module(new)
            cleaned = remove_unused(name_uses(module), new_module, new, outcome.exported)
            if cleaned != new:
                new, new_module = cleaned, cst.parse_module(cleaned)
    except (cst.ParserSyntaxError, cst.CSTValidationError, RecursionError) as exc:
        return f"its result does not parse ({_first_line(exc)})"
    problem = _validate(new, display, compiles)
    return problem if problem is not None else (new, new_module)


def _keep_what_validates(text: str, taken: list[Finding], module: cst.Module, outcome: FileFix, display: str,
                         compiles: bool, problem: str) -> None:
    """A round that does not validate: its fixes are tried again one by one, in order, and those
    the file stays valid with are kept (one broken rewrite no longer costs the file every other
    fix). The file then stops: a further round would offer the broken fix again."""
    index = LineIndex(text)

    def attempt(chosen: list[Finding]) -> str | None:
        edits: list[TextEdit] = []
        for finding in chosen:
            edits += [edit for edit in to_offsets(finding.fix, text, index) or () if edit not in edits]  # type: ignore[arg-type]
        result = _attempt(text, edits, module, outcome, display, compiles)
        return None if isinstance(result, str) else result[0]

    _keep_greedily(text, taken, attempt, outcome, display, problem)


def _keep_greedily(text: str, taken: list[Finding], attempt: Callable[[list[Finding]], str | None],
                   outcome: FileFix, display: str, problem: str) -> None:
    """Keep, in order, each of a failed round's fixes that `attempt` (the text with those fixes, or
    None when it does not validate) accepts beside those kept before it; report what was dropped."""
    number = outcome.rounds + 1
    kept: list[Finding] = []
    best: str | None = None
    if 1 < len(taken) <= MAX_RETRIED_FIXES:
        for finding in taken:
            new = attempt([*kept, finding])
            if new is not None:
                kept, best = [*kept, finding], new
    if best is None or best == text:
        outcome.error = FileError(display, "fix", f"round {number} reverted: {problem}; the file keeps the "
                                                  "previous text")
        return
    _applied(outcome, number, best, kept)
    dropped = [f for f in taken if all(f is not k for k in kept)]
    where = ", ".join(f"{f.rule} at {f.line}:{f.column}" + (f" (cell {f.cell})" if f.cell else "") for f in dropped)
    outcome.error = FileError(display, "fix", f"round {number}: {len(dropped)} of {len(taken)} fixes not applied "
                                              f"({where}): with them {problem}; the other {len(kept)} applied")


def _applied(outcome: FileFix, number: int, new: str, taken: list[Finding]) -> None:
    outcome.fixed = new
    outcome.rounds = number
    outcome.applied.update((f.rule, f.name) for f in taken)
    _note_creates(outcome, taken)


def _check(runtime: Runtime, source: SourceFile, outcome: FileFix, text: str,
           module: cst.Module | None = None) -> FileResult:
    """The round's check of `text`; again once the device owner it first needs is found."""
    result = runtime.check_text(source, text, module)
    if outcome.find_owner is not None and outcome.find_owner(result.findings):
        result = runtime.check_text(source, text, module)  # its device ties get their rewrites now
    return result


def _note_creates(outcome: FileFix, taken: list[Finding]) -> None:
    for finding in taken:
        for new in finding.fix.creates if finding.fix is not None else ():
            outcome.creates.setdefault(new.path, new.content)


def _text_rounds(runtime: Runtime, source: SourceFile, outcome: FileFix, unsafe: bool) -> None:
    """Rounds for a file that is not Python; a pyproject.toml must still be TOML afterwards."""
    text = outcome.fixed
    was_toml = source.kind == "pyproject" and _toml_problem(text) is None
    for _ in range(MAX_ROUNDS):
        findings = [f for f in runtime.check_text(source, text).findings if fixable(f, unsafe)]
        taken, edits = select([f.fix for f in findings], text)  # type: ignore[misc]
        if not taken:
            return
        new = apply_edits(text, edits)
        problem = _toml_problem(new) if was_toml else None
        if problem is not None:
            outcome.error = FileError(source.display, "fix", f"round {outcome.rounds + 1} reverted: its result is not "
                                                             f"TOML ({problem}); the file keeps the previous text")
            return
        if new == text:
            return
        text = outcome.fixed = new
        outcome.rounds += 1
        outcome.applied.update((findings[i].rule, findings[i].name) for i in taken)
    outcome.error = FileError(source.display, "fix", f"still fixable after {MAX_ROUNDS} rounds; run audit again")


def _notebook_rounds(runtime: Runtime, source: SourceFile, outcome: FileFix, unsafe: bool) -> None:
    """Rounds over a notebook: each fix's edits go into its finding's cell (their lines are the
    cell's); the JSON is rebuilt in the notebook's own layout and its code validated like a file's.
    A round that does not validate keeps the fixes the notebook stays valid with, as a file's does."""
    text = outcome.fixed
    layout = _json_layout(text)
    try:
        compiles = _compiles(read_notebook(text).code, source.display) is None
    except NotebookError:
        return  # the scan reported it
    for phase_unsafe in (False, True) if unsafe else (False,):
        for _ in range(MAX_ROUNDS):
            findings = [f for f in _check(runtime, source, outcome, text).findings
                        if fixable(f, phase_unsafe) and f.cell is not None]
            if not findings:
                break
            if layout is None:
                outcome.error = FileError(source.display, "fix", "not fixed: writing this notebook back would change "
                                                                 "its JSON layout (not the one Jupyter writes)")
                return
            new, taken = _notebook_round(text, findings, layout)
            if not taken:
                break
            number = outcome.rounds + 1
            problem = _notebook_problem(new, source.display, compiles)
            if problem is not None:
                _keep_valid_cells(text, taken, layout, outcome, source.display, compiles, problem)
                return
            if new == text:
                break
            _applied(outcome, number, new, taken)
            text = new


def _notebook_round(text: str, findings: list[Finding], layout: tuple[int, bool, str]) -> tuple[str, list[Finding]]:
    """The notebook with the fixes of `findings` that go together applied, cell by cell, and those fixes."""
    import json

    data = json.loads(text)
    taken_findings: list[Finding] = []
    for number in sorted({f.cell for f in findings}):
        items = [f for f in findings if f.cell == number]
        cell = data["cells"][number - 1]
        as_list = isinstance(cell.get("source"), list)
        code = "".join(cell["source"]) if as_list else cell.get("source", "")
        taken, edits = _select_in(items, code)
        if taken:
            new_code = _apply_in(code, edits)
            cell["source"] = _jupyter_lines(new_code) if as_list else new_code
            taken_findings += [items[i] for i in taken]
    return json.dumps(data, indent=layout[0], sort_keys=layout[1], ensure_ascii=False) + layout[2], taken_findings


def _notebook_problem(new: str, display: str, compiles: bool) -> str | None:
    """What is wrong with a round's notebook: its code does not parse or (when it did) compile."""
    import libcst as cst

    try:
        joined = read_notebook(new).code
        with _validated():
            cst.parse_module(joined)
    except (NotebookError, cst.ParserSyntaxError, cst.CSTValidationError, RecursionError) as exc:
        return f"its result does not parse ({_first_line(exc)})"
    return _validate(joined, display, compiles)


def _keep_valid_cells(text: str, taken: list[Finding], layout: tuple[int, bool, str], outcome: FileFix,
                      display: str, compiles: bool, problem: str) -> None:
    """A notebook round that does not validate: its fixes tried again one by one (as `_keep_what_validates`)."""
    def attempt(chosen: list[Finding]) -> str | None:
        new, applied = _notebook_round(text, chosen, layout)
        return new if len(applied) == len(chosen) and _notebook_problem(new, display, compiles) is None else None

    _keep_greedily(text, taken, attempt, outcome, display, problem)


def _jupyter_lines(code: str) -> list[str]:
    """A cell's source as Jupyter lists it: split after each `\\n` only (str.splitlines() would also
    split at U+2028, form feeds, `\\r`: issue 20, D16/D17)."""
    parts = code.split("\n")
    lines = [part + "\n" for part in parts[:-1]]
    return [*lines, parts[-1]] if parts[-1] else lines


def _select_in(findings: list[Finding], code: str) -> tuple[list[int], list]:
    return select([f.fix for f in findings], code)  # type: ignore[misc]


def _apply_in(code: str, edits: list) -> str:
    return apply_edits(code, edits)


def _json_layout(text: str) -> tuple[int, bool, str] | None:
    """(indent, sort_keys, ending) with which json.dumps gives `text` back exactly, or None."""
    import json

    try:
        data = json.loads(text)
    except ValueError:
        return None
    ending = "\n" if text.endswith("\n") else ""
    for indent in (1, 2, 4):
        for sort_keys in (True, False):
            if json.dumps(data, indent=indent, sort_keys=sort_keys, ensure_ascii=False) + ending == text:
                return indent, sort_keys, ending
    return None


def _toml_problem(text: str) -> str | None:
    try:
        toml_guard.loads(text)
    except (ValueError, RecursionError) as exc:  # TOMLDecodeError is a ValueError
        return _first_line(exc)
    return None


class _validated:
    """libcst's per-node validation on, even inside the scan's unvalidated block."""

    def __enter__(self) -> None:
        import libcst as cst

        self.saved = cst.CSTNode.__dict__.get("__post_init__")
        original = python_scan.VALIDATING_POST_INIT
        if original is not None:
            cst.CSTNode.__post_init__ = original  # type: ignore[method-assign]

    def __exit__(self, *exc: object) -> None:
        import libcst as cst

        if self.saved is not None:
            cst.CSTNode.__post_init__ = self.saved  # type: ignore[method-assign]


def _validate(text: str, path: str, must_compile: bool) -> str | None:
    """None when the fixed text is good; else what is wrong with it."""
    if must_compile:
        problem = _compiles(text, path)
        if problem is not None:
            return f"its result does not compile ({problem})"
    return None


def _compiles(text: str, path: str) -> str | None:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            compile(text, path, "exec", dont_inherit=True)
    except (SyntaxError, ValueError, RecursionError, MemoryError, OverflowError) as exc:
        return _first_line(exc)
    return None


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0][:200] if text else type(exc).__name__


def _encoding(data: bytes) -> str:
    import io
    import tokenize

    encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    return "utf-8" if encoding == "utf-8-sig" else encoding


def write_atomically(path: str, data: bytes, expected: bytes, root: str | None = None) -> str | None:
    """Replace `path` (inside `root`, default its folder) with `data` if it still holds
    `expected`; None on success, else why nothing was written."""
    try:
        with TreeFile(path, root or os.path.dirname(os.path.abspath(path))) as tree_file:
            tree_file.replace(data, expected)
    except (WriteRefused, OSError) as exc:
        return f"not fixed: {exc if isinstance(exc, WriteRefused) else exc.strerror or exc}"
    return None

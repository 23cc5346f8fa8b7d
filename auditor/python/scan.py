"""Scanning one Python file: parse once, walk once, place the findings."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

import libcst as cst

from auditor.analysis.placement import Placer
from auditor.analysis.project import FileFacts
from auditor.catalogue import Catalogue
from auditor.checks.registry import rule_by_code
from auditor.context import FALLBACK_ONLY, FindingList, PythonContext
from auditor.fix.build import plan_fixes
from auditor.fix.floor import TorchFloor
from auditor.fix.policy import finalize
from auditor.model import FileError, FileResult, Finding
from auditor.python.positions import place_nodes
from auditor.python.walker import Walker
from auditor.read.text import SourceError
from auditor.sandbox.deep import run_deep
from auditor.sandbox.isolate import IsolationFailure, deadline_for, run_isolated
from auditor.sandbox.parse_guard import guard_python

if TYPE_CHECKING:
    from auditor.fix.plan import PlannedFix

# Node types whose validation finds syntax errors the grammar lets through ("a" b"b"): still checked.
_GRAMMAR_GAPS = frozenset({cst.ConcatenatedString})
_unvalidated = 0  # how many unvalidated_parsing() blocks are open
VALIDATING_POST_INIT = cst.CSTNode.__dict__.get("__post_init__")  # libcst's own (the fixer validates with it)


def _validate_grammar_gaps(node: cst.CSTNode) -> None:
    if type(node) in _GRAMMAR_GAPS:
        node._validate()


@contextmanager
def unvalidated_parsing() -> Iterator[None]:
    """Within this block libcst does not validate each node as the parser builds it.

    Every libcst node runs `_validate()` from `CSTNode.__post_init__`. That guards trees built by
    hand; the parser's own output is valid by construction, and the checks cost about a quarter
    of the parse (libcst's own PERF note in `__post_init__` says the same). Only the checks the
    grammar does not make itself still run. Open it around a batch of files, not one: swapping
    the hook on the base class invalidates the interpreter's attribute caches of every node
    class, which costs more than it saves when done per file."""
    global _unvalidated
    original = cst.CSTNode.__dict__.get("__post_init__")
    swap = _unvalidated == 0 and original is not None  # a libcst without the hook: parse as documented
    if swap:
        cst.CSTNode.__post_init__ = _validate_grammar_gaps  # type: ignore[method-assign]
    _unvalidated += 1
    try:
        yield
    finally:
        _unvalidated -= 1
        if swap:
            cst.CSTNode.__post_init__ = original  # type: ignore[method-assign]


def parse_module(text: str) -> cst.Module:
    """`libcst.parse_module`, without per-node validation (see `unvalidated_parsing`)."""
    with unvalidated_parsing():
        return cst.parse_module(text)


def parse_error_message(exc: cst.ParserSyntaxError) -> str:
    first = str(exc).strip().splitlines()[0] if str(exc).strip() else "syntax error"
    return f"syntax error at line {exc.raw_line}, column {exc.raw_column + 1}: {first}"


def scan_python(path: str, text: str, walker: Walker, catalogue: Catalogue,
                after_walk: Callable[[PythonContext], None] | None = None, floor: TorchFloor | None = None,
                hidden: frozenset[str] = frozenset(), module: cst.Module | None = None,
                gate_extra: tuple[Finding, ...] = (), facts: FileFacts | None = None) -> FileResult:
    """The file's findings; `after_walk` lets file-level rules (setup.py) use the same tree.
    `floor` is the project's torch floor the fixes are judged against; findings of the `hidden`
    rules only hold fixes back (auditor/fix/policy.py) and are dropped. `module`: the text's tree
    when the caller already has it (the fixer). `gate_extra`: findings of the same file from other
    readers (a notebook's shell lines) that the CUDA-clean gate must count too. `facts` is what
    the project says about the file (auditor.analysis.project).

    The guard (auditor/sandbox/parse_guard.py) decides first whether libcst may see the text at all; the parse
    and the walk then run on the large-stack thread (auditor/sandbox/deep.py), or in an isolated child
    process when CPython could not vouch for the file (auditor/sandbox/isolate.py)."""
    args = (path, text, walker, catalogue, after_walk, floor, hidden, module, gate_extra, facts)
    if module is not None:  # parsed by the caller, from a text that passed the guard
        return run_deep(_scan, *args)
    try:
        isolate = guard_python(text)
    except SourceError as exc:
        return FileResult(path, errors=[FileError(path, exc.kind, exc.message)])
    if not isolate:
        return run_deep(_scan, *args)
    try:
        return run_isolated(_scan, *args, timeout=deadline_for(len(text)))
    except IsolationFailure as exc:
        return FileResult(path, errors=[FileError(path, exc.kind, exc.message)], parsed=True)


def _scan(path: str, text: str, walker: Walker, catalogue: Catalogue,
          after_walk: Callable[[PythonContext], None] | None, floor: TorchFloor | None, hidden: frozenset[str],
          module: cst.Module | None, gate_extra: tuple[Finding, ...], facts: FileFacts | None) -> FileResult:
    result = FileResult(path=path, parsed=True)
    try:
        module = module if module is not None else parse_module(text)
    except cst.ParserSyntaxError as exc:
        result.errors.append(FileError(path, "parse", parse_error_message(exc)))
        return result
    except cst.CSTValidationError as exc:  # syntax the grammar accepts but Python does not
        result.errors.append(FileError(path, "parse", f"syntax error: {exc}"))
        return result
    except RecursionError:
        result.errors.append(FileError(path, "parse", "too deeply nested to parse"))
        return result
    ctx = PythonContext(path, text, catalogue, module, facts)
    try:
        walker.run(ctx)
    except RecursionError:  # e.g. hundreds of chained calls: libcst parsed it, the walk cannot
        result.errors.append(FileError(path, "parse", "too deeply nested to check"))
        return result
    if after_walk is not None:
        after_walk(ctx)
    result.findings = place_findings(ctx, floor, hidden, gate_extra)
    result.errors.extend(ctx.result_errors())
    return result


def place_findings(ctx: PythonContext, floor: TorchFloor | None = None,
                   hidden: frozenset[str] = frozenset(), gate_extra: tuple[Finding, ...] = ()) -> list[Finding]:
    """Turn pending node reports into findings in their context (auditor.analysis) and with their
    fixes, drop duplicates and superseded ones, sort."""
    findings = FindingList(ctx.omitted)  # at most MAX_FINDINGS_PER_FILE, the rest counted
    findings.extend(ctx.findings)
    planned: dict[int, PlannedFix] = {}
    if ctx.pending:
        plans = plan_fixes(ctx, hidden)
        ends = [fields["__end_node"] for _, _, fields in ctx.pending if "__end_node" in fields]
        placed = place_nodes(ctx.module, ctx.text, [*(node for _, node, _ in ctx.pending), *ends, *plans.anchors])
        spans, index = placed.spans, placed.index
        fix_placer = plans.placer(ctx.text, spans) if plans.by_report else None
        contexts = Placer(ctx, placed)
        located = []
        for number, (rule, node, fields) in enumerate(ctx.pending):
            span = spans.get(id(node))
            if span is None:
                continue
            end_node = fields.get("__end_node")
            end = spans[id(end_node)][1] if end_node is not None and id(end_node) in spans else span[1]
            where = contexts.where(rule, node, fields)
            if fields.get(FALLBACK_ONLY) and (where.optional is None or "fallback" not in where.kinds):
                continue  # reported only under a fallback (an own module that needs a GPU package: LK409)
            located.append((number, rule, (*index.position(span[0]), *index.position(end)), fields, where, node))
        optional_uses(located, placed.ancestors)
        for number, rule, position, fields, where, _ in located:
            finding = ctx.make_finding(rule, *position, dict(fields), where)
            planned_fix = plans.finish(number, fix_placer)
            if planned_fix is not None:
                planned[id(finding)] = planned_fix
            findings.append(finding)
    kept = drop_redundant(findings, ctx)
    if planned:
        kept = finalize([*kept, *gate_extra], planned, floor or TorchFloor(), ctx.catalogue, ctx.text)[:len(kept)]
    if hidden:
        kept = [f for f in kept if f.rule not in hidden]
    return kept

_IMPORTS = (cst.Import, cst.ImportFrom, cst.ImportAlias)


def optional_uses(located: list, ancestors: dict[int, tuple]) -> None:
    """A name bound only by an optional import (`try: from apex import amp` with a fallback, or
    under `if is_triton_available():`) is used only where that import worked: its uses inside a
    function are optional too (`amp.scale_loss(...)` in timm's ApexScaler). A use that runs when
    the module is imported (a decorator, a module-level call) runs whether the import worked or
    not, so it stays on the main path."""
    imported: dict[str, tuple[str, int | None, set[str]]] = {}
    for *_, fields, where, node in located:
        api = fields.get("api")
        if api and isinstance(node, _IMPORTS):
            if where.optional is not None and where.optional_kind == "code":
                imported.setdefault(api, (where.optional, where.optional_line, where.kinds))
            else:
                imported[api] = ("", None, set())  # also imported unconditionally: its uses are not optional
    imported = {api: how for api, how in imported.items() if how[0]}
    if not imported:
        return
    for *_, fields, where, node in located:
        api = fields.get("api")
        if not api or where.optional is not None or isinstance(node, _IMPORTS) or not _in_function_body(node, ancestors):
            continue
        for name, (guard, line, kinds) in imported.items():
            if api == name or api.startswith(name + "."):
                where.optional, where.optional_line, where.optional_kind = guard, line, "import"
                where.kinds |= kinds
                break


def drop_redundant(findings: list[Finding], ctx: PythonContext | None = None) -> list[Finding]:
    unique: dict[tuple, Finding] = {}
    for finding in findings:
        unique.setdefault((finding.rule, finding.line, finding.column, finding.end_line, finding.end_column), finding)
    kept = list(unique.values())
    covering = [f for f in kept if (rule := rule_by_code(f.rule)) is not None and rule.supersedes]
    if covering:
        def inside(inner: Finding, outer: Finding) -> bool:
            return (inner is not outer
                    and (inner.line, inner.column) >= (outer.line, outer.column)
                    and (inner.end_line, inner.end_column) <= (outer.end_line, outer.end_column))

        kept = [
            f for f in kept
            if not any(f.rule in rule_by_code(o.rule).supersedes and inside(f, o) for o in covering)
        ]
    kept.sort(key=Finding.sort_key)
    return kept


def _in_function_body(node: cst.CSTNode, ancestors: dict[int, tuple]) -> bool:
    child = node
    for parent in reversed(ancestors.get(id(node), ())):
        if isinstance(parent, (cst.FunctionDef, cst.Lambda)) and child is parent.body:
            return True
        child = parent
    return False

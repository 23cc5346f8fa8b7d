"""Scanning one Python file: parse once, walk once, place the findings."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

import libcst as cst

from auditor.catalogue import Catalogue
from auditor.context import PythonContext
from auditor.model import FileError, FileResult, Finding
from auditor.positions import node_ranges
from auditor.walker import Walker

# Node types whose validation finds syntax errors the grammar lets through ("a" b"b"): still checked.
_GRAMMAR_GAPS = frozenset({cst.ConcatenatedString})
_unvalidated = 0  # how many unvalidated_parsing() blocks are open


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
                after_walk: Callable[[PythonContext], None] | None = None) -> FileResult:
    """The file's findings; `after_walk` lets file-level rules (setup.py) use the same tree."""
    result = FileResult(path=path, parsed=True)
    try:
        module = parse_module(text)
    except cst.ParserSyntaxError as exc:
        result.errors.append(FileError(path, "parse", parse_error_message(exc)))
        return result
    except cst.CSTValidationError as exc:  # syntax the grammar accepts but Python does not
        result.errors.append(FileError(path, "parse", f"syntax error: {exc}"))
        return result
    except RecursionError:
        result.errors.append(FileError(path, "parse", "too deeply nested to parse"))
        return result
    ctx = PythonContext(path, text, catalogue, module)
    try:
        walker.run(ctx)
    except RecursionError:  # e.g. hundreds of chained calls: libcst parsed it, the walk cannot
        result.errors.append(FileError(path, "parse", "too deeply nested to check"))
        return result
    if after_walk is not None:
        after_walk(ctx)
    result.findings = place_findings(ctx)
    result.errors.extend(ctx.errors)
    return result


def place_findings(ctx: PythonContext) -> list[Finding]:
    """Turn pending node reports into findings, drop duplicates and superseded ones, sort."""
    findings = list(ctx.findings)
    if ctx.pending:
        ends = [fields["__end_node"] for _, _, fields in ctx.pending if "__end_node" in fields]
        ranges = node_ranges(ctx.module, ctx.text, [*(node for _, node, _ in ctx.pending), *ends])
        for rule, node, fields in ctx.pending:
            fields = dict(fields)
            end_node = fields.pop("__end_node", None)
            span = ranges.get(id(node))
            if span is None:
                continue
            if end_node is not None and id(end_node) in ranges:
                span = (*span[:2], *ranges[id(end_node)][2:])
            findings.append(ctx.make_finding(rule, *span, fields))
    return drop_redundant(findings, ctx)


def drop_redundant(findings: list[Finding], ctx: PythonContext | None = None) -> list[Finding]:
    from auditor.registry import rule_by_code

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

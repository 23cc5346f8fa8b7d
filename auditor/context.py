"""What a rule sees of the file it checks, and how it reports."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import libcst as cst

from auditor.analysis.apply import apply
from auditor.analysis.placement import Where
from auditor.analysis.project import NO_FACTS
from auditor.catalogue import ApiEntry, Catalogue
from auditor.model import MAX_FINDINGS_PER_FILE, FileError, Finding, omitted_error
from auditor.python.names import Resolver, dotted_parts
from auditor.read.text import split_lines
from auditor.targets import effect_fields, fact_fields

if TYPE_CHECKING:
    from auditor.analysis.project import FileFacts
    from auditor.checks.base import Rule

# A report field: the finding is kept only where its placement finds a fallback around it
# (auditor.python.scan.place_findings; LK409's imports of own modules inside GPU packages).
FALLBACK_ONLY = "__fallback_only"


@dataclass(frozen=True)
class Reference:
    """A dotted name, resolved through imports, that the catalogue gives to a rule."""

    qualified: str  # e.g. "torch.cuda.synchronize"
    entry: ApiEntry
    node: cst.CSTNode  # what to report: the call, the decorator's name, the import alias
    kind: str  # import | call | ref
    call: cst.Call | None = None
    statement: cst.CSTNode | None = None  # for imports: the whole import statement

    @property
    def report_node(self) -> cst.CSTNode:
        """Imports are reported on their statement (where a reviewer looks), uses on the use."""
        return self.statement if self.statement is not None else self.node


class FindingList(list):
    """A file's findings, holding at most MAX_FINDINGS_PER_FILE; the rest counted per rule."""

    def __init__(self, omitted: dict[str, int]) -> None:
        super().__init__()
        self.omitted = omitted

    @property
    def full(self) -> bool:
        return len(self) >= MAX_FINDINGS_PER_FILE

    def append(self, finding: Finding) -> None:
        if len(self) >= MAX_FINDINGS_PER_FILE:
            self.omitted[finding.rule] = self.omitted.get(finding.rule, 0) + 1
        else:
            super().append(finding)

    def extend(self, findings: Iterable[Finding]) -> None:
        for finding in findings:
            self.append(finding)


def _render(template: str, fields: dict[str, Any]) -> str:
    try:
        return template.format(**fields)
    except (KeyError, IndexError, ValueError):
        return template


class FileContext:
    """A file being checked: its display path, its text, what the project says about it and the
    findings reported so far."""

    def __init__(self, path: str, text: str, catalogue: Catalogue, kind: str, facts: FileFacts | None = None) -> None:
        self.path = path
        self.text = text
        self.catalogue = catalogue
        self.kind = kind
        self.facts = facts
        self.omitted: dict[str, int] = {}  # rule code -> findings over MAX_FINDINGS_PER_FILE, not kept
        self.findings: list[Finding] = FindingList(self.omitted)
        self.errors: list[FileError] = []
        self.state: dict[str, Any] = {}  # per-rule scratch space, keyed by rule code
        self._lines: list[str] | None = None

    @property
    def lines(self) -> list[str]:
        """The text's lines as Python counts them (auditor.read.text.split_lines): `\\n`, `\\r\\n` and `\\r`."""
        if self._lines is None:
            self._lines = split_lines(self.text)
        return self._lines

    def result_errors(self) -> list[FileError]:
        """The file's error entries, with the count of the findings it did not keep."""
        return [*self.errors, omitted_error(self.path, self.omitted)] if self.omitted else list(self.errors)

    def error(self, kind: str, message: str) -> None:
        """Record that (part of) this file could not be read; other findings still count."""
        error = FileError(self.path, kind, message)
        if error not in self.errors:
            self.errors.append(error)

    def make_finding(self, rule: Rule, line: int, column: int, end_line: int, end_column: int,
                     fields: dict[str, Any], where: Where | None = None) -> Finding:
        """The finding as its context makes it (analysis.apply): `where` comes from the placement
        of a Python node; other findings get what the file's path and project say. Once the file
        holds MAX_FINDINGS_PER_FILE, only the rule of a finding matters: it is counted, not kept."""
        if getattr(self.findings, "full", False):
            return self._counted(rule)
        snippet = self.lines[line - 1].strip()[:200] if 0 < line <= len(self.lines) else ""
        fields.setdefault("snippet", snippet)
        min_torch = fields.get("min_torch") or rule.min_torch
        effects = rule.effects()
        override = fields.pop("__effects", None)  # a library's own support, from its catalogue row
        if override:
            effects = {target: override.get(target, effect) for target, effect in effects.items()}
        inert = fields.pop("__inert", False)  # a setting no installer reads any more: info, works everywhere
        if inert:
            effects = {target: "works" for target in effects}
        for key, value in (*effect_fields(effects).items(), *fact_fields().items()):  # "raises on {raising_targets}"
            fields.setdefault(key, value)
        if where is None:
            where = self.file_where()
        hint = fields.pop("__optional", None)
        if hint:  # ("dependency", "the optional extra `gpu`"[, line of the choice]): the base install skips it
            where = replace(where, optional=hint[1], optional_line=hint[2] if len(hint) > 2 and hint[2] else line,
                            optional_kind=hint[0])
        if fields.pop("__test", False):
            where = replace(where, test=True)
        covered = fields.pop("__covered", None)
        if covered:
            where = replace(where, covered=set(where.covered) | set(covered))
        applied = apply(rule, fields, where, effects, _render(rule.message, fields), _render(rule.suggestion, fields),
                        self.catalogue)
        return Finding(
            path=self.path, line=line, column=column, end_line=end_line, end_column=end_column,
            rule=rule.code, name=rule.name, category=rule.category.value,
            severity="info" if inert else applied.severity, message=applied.message, suggestion=applied.suggestion,
            targets=applied.effects, min_torch=min_torch, snippet=snippet, context=applied.context,
            guard=applied.guard, fix=fields.get("__fix"),
        )

    def _counted(self, rule: Rule) -> Finding:
        """A bare finding of `rule` for FindingList to count (one per rule and file)."""
        key = f"__counted {rule.code}"
        bare = self.state.get(key)
        if bare is None:
            bare = self.state[key] = Finding(path=self.path, line=1, column=1, end_line=1, end_column=1, rule=rule.code,
                                             name=rule.name, category=rule.category.value, severity="", message="",
                                             suggestion="", targets={}, min_torch=None, snippet="", context=None)
        return bare

    def file_where(self) -> Where:
        """The context every finding of this file shares (test-only path, backend module)."""
        cached = self.state.get("__where")
        if cached is None:
            cached = self.state["__where"] = Where.of_file(self.facts or NO_FACTS)
        return cached

    def report_at(self, rule: Rule, line: int, column: int = 1, end_line: int | None = None,
                  end_column: int | None = None, **fields: Any) -> None:
        """Report at a 1-based position; the end defaults to the end of the start line."""
        if end_line is None:
            end_line = line
        if end_column is None:
            text = self.lines[line - 1] if 0 < line <= len(self.lines) else ""
            end_column = max(len(text) + 1, column)
        self.findings.append(self.make_finding(rule, line, column, end_line, end_column, fields))


class PythonContext(FileContext):
    """A Python file during its walk: name resolution plus node-based reporting."""

    def __init__(self, path: str, text: str, catalogue: Catalogue, module: cst.Module,
                 facts: FileFacts | None = None) -> None:
        super().__init__(path, text, catalogue, "python", facts)
        self.module = module
        self.resolver = Resolver()
        self.rules_by_name: dict[str, Rule] = {}  # the active rules, for family-wide handlers
        self.pending: list[tuple[Rule, cst.CSTNode, dict[str, Any]]] = []
        self.in_annotation = 0  # > 0 while the walk is inside a type annotation
        # What the file assigns each name and `self.name` (in the walk's order): guards follow flags
        # through it (`IS_HIP = torch.version.hip is not None`, `device = "cuda"`).
        self.assigned: dict[str, list[cst.BaseExpression | None]] = {}  # None: not known (a parameter)
        self._qualified: tuple[cst.CSTNode | None, str | None, int] = (None, None, -1)  # the last qualify() asked

    def qualify(self, node: cst.BaseExpression) -> str | None:
        """`th.cuda.synchronize` -> "torch.cuda.synchronize" when `th` is `import torch as th`.
        Several rules ask it of the same callee in a row: the last answer is kept."""
        version = self.resolver.version
        if node is self._qualified[0] and version == self._qualified[2]:
            return self._qualified[1]
        parts = dotted_parts(node)
        head = self.resolver.lookup(parts[0]) if parts else None
        if head is None:
            value = None
        else:
            value = ".".join([head, *parts[1:]]) if len(parts) > 1 else head
        self._qualified = (node, value, version)
        return value

    def report(self, rule: Rule, node: cst.CSTNode, end_node: cst.CSTNode | None = None, **fields: Any) -> None:
        """Report `node` (up to the end of `end_node` when given); positions are computed after the
        walk, once per file."""
        if len(self.pending) >= MAX_FINDINGS_PER_FILE:  # placing them is what costs: count the rest
            self.omitted[rule.code] = self.omitted.get(rule.code, 0) + 1
            return
        if end_node is not None:
            fields["__end_node"] = end_node
        self.pending.append((rule, node, fields))

    @property
    def function_name(self) -> str:
        return self.resolver.function_name()

"""The vocabulary every module shares: categories, severities, findings, errors. The targets are
data: auditor.targets (rules/targets.toml).

Part of the plugin API (README, Extending: plugins): plugins import `Category` and `Severity` from
`auditor.model`; keep them importable from here (tests/test_plugin.py checks it)."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum


class Category(StrEnum):
    DEVICE = "device"
    CUDA_API = "cuda-api"
    DISTRIBUTED = "distributed"
    KERNEL = "kernel"
    DEPENDENCY = "dependency"
    ENV = "env"
    SUPPRESSION = "suppression"  # about the suppression comments themselves, not lock-in


class Severity(StrEnum):
    BLOCKER = "blocker"
    MAJOR = "major"
    MINOR = "minor"
    INFO = "info"

    @property
    def rank(self) -> int:
        """Higher is worse: info 0 ... blocker 3."""
        return _SEVERITY_RANK[self]


_SEVERITY_RANK = {Severity.INFO: 0, Severity.MINOR: 1, Severity.MAJOR: 2, Severity.BLOCKER: 3}


class Effect(StrEnum):
    """What a piece of lock-in does when the code runs on another target."""

    WORKS = "works"
    DEGRADES = "degrades"  # runs, but silently falls back, no-ops or returns 0
    RAISES = "raises"


def cap_effect(effect: str) -> str:
    """An effect where a fallback or the caller can step in: "raises" becomes "degrades"."""
    return Effect.DEGRADES.value if effect == Effect.RAISES.value else effect


CATEGORIES: tuple[str, ...] = tuple(c.value for c in Category)
SEVERITIES: tuple[str, ...] = tuple(s.value for s in Severity)


class Applicability(StrEnum):
    """How far a fix may be trusted (ruff's classes)."""

    SAFE = "safe"  # identical behaviour on every target: applied by --fix
    UNSAFE = "unsafe"  # changes behaviour somewhere: applied only with --unsafe-fixes
    DISPLAY = "display"  # shown, never applied


@dataclass(frozen=True)
class Edit:
    """Replace the text from (line, column) up to (end_line, end_column), exclusive, with
    `content`. 1-based, in the same coordinates as the finding (a notebook cell's lines)."""

    line: int
    column: int
    end_line: int
    end_column: int
    content: str

    def to_dict(self) -> dict:
        return {"line": self.line, "column": self.column, "end_line": self.end_line,
                "end_column": self.end_column, "content": self.content}


@dataclass(frozen=True)
class NewFile:
    """A file a fix creates (the project's device module): `path` relative to the scanned root. It is
    written only where nothing exists (never over a file), inside the scanned root."""

    path: str
    content: str

    def to_dict(self) -> dict:
        return {"path": self.path, "content": self.content}


@dataclass(frozen=True)
class Fix:
    """A rewrite carried by a finding: plain text edits, so it survives the process pool and the
    cache. `min_torch` is the PyTorch version the rewritten code needs. `reason` says why a fix
    that would otherwise be applied is only shown (`display`): the project's torch floor is older
    than `min_torch`, the file is not CUDA-clean (catalogue 5.5), or the finding's context."""

    applicability: str  # an Applicability value
    message: str
    edits: tuple[Edit, ...]
    min_torch: str | None = None
    reason: str | None = None
    creates: tuple[NewFile, ...] = ()  # files the fix needs that do not exist yet (created with its edits)

    def to_dict(self) -> dict:
        out = {"applicability": self.applicability, "message": self.message, "min_torch": self.min_torch,
               "reason": self.reason, "edits": [edit.to_dict() for edit in self.edits]}
        if self.creates:
            out["creates"] = [new.to_dict() for new in self.creates]
        return out


@dataclass(frozen=True)
class Finding:
    """One place that ties the code to NVIDIA. Lines and columns are 1-based; end is exclusive."""

    path: str
    line: int
    column: int
    end_line: int
    end_column: int
    rule: str
    name: str
    category: str
    severity: str
    message: str
    suggestion: str
    targets: dict[str, str] = field(hash=False, compare=False)
    min_torch: str | None = None
    snippet: str = ""
    # Where the tie stands (guarded, optional, backend-module, test, ...); None: the main path.
    context: str | None = None
    cell: int | None = None  # notebooks: the 1-based cell (among all cells) that line and column are in
    fix: Fix | None = field(default=None, hash=False, compare=False)
    # The kinds of the guards behind a `guarded` or `optional` context, "+"-joined ("option",
    # "build+env"; rules/contexts.toml, "Guard kinds"); None when no guard decided it.
    guard: str | None = None

    def sort_key(self) -> tuple:
        # A notebook's lines count within each cell: the cell comes first, or findings of
        # different cells at the same line would keep whatever order a set gave them.
        return (self.path, self.cell or 0, self.line, self.column, self.rule, self.end_line, self.end_column,
                self.message, self.context or "", self.suggestion)

    def to_dict(self) -> dict:
        return {
            "rule": self.rule,
            "name": self.name,
            "category": self.category,
            "severity": self.severity,
            "path": self.path,
            "line": self.line,
            "column": self.column,
            "end_line": self.end_line,
            "end_column": self.end_column,
            "message": self.message,
            "suggestion": self.suggestion,
            "min_torch": self.min_torch,
            "targets": dict(self.targets),
            "snippet": self.snippet,
            "context": self.context,
            "guard": self.guard,
            "cell": self.cell,
            "fix": self.fix.to_dict() if self.fix is not None else None,
        }



@dataclass(frozen=True, order=True)
class FileError:
    """A file that could not be read or parsed; the run goes on without it."""

    path: str
    kind: str  # read, decode, binary, too-large, parse, symlink-loop, ... internal
    message: str

    def to_dict(self) -> dict:
        return {"path": self.path, "kind": self.kind, "message": self.message}


INTERNAL = "internal"  # a FileError kind: the auditor itself failed on the file (a bug)


def internal_errors(errors: list[FileError]) -> list[FileError]:
    """The files the auditor failed on: their findings are missing, so no score or verdict is clean."""
    return [e for e in errors if e.kind == INTERNAL]


def withheld_reason(errors: list[FileError]) -> str | None:
    """Why scores and verdicts are withheld from a run, or None when nothing forces it."""
    failed = internal_errors(errors)
    if not failed:
        return None
    return (f"{len(failed)} file(s) failed with an internal error, so their findings are missing "
            f"(first: {failed[0].path}): no score is given, and a verdict that does not fail is unknown")



@dataclass
class FileResult:
    """What scanning one file produced."""

    path: str
    findings: list[Finding] = field(default_factory=list)
    errors: list[FileError] = field(default_factory=list)
    parsed: bool = False  # whether the file went through a full parse (not just the prefilter)
    suppressed: list[tuple[Finding, str]] = field(default_factory=list)  # silenced by a comment: (finding, how)


# Findings one file keeps: each costs about 5 kB, and a 10 MB script of `nvidia-smi` lines made
# 800,000 of them (4.95 GB; issue 20, D11). The corpus's most in one file is 192 (a vllm test),
# so this never bites real code; past it, findings are counted per rule in an error entry.
MAX_FINDINGS_PER_FILE = 5000
OMITTED = "too-many-findings"  # the kind of that error entry


def omitted_error(path: str, omitted: dict[str, int]) -> FileError:
    """The error entry saying how many findings a file did not keep, and of which rules."""
    total = sum(omitted.values())
    rules = ", ".join(f"{code} {count:,}" for code, count in sorted(omitted.items(), key=lambda i: (-i[1], i[0])))
    return FileError(path, OMITTED, f"{total:,} more findings not listed ({rules}): a file keeps at most "
                                    f"{MAX_FINDINGS_PER_FILE:,}")

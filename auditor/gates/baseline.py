"""Baselines: adopt the gate on a codebase that already has lock-in, and fail only on what is new.

`audit . --write-baseline FILE` records every current finding and every file that could not be
audited; `--baseline FILE` (or `baseline = "FILE"` in the configuration) then reports only what
the file does not hold. A finding is recorded by a fingerprint that survives code moving: its
path (relative to the baseline's folder), its rule, its normalised code line and its occurrence
index among findings with the same three (so a second identical `.cuda()` in a file is new).
Line numbers are left out: adding a docstring above old lock-in changes nothing. The scores at
the time are kept too, for `--fail-on-regression` and the markdown report's deltas.

A moved or renamed file (`git mv`, or a plain rename) keeps its findings: a file the baseline never
saw is matched by content to a recorded file that no longer exists, as the fingerprints match
moved lines (auditor.gates.moves)."""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterable
from dataclasses import dataclass, field

from auditor import TOOL_NAME, __version__
from auditor.config import ConfigError
from auditor.gates.moves import Signature, find_moves, gone_from
from auditor.model import FileError, Finding
from auditor.read.text import SourceError, read_regular_file
from auditor.sandbox.safe_files import write_requested

FORMAT = 1
MAX_BYTES = 64 * 1024 * 1024


def normalised_code(finding: Finding) -> str:
    """The finding's code line with runs of whitespace made one space (indentation changes nothing)."""
    return " ".join(finding.snippet.split())


def fingerprint(path: str, rule: str, code: str, occurrence: int) -> str:
    material = "\0".join((path, rule, code, str(occurrence))).encode("utf-8", "surrogatepass")
    return hashlib.blake2b(material, digest_size=10).hexdigest()


def keyed(findings: Iterable[Finding], path_of: dict[str, str] | None = None) -> list[tuple[str, Finding]]:
    """(fingerprint, finding) in report order; `path_of` maps a finding's path to the path it is
    recorded under (default: as reported)."""
    seen: dict[tuple[str, str, str], int] = {}
    out = []
    for finding in sorted(findings, key=Finding.sort_key):
        path = path_of.get(finding.path, finding.path) if path_of else finding.path
        code = normalised_code(finding)
        group = (path, finding.rule, code)
        index = seen.get(group, 0)
        seen[group] = index + 1
        out.append((fingerprint(path, finding.rule, code, index), finding))
    return out


def _relative_to(folder: str, root: str, paths: Iterable[str]) -> dict[str, str]:
    """Reported path (relative to `root`) -> POSIX path relative to `folder`."""
    out = {}
    for path in set(paths):
        absolute = os.path.normpath(os.path.join(root, path))
        out[path] = os.path.relpath(absolute, folder).replace(os.sep, "/")
    return out


@dataclass
class Baseline:
    path: str
    fingerprints: dict[str, dict]  # fingerprint -> its entry
    errors: set[tuple[str, str]]  # (path, kind)
    scores: dict[str, float]
    version: str = ""

    @property
    def folder(self) -> str:
        return os.path.dirname(os.path.abspath(self.path))


@dataclass
class Comparison:
    """What a run found against a baseline."""

    new: list[Finding]
    known: list[Finding]
    new_errors: list[FileError]
    known_errors: list[FileError]
    stale: int  # baseline entries that match nothing any more (fixed, or the code changed)
    scores: dict[str, float] = field(default_factory=dict)  # the baseline's scores
    path: str = ""
    moved: list[tuple[str, str]] = field(default_factory=list)  # (recorded path, path now), baseline-relative


def write_baseline(path: str, findings: list[Finding], errors: list[FileError], root: str,
                   scores: dict[str, float], guarded: list[str] | None = None) -> int:
    """Record findings and errors (paths relative to the baseline's folder); returns the entry count.
    `guarded`: folders where the write follows no link (auditor/sandbox/safe_files.py; default: the cwd)."""
    folder = os.path.dirname(os.path.abspath(path))
    relative = _relative_to(folder, root, [f.path for f in findings] + [e.path for e in errors])
    entries = []
    occurrence: dict[tuple[str, str, str], int] = {}
    for fp, finding in keyed(findings, relative):
        group = (relative[finding.path], finding.rule, normalised_code(finding))
        index = occurrence.get(group, 0)
        occurrence[group] = index + 1
        entries.append({"fingerprint": fp, "path": group[0], "rule": finding.rule, "code": group[2],
                        "occurrence": index, "line": finding.line})
    document = {
        "tool": TOOL_NAME, "version": __version__, "format": FORMAT,
        "scores": scores,
        "findings": sorted(entries, key=lambda e: (e["path"], e["line"], e["rule"], e["occurrence"])),
        "errors": sorted({(relative[e.path], e.kind) for e in errors}),
    }
    document["errors"] = [{"path": p, "kind": k} for p, k in document["errors"]]
    text = json.dumps(document, indent=1, sort_keys=True, ensure_ascii=False) + "\n"
    write_requested(path, text.encode("utf-8"), guarded if guarded is not None else [os.getcwd()])
    return len(entries)


def load_baseline(path: str) -> Baseline:
    def bad(why: str) -> ConfigError:
        return ConfigError(f"baseline {path}: {why}; rewrite it with `audit . --write-baseline {path}`")

    if not os.path.lexists(path):
        raise ConfigError(f"baseline {path} not found; create it with `audit . --write-baseline {path}`")
    try:  # as every file is read: a FIFO, a device or /dev/zero never blocks nor floods (D10, D22)
        data = read_regular_file(path, MAX_BYTES, follow_symlinks=True)
    except SourceError as exc:
        raise ConfigError(f"cannot read baseline {path}: {exc.message}") from None
    try:
        document = json.loads(data.decode("utf-8"), parse_constant=_no_constant)
    except (ValueError, RecursionError) as exc:
        raise bad(f"not JSON ({str(exc)[:200]})") from None
    if not isinstance(document, dict) or document.get("tool") != TOOL_NAME:
        raise bad(f"not a {TOOL_NAME} baseline")
    if document.get("format") != FORMAT:
        raise bad(f"format {document.get('format')!r} is not {FORMAT}")
    try:
        prints = {e["fingerprint"]: e for e in document["findings"] if isinstance(e["fingerprint"], str)}
        errors = {(e["path"], e["kind"]) for e in document.get("errors", [])}
        scores = {k: _score(v) for k, v in document.get("scores", {}).items()}
    except (KeyError, TypeError, ValueError, AttributeError, OverflowError):
        raise bad("malformed entries") from None
    return Baseline(path, prints, errors, scores, str(document.get("version", "")))


def _no_constant(name: str) -> float:
    raise ValueError(f"{name} is not a number JSON allows")


def _score(value: object) -> float:
    """A score: a finite number from 0 to 100 (nan, inf or a 401-digit number is malformed: D22, D25)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TypeError("a score must be a number")
    number = float(value)  # OverflowError for an integer too large for a float
    if not 0 <= number <= 100:
        raise ValueError("a score is from 0 to 100")
    return number


def compare(baseline: Baseline, findings: list[Finding], errors: list[FileError], root: str) -> Comparison:
    relative = _relative_to(baseline.folder, root, [f.path for f in findings] + [e.path for e in errors])
    new, known, matched = _match(baseline, findings, relative)
    moves = find_moves(_unmatched_files(baseline, matched), _unrecorded_files(baseline, new, relative),
                       gone_from(baseline.folder, relative.values()))
    if moves:  # key a moved file's findings under the path it was recorded at, and match again
        recorded_at = dict(moves)
        relative = {path: recorded_at.get(now, now) for path, now in relative.items()}
        new, known, matched = _match(baseline, findings, relative)
    new_errors = [e for e in errors if (relative[e.path], e.kind) not in baseline.errors]
    known_errors = [e for e in errors if (relative[e.path], e.kind) in baseline.errors]
    new.sort(key=Finding.sort_key)
    known.sort(key=Finding.sort_key)
    return Comparison(new, known, new_errors, known_errors, len(baseline.fingerprints) - len(matched),
                      baseline.scores, baseline.path, sorted((was, now) for now, was in moves.items()))


def _unmatched_files(baseline: Baseline, matched: set[str]) -> dict[str, set[Signature]]:
    """The recorded files none of whose entries this run matched, with their entries' signatures."""
    files: dict[str, set[Signature]] = {}
    hit: set[str] = set()
    for fp, entry in baseline.fingerprints.items():
        path, rule, code, occurrence = (entry.get(k) for k in ("path", "rule", "code", "occurrence"))
        if not (isinstance(path, str) and isinstance(rule, str) and isinstance(code, str) and isinstance(occurrence, int)):
            continue  # an entry written by hand, or by an older release: it can only match exactly
        if fp in matched:
            hit.add(path)
        files.setdefault(path, set()).add((rule, code, occurrence))
    return {path: keys for path, keys in files.items() if path not in hit}


def _unrecorded_files(baseline: Baseline, findings: list[Finding], relative: dict[str, str]) -> dict[str, set[Signature]]:
    """This run's files the baseline has no entry for, with their findings' signatures."""
    recorded = {entry.get("path") for entry in baseline.fingerprints.values()}
    files: dict[str, set[Signature]] = {}
    seen: dict[tuple[str, str, str], int] = {}
    for finding in sorted(findings, key=Finding.sort_key):
        path = relative[finding.path]
        if path in recorded:
            continue
        code = normalised_code(finding)
        index = seen.get((path, finding.rule, code), 0)
        seen[(path, finding.rule, code)] = index + 1
        files.setdefault(path, set()).add((finding.rule, code, index))
    return files


def _match(baseline: Baseline, findings: list[Finding], relative: dict[str, str]
           ) -> tuple[list[Finding], list[Finding], set[str]]:
    """(new, known, the baseline fingerprints matched)."""
    new: list[Finding] = []
    known: list[Finding] = []
    matched: set[str] = set()
    for fp, finding in keyed(findings, relative):
        if fp in baseline.fingerprints:
            matched.add(fp)
            known.append(finding)
        else:
            new.append(finding)
    return new, known, matched

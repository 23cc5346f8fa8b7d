"""The results cache, as ruff keeps one: one file per settings key (auditor.cache.keys) in the
cache folder (auditor.cache.folder) maps each file, by path from the project root, to what scanning
it gave: size, mtime_ns, a content digest, findings and errors. A file whose size and mtime are
unchanged is reused without being read; one whose stat changed but whose bytes hash the same is
reused without being parsed. A file modified within a second of being scanned may change again
in the same mtime tick, so its entry is only trusted after its content is checked again ("racy
git"). Anything wrong with the cache only costs speed: a corrupt, unreadable or unwritable cache
is reported as a warning and the scan goes on uncached. Importing this module must stay cheap:
a warm run never imports libcst.

Besides the per-file entries, `meta` keeps what the settings imply and the last run learnt:
the selected rule codes and registry warnings, the prefilter (so a run whose changed files all
fail it needs neither the rules nor libcst; see auditor.pipeline.scan._Scan._check), and the
discovered file list and project facts with the folder stamps they depend on
(auditor.cache.reuse). Concurrent runs (pre-commit batches) merge their entries on save."""

from __future__ import annotations

import hashlib
import marshal
import os
import time
from dataclasses import dataclass, field, fields

from auditor.cache.folder import (
    CacheDirRefused,
    cache_location,
    folder_problem,
    open_folder,
    prepare_directory,
    prune,
    read_file,
    write_file,
)
from auditor.cache.keys import FORMAT, settings_key
from auditor.model import Edit, FileError, FileResult, Finding, Fix, NewFile

MAGIC = b"LKAUDIT-CACHE\n"
# marshal reads the results of a large tree ~8x faster than json (a warm run has under a second);
# it is only ever given bytes whose digest matches, i.e. bytes this module wrote.
RACY_NS = 2_000_000_000  # entries of files modified this close to the scan are re-verified

# Per-file entry: [size, mtime_ns, digest, trusted, parsed, findings, errors, suppressed]
# (suppressed: [how, finding row] for the findings a comment silenced)
_SIZE, _MTIME, _DIGEST, _TRUSTED, _PARSED, _FINDINGS, _ERRORS, _SUPPRESSED = range(8)
_ENTRY_LENGTH = 8


_TARGETS = 10  # in a finding row: an index into the cache's table of per-target effects
_TEXTS = (4, 5, 6, 7, 8, 9, 11, 13, 16)  # rule, name, category, severity, message, suggestion, min_torch, context, guard
_FIX = 15  # in a finding row: None, or (applicability, message, min_torch, reason, ((line, column, end_line, end_column, content), ...))
_GUARD = 16  # the kinds of the guards behind the context
_ROW_LENGTH = 17
_FINDING_FIELDS = tuple(f.name for f in fields(Finding))
_NOT_CACHED = frozenset({"internal", "crash", "timeout"})
_NOTHING = FileResult("")  # the cached result of the many files without findings or errors; never mutated


@dataclass
class Cache:
    """The cache of one settings key; `lookup` before scanning a file, `store` after."""

    directory: str
    key: str
    project: str  # the project root
    prefix: str  # the display base (the folder paths are shown relative to) from the project root, "" or ending in "/"
    base: str = ""  # the display base, absolute; paths leading out of it ("../x.py") are keyed from the project
    entries: dict[str, list] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    meta: dict = field(default_factory=dict)  # rule codes and registry warnings of the run that wrote it
    dirty: bool = False
    started_ns: int = field(default_factory=time.time_ns)
    targets: list[dict[str, str]] = field(default_factory=list)  # effects tables, shared by findings
    _target_index: dict[tuple, int] = field(default_factory=dict)
    stored: set[str] = field(default_factory=set)  # entries this run wrote or refreshed
    # One object per distinct text: marshal then writes each message once and back-references it,
    # which makes the file smaller and a warm load faster.
    _texts: dict = field(default_factory=dict)
    loaded_stat: tuple[int, int] | None = None  # (size, mtime_ns) of the file as loaded

    usable: bool = True  # False: the folder is not ours (a link, foreign content); no reading, no writing

    @property
    def name(self) -> str:
        return f"results-{self.key}.bin"

    @property
    def path(self) -> str:
        return os.path.join(self.directory, self.name)

    def entry_key(self, display: str, facts: str = "") -> str:
        """A file's key: its path from the project root, however the run that met it was called;
        `facts` is what its result depends on besides its bytes (what the project around it says:
        auditor.analysis.project.FileFacts.key), so a change there is a miss."""
        if self.prefix.startswith("..") or display.startswith(".."):
            full = os.path.normpath(os.path.join(self.base or self.project, display))
            key = os.path.relpath(full, self.project).replace(os.sep, "/")
        else:
            key = self.prefix + display
        return key + "\0" + facts if facts else key

    def lookup(self, display: str, size: int, mtime_ns: int, facts: str = "") -> FileResult | None:
        """The cached result when the stat says the file is unchanged and the entry is trusted."""
        entry = self.entries.get(self.entry_key(display, facts))
        if entry is None or not entry[_TRUSTED] or entry[_SIZE] != size or entry[_MTIME] != mtime_ns:
            return None
        return self._result(display, entry)

    def lookup_content(self, display: str, size: int, mtime_ns: int, content_digest: str,
                       facts: str = "") -> FileResult | None:
        """The cached result when the bytes are the same though the stat changed; refreshes the entry."""
        key = self.entry_key(display, facts)
        entry = self.entries.get(key)
        if entry is None or entry[_SIZE] != size or entry[_DIGEST] != content_digest:
            return None
        trusted = self.settled(mtime_ns)
        if entry[_MTIME] != mtime_ns or entry[_TRUSTED] != trusted:
            entry[_MTIME], entry[_TRUSTED] = mtime_ns, trusted
            self.stored.add(key)
            self.dirty = True
        return self._result(display, entry)

    def digest_for(self, display: str, size: int, facts: str = "") -> str | None:
        """The cached digest when an entry of this size exists (hashing the file may save a parse)."""
        entry = self.entries.get(self.entry_key(display, facts))
        return entry[_DIGEST] if entry is not None and entry[_SIZE] == size else None

    def store(self, result: FileResult, size: int, mtime_ns: int, content_digest: str, facts: str = "") -> None:
        if any(error.kind in _NOT_CACHED for error in result.errors):
            return  # a bug, a crash or the clock: not a property of the file; try again next time
        key = self.entry_key(result.path, facts)
        self.entries[key] = [
            size, mtime_ns, content_digest, self.settled(mtime_ns), result.parsed,
            [self._row(f) for f in result.findings], [[e.kind, e.message] for e in result.errors],
            [[how, self._row(f)] for f, how in result.suppressed],
        ]
        self.stored.add(key)
        self.dirty = True

    def settled(self, mtime_ns: int) -> bool:
        """Modified long enough before this run that a later change shows as a newer mtime."""
        return mtime_ns < self.started_ns - RACY_NS

    def _target_slot(self, effects: dict[str, str]) -> int:
        key = tuple(sorted(effects.items()))
        index = self._target_index.get(key)
        if index is None:
            index = self._target_index[key] = len(self.targets)
            self.targets.append(dict(effects))
        return index

    def _row(self, finding: Finding) -> list:
        row = [finding.line, finding.column, finding.end_line, finding.end_column, finding.rule, finding.name,
               finding.category, finding.severity, finding.message, finding.suggestion,
               self._target_slot(finding.targets), finding.min_torch, finding.snippet, finding.context, finding.cell,
               _fix_row(finding.fix), finding.guard]
        texts = self._texts
        for index in _TEXTS:
            row[index] = texts.setdefault(row[index], row[index])
        return row

    def _finding(self, path: str, row: list) -> Finding:
        # A warm run rebuilds every finding of the tree; filling the frozen dataclass's __dict__ in
        # one call is ~4x faster than its __init__ (one object.__setattr__ per field).
        finding = object.__new__(Finding)
        finding.__dict__.update(zip(_FINDING_FIELDS, (path, *row[:_TARGETS], self.targets[row[_TARGETS]],
                                                      *row[_TARGETS + 1:_FIX], _fix_from_row(row[_FIX]), row[_GUARD]),
                                                  strict=True))
        return finding

    def _result(self, display: str, entry: list) -> FileResult:
        if not entry[_FINDINGS] and not entry[_ERRORS] and not entry[_SUPPRESSED]:
            return _NOTHING
        return FileResult(
            display, findings=[self._finding(display, row) for row in entry[_FINDINGS]],
            errors=[FileError(display, kind, message) for kind, message in entry[_ERRORS]],
            parsed=entry[_PARSED],
            suppressed=[(self._finding(display, row), how) for how, row in entry[_SUPPRESSED]])

    # -- disk --------------------------------------------------------------------------------------
    def load(self) -> None:
        tables = self._read(warn=True)
        if tables is not None:
            self.entries, self.meta, self.targets, self.loaded_stat = tables
            self._target_index = {tuple(sorted(t.items())): i for i, t in enumerate(self.targets)}

    def _read(self, warn: bool) -> tuple[dict, dict, list, tuple[int, int]] | None:
        """(entries, meta, effects tables, file stat), or None when missing or unusable."""
        if not self.usable:
            return None
        try:
            with open_folder(self.directory) as folder:
                raw, info = read_file(folder, self.name)
        except FileNotFoundError:
            return None
        except OSError as exc:
            if warn:
                self.warnings.append(f"cache file {self.path} is unreadable ({exc.strerror or exc}); "
                                     "scanning without it")
            return None
        try:
            data = _decode(raw)
            if not isinstance(data, dict) or data.get("format") != FORMAT or data.get("key") != self.key:
                raise ValueError("unexpected format")
            entries, meta, targets = data["files"], data["meta"], data["targets"]
            if not isinstance(meta, dict) or not isinstance(targets, list) or not isinstance(entries, dict):
                raise ValueError("malformed tables")
            if not all(isinstance(t, dict) for t in targets):
                raise ValueError("malformed effects")
            if not all(_valid_entry(e, len(targets)) for e in entries.values()):
                raise ValueError("malformed entry")
        except (ValueError, KeyError, TypeError, EOFError, RecursionError) as exc:
            if warn:
                self.warnings.append(f"cache file {self.path} is corrupt ({exc}); scanning without it")
            return None
        return entries, meta, targets, (info.st_size, info.st_mtime_ns)

    def _merge_concurrent(self) -> None:
        """Another run (pre-commit runs several side by side) saved since this one loaded: keep
        its entries for the files this run did not check, instead of writing over them."""
        try:
            with open_folder(self.directory) as folder:
                info = os.stat(self.name, dir_fd=folder, follow_symlinks=False)
        except OSError:
            return
        if (info.st_size, info.st_mtime_ns) == self.loaded_stat:
            return
        tables = self._read(warn=False)
        if tables is None:
            return
        entries, _, targets, _ = tables
        for key, entry in entries.items():
            if key in self.stored:
                continue
            rows = []
            for row in entry[_FINDINGS]:
                row = list(row)
                row[_TARGETS] = self._target_slot(targets[row[_TARGETS]])
                rows.append(row)
            silenced = []
            for how, row in entry[_SUPPRESSED]:
                row = list(row)
                row[_TARGETS] = self._target_slot(targets[row[_TARGETS]])
                silenced.append([how, row])
            self.entries[key] = [*entry[:_FINDINGS], rows, entry[_ERRORS], silenced]

    def save(self, keep: set[str] | None = None) -> None:
        """Write atomically (temp file + rename); `keep` limits the entries to those paths."""
        if not self.dirty or not self.usable:
            return
        if keep is None:
            self._merge_concurrent()
        entries = self.entries if keep is None else {k: v for k, v in self.entries.items() if k in keep}
        payload = _encode({"format": FORMAT, "key": self.key, "meta": self.meta, "targets": self.targets,
                           "files": entries})
        try:
            prepare_directory(self.directory)
            with open_folder(self.directory) as folder:
                write_file(folder, self.name, payload)
                prune(folder)
        except OSError as exc:
            self.warnings.append(f"cannot write the cache in {self.directory} ({exc.strerror or exc}); "
                                 f"use --cache-dir or --no-cache")


def _encode(data: dict) -> bytes:
    body = marshal.dumps(data)
    return MAGIC + hashlib.blake2b(body, digest_size=16).digest() + body


def _decode(raw: bytes) -> object:
    if not raw.startswith(MAGIC):
        raise ValueError("not a lockin-auditor cache file")
    start = len(MAGIC) + 16
    body = raw[start:]
    if hashlib.blake2b(body, digest_size=16).digest() != raw[len(MAGIC):start]:
        raise ValueError("checksum mismatch")
    return marshal.loads(body)


def _valid_entry(entry: object, targets: int) -> bool:
    return (isinstance(entry, list) and len(entry) == _ENTRY_LENGTH and isinstance(entry[_SIZE], int)
            and isinstance(entry[_MTIME], int) and isinstance(entry[_DIGEST], str)
            and isinstance(entry[_FINDINGS], list) and isinstance(entry[_ERRORS], list)
            and all(_valid_row(row, targets) for row in entry[_FINDINGS])
            and all(isinstance(row, list) and len(row) == 2 for row in entry[_ERRORS])
            and isinstance(entry[_SUPPRESSED], list)
            and all(isinstance(item, list) and len(item) == 2 and isinstance(item[0], str)
                    and _valid_row(item[1], targets) for item in entry[_SUPPRESSED]))


def _valid_row(row: object, targets: int) -> bool:
    return (isinstance(row, list) and len(row) == _ROW_LENGTH and isinstance(row[_TARGETS], int)
            and 0 <= row[_TARGETS] < targets)


def _fix_row(fix: Fix | None) -> tuple | None:
    if fix is None:
        return None
    row = (fix.applicability, fix.message, fix.min_torch, fix.reason,
           tuple((e.line, e.column, e.end_line, e.end_column, e.content) for e in fix.edits))
    return (*row, tuple((new.path, new.content) for new in fix.creates)) if fix.creates else row


def _fix_from_row(row: tuple | list | None) -> Fix | None:
    if row is None:
        return None
    applicability, message, min_torch, reason, edits, *creates = row
    return Fix(applicability, message, tuple(Edit(*edit) for edit in edits), min_torch, reason,
               tuple(NewFile(*new) for new in creates[0]) if creates else ())


def open_cache(scan_root: str, cache_dir: str | None, select: list[str] | None, ignore: list[str] | None,
               max_bytes: int, display_base: str | None = None, extra: dict | None = None) -> Cache:
    """The cache for this scan, loaded from disk (empty when missing or unusable). Paths are
    displayed relative to `display_base` (default: the scanned root). `extra` holds what else the
    results depend on (the settings' catalogue additions, the project's torch floor)."""
    project, directory = cache_location(scan_root, cache_dir)
    base = os.path.abspath(display_base or scan_root)
    relative = os.path.relpath(base, project).replace(os.sep, "/")
    prefix = "" if relative == "." else relative + "/"
    cache = Cache(directory, settings_key(select, ignore, max_bytes, extra), project, prefix, base)
    problem = folder_problem(directory)
    if problem is not None:
        if cache_dir:
            raise CacheDirRefused(f"--cache-dir {cache_dir or '.'}: {problem}; give a new or empty folder, "
                                  "or --no-cache")
        cache.usable = False
        cache.warnings.append(f"the cache folder {directory} is not used: {problem}")
        return cache
    cache.load()
    return cache

"""The results cache, as ruff keeps one: `.lockin_auditor_cache/` at the project root.

One file per settings key (tool version, rule selection, catalogue, the auditor's own code,
installed plugins, size limit) maps each file, by path from the project root, to what scanning it
gave: size, mtime_ns, a content digest, findings and errors. A file whose size and mtime are
unchanged is reused without being read; one whose stat changed but whose bytes hash the same is
reused without being parsed. A file modified within a second of being scanned may change again
in the same mtime tick, so its entry is only trusted after its content is checked again ("racy
git"). Anything wrong with the cache only costs speed: a corrupt, unreadable or unwritable cache
is reported as a warning and the scan goes on uncached. Importing this module must stay cheap:
a warm run never imports libcst.

Besides the per-file entries, `meta` keeps what the settings imply and the last run learnt:
the selected rule codes and registry warnings, the prefilter (so a run whose changed files all
fail it needs neither the rules nor libcst; see engine._Scan._check) and the discovered file list
with the folder stamps it depends on (engine._discover). Concurrent runs (pre-commit batches)
merge their entries on save."""

from __future__ import annotations

import hashlib
import json
import marshal
import os
import sys
import tempfile
import time
from dataclasses import dataclass, field, fields

from auditor import __version__
from auditor.model import Edit, FileError, FileResult, Finding, Fix

CACHE_DIR_NAME = ".lockin_auditor_cache"
FORMAT = 5  # 5: a fix keeps the reason it is only shown
MAGIC = b"LKAUDIT-CACHE\n"
# marshal reads the results of a large tree ~8x faster than json (a warm run has under a second);
# it is only ever given bytes whose digest matches, i.e. bytes this module wrote.
CACHEDIR_TAG = (
    "Signature: 8a477f597d28d172789f06886806bc55\n"
    "# This file is a cache directory tag created by lockin-auditor.\n"
    "# For information about cache directory tags, see https://bford.info/cachedir/\n"
)
RACY_NS = 2_000_000_000  # entries of files modified this close to the scan are re-verified
MAX_CACHE_FILES = 16  # settings variants kept side by side; the least recently used go first

# Per-file entry: [size, mtime_ns, digest, trusted, parsed, findings, errors, suppressed]
# (suppressed: [how, finding row] for the findings a comment silenced)
_SIZE, _MTIME, _DIGEST, _TRUSTED, _PARSED, _FINDINGS, _ERRORS, _SUPPRESSED = range(8)
_ENTRY_LENGTH = 8


def digest(data: bytes) -> str:
    return hashlib.blake2b(data, digest_size=16).hexdigest()


def project_root(scan_root: str) -> str:
    """Nearest ancestor of the scanned root holding .git or pyproject.toml, else the root itself."""
    here = os.path.abspath(scan_root)
    while True:
        if os.path.exists(os.path.join(here, ".git")) or os.path.isfile(os.path.join(here, "pyproject.toml")):
            return here
        parent = os.path.dirname(here)
        if parent == here:
            return os.path.abspath(scan_root)
        here = parent


_PRESENTATION = ("cli.py", "score.py", "progress.py", "__main__.py")


def _code_fingerprint() -> list:
    """Sizes and mtimes of the auditor's own modules (an edited rule invalidates the cache even
    without a version bump) and of the import path folders (installing a plugin touches them).
    The modules that only present results (the reports, the CLI, the score) are left out: the
    cache holds findings, which they do not change."""
    package = os.path.dirname(os.path.abspath(__file__))
    stats: list = []
    stack = [package]
    while stack:
        directory = stack.pop()
        try:
            entries = sorted(os.scandir(directory), key=lambda e: e.name)
        except OSError:
            continue
        for entry in entries:
            if entry.is_dir(follow_symlinks=False) and entry.name not in ("__pycache__", "report"):
                stack.append(entry.path)
            elif entry.name.endswith((".py", ".toml")) and entry.name not in _PRESENTATION:
                info = entry.stat()
                stats.append([os.path.relpath(entry.path, package), info.st_size, info.st_mtime_ns])
    for folder in sys.path:
        if not folder.endswith(("site-packages", "dist-packages")):
            continue
        try:
            stats.append([folder, os.stat(folder or ".").st_mtime_ns])
        except OSError:
            continue
    return stats


def settings_key(select: list[str] | None, ignore: list[str] | None, max_bytes: int,
                 extra: dict | None = None) -> str:
    """What the results depend on besides the files: a change to any of it starts a new cache.
    `extra` is the rest of what the results depend on: the project's catalogue additions
    (Settings.cache_extra) and its torch floor, which decides the fixes findings carry."""
    from auditor.catalogue import catalogue_fingerprint

    material = json.dumps({
        "format": FORMAT, "version": __version__, "python": sys.version_info[:2],
        "select": select, "ignore": ignore, "max_bytes": max_bytes, "settings": extra,
        "catalogue": catalogue_fingerprint(), "code": _code_fingerprint(),
    }, sort_keys=True)
    return hashlib.blake2b(material.encode(), digest_size=12).hexdigest()


_TARGETS = 10  # in a finding row: an index into the cache's table of per-target effects
_TEXTS = (4, 5, 6, 7, 8, 9, 11, 13)  # rule, name, category, severity, message, suggestion, min_torch, context
_FIX = 15  # in a finding row: None, or (applicability, message, min_torch, reason, ((line, column, end_line, end_column, content), ...))
_ROW_LENGTH = 16
_FINDING_FIELDS = tuple(f.name for f in fields(Finding))
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

    @property
    def path(self) -> str:
        return os.path.join(self.directory, f"results-{self.key}.bin")

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
        if any(error.kind == "internal" for error in result.errors):
            return  # a crash in a rule is not a property of the file; try again next time
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
               _fix_row(finding.fix)]
        texts = self._texts
        for index in _TEXTS:
            row[index] = texts.setdefault(row[index], row[index])
        return row

    def _finding(self, path: str, row: list) -> Finding:
        # A warm run rebuilds every finding of the tree; filling the frozen dataclass's __dict__ in
        # one call is ~4x faster than its __init__ (one object.__setattr__ per field).
        finding = object.__new__(Finding)
        finding.__dict__.update(zip(_FINDING_FIELDS, (path, *row[:_TARGETS], self.targets[row[_TARGETS]],
                                                      *row[_TARGETS + 1:_FIX], _fix_from_row(row[_FIX])), strict=True))
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
        try:
            with open(self.path, "rb") as handle:
                info = os.fstat(handle.fileno())
                raw = handle.read()
        except FileNotFoundError:
            return None
        except OSError as exc:
            if warn:
                self.warnings.append(f"cache file {self.path} is unreadable ({exc.strerror}); scanning without it")
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
            info = os.stat(self.path)
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
        if not self.dirty:
            return
        if keep is None:
            self._merge_concurrent()
        entries = self.entries if keep is None else {k: v for k, v in self.entries.items() if k in keep}
        payload = _encode({"format": FORMAT, "key": self.key, "meta": self.meta, "targets": self.targets,
                           "files": entries})
        try:
            prepare_directory(self.directory)
            handle, temp = tempfile.mkstemp(dir=self.directory, prefix=".tmp-", suffix=".bin")
            try:
                with os.fdopen(handle, "wb") as out:
                    out.write(payload)
                os.replace(temp, self.path)
            except BaseException:
                _remove(temp)
                raise
            _prune(self.directory)
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
    return (fix.applicability, fix.message, fix.min_torch, fix.reason,
            tuple((e.line, e.column, e.end_line, e.end_column, e.content) for e in fix.edits))


def _fix_from_row(row: tuple | list | None) -> Fix | None:
    if row is None:
        return None
    applicability, message, min_torch, reason, edits = row
    return Fix(applicability, message, tuple(Edit(*edit) for edit in edits), min_torch, reason)


def prepare_directory(directory: str) -> None:
    """Create the cache folder with its CACHEDIR.TAG and a .gitignore that ignores everything."""
    os.makedirs(directory, exist_ok=True)
    for name, content in (("CACHEDIR.TAG", CACHEDIR_TAG), (".gitignore", "# Created by lockin-auditor.\n*\n")):
        target = os.path.join(directory, name)
        if not os.path.exists(target):
            with open(target, "w", encoding="utf-8") as out:
                out.write(content)


def _remove(path: str) -> None:
    try:
        os.remove(path)
    except OSError:
        pass


def _prune(directory: str) -> None:
    """Keep the most recently written result files only (one per settings variant)."""
    files = [e for e in os.scandir(directory) if e.name.startswith("results-")]
    if len(files) <= MAX_CACHE_FILES:
        return
    files.sort(key=lambda e: e.stat().st_mtime_ns, reverse=True)
    for entry in files[MAX_CACHE_FILES:]:
        _remove(entry.path)


def cache_location(scan_root: str, cache_dir: str | None) -> tuple[str, str]:
    """(project root, cache folder) for a scan of `scan_root`."""
    project = project_root(scan_root)
    return project, os.path.abspath(cache_dir) if cache_dir else os.path.join(project, CACHE_DIR_NAME)


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
    cache.load()
    return cache

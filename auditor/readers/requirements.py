"""pip requirements files (requirements*.txt, *.in, constraints), parsed line by line with
pip-requirements-parser (pip's own line grammar) from the text already read, plus the -r / -c
files they include when discovery would not read those on its own.

An include never leaves the scanned folder (`-r ../secrets.conf`, `-r /etc/shadow`, a link out):
the include line itself becomes an `include` error naming what it points at, and nothing of the
file outside is read. Included files are opened like any other (regular files only, size-capped),
so `-r /dev/zero` or a FIFO cannot hang or flood the run. `include_target` is the one rule for
every reader with includes."""

from __future__ import annotations

import os
import posixpath

import pip_requirements_parser as pip_req

from auditor.config.keys import DEFAULT_MAX_BYTES
from auditor.context import FileContext
from auditor.discover.files import file_kind, shown_name
from auditor.model import FileError
from auditor.read.text import SourceError, decode_text, read_regular_file
from auditor.readers import Dependencies, IndexUrl, Requirement, normalize, salvage_requirement
from auditor.readers.document import Document

MAX_INCLUDE_DEPTH = 100  # `-r` files within `-r` files; no real project nests them this deep
# optparse destinations of the options that say where packages come from.
_INDEX_OPTIONS = {"index_url": "--index-url", "extra_index_urls": "--extra-index-url", "find_links": "--find-links"}


def read_requirements(ctx: FileContext) -> Dependencies:
    deps = Dependencies()
    real = _real_path(ctx)
    _Reader(ctx, deps).read_file(ctx, real, chain=(real,) if real else ())
    return deps


def _real_path(ctx: FileContext) -> str | None:
    """Where the file is on disk: the runtime tells us (kind_checks.check_document); else try the display path from the cwd."""
    path = getattr(ctx, "source_path", None) or ctx.path
    return os.path.realpath(path) if os.path.isfile(path) else None


def include_target(ctx: FileContext, including: str, include: str) -> tuple[str | None, str | None]:
    """(resolved path, None) for an include inside the scanned folder, else (None, why not).
    `including` is the real path of the file that names `include`."""
    root = getattr(ctx, "scan_root", None) or os.path.dirname(including)
    target = os.path.realpath(os.path.join(os.path.dirname(including), include))
    real_root = os.path.realpath(root)
    if target != real_root and not target.startswith(real_root.rstrip(os.sep) + os.sep):
        return None, f"include {include!r} points outside the scanned folder; not read"
    return target, None


class _Reader:
    def __init__(self, root: FileContext, deps: Dependencies) -> None:
        self.root = root
        self.deps = deps
        self.seen: set[str] = set()

    def read_file(self, ctx: FileContext, real: str | None, chain: tuple[str, ...]) -> None:
        if real:
            self.seen.add(real)
        owner = None if ctx is self.root else ctx
        line_parser = _line_parser()
        for item in pip_req.preprocess(_pip_lines(ctx.text)):
            if isinstance(item, pip_req.CommentLine):
                continue
            number, line = item
            try:
                requirement_string, options, arguments = line_parser(line)
            except Exception as exc:  # optparse errors on unknown options, shlex errors on quotes
                self.error(ctx, number, _first_line(exc))
                continue
            if requirement_string or options.editables:
                self.requirement(ctx, owner, number, line, requirement_string, options)
            self.options(ctx, owner, number, line, options, real, chain)

    def requirement(self, ctx: FileContext, owner: FileContext | None, number: int, line: str,
                    requirement_string: str, options) -> None:
        editable = bool(options.editables) and not requirement_string
        parsed = pip_req.ParsedRequirement(
            requirement_string=options.editables[0] if editable else requirement_string,
            is_editable=editable, is_constraint=False,
            requirement_line=pip_req.RequirementLine(line=line, line_number=number, filename=ctx.path),
        )
        try:
            built = pip_req.build_req_from_parsedreq(parsed)
        except Exception as exc:
            self.error(ctx, number, _first_line(exc))
            salvaged = salvage_requirement(requirement_string)
            if salvaged is not None:
                self.add(ctx, owner, number, salvaged)
            return
        name = built.name
        req = built.req
        self.add(ctx, owner, number, Requirement(
            name=name, key=normalize(name) if name else None,
            extras=tuple(sorted(built.extras or ())),
            specifier=str(req.specifier) if req is not None else "",
            url=built.link.url if built.link is not None else None,
            marker=str(built.marker) if built.marker else None,
            text=parsed.requirement_string,
        ))

    def add(self, ctx: FileContext, owner: FileContext | None, number: int, item: Requirement) -> None:
        item.origin = "requirements"
        item.owner = owner
        item.line = item.end_line = number
        item.column, item.end_column = _span(ctx, number)
        self.deps.requirements.append(item)

    def options(self, ctx: FileContext, owner: FileContext | None, number: int, line: str, options,
                real: str | None, chain: tuple[str, ...]) -> None:
        for dest, flag in _INDEX_OPTIONS.items():
            value = getattr(options, dest, None)
            for url in [value] if isinstance(value, str) else value or []:
                url = url.lstrip("=")
                column, end = _find(ctx, number, url)
                self.deps.indexes.append(IndexUrl(
                    line=number, column=column, end_line=number, end_column=end, owner=owner,
                    url=url, option=flag))
        for include in [*(options.requirements or []), *(options.constraints or [])]:
            self.include(ctx, number, include.lstrip("="), real, chain)

    def include(self, ctx: FileContext, number: int, include: str, real: str | None,
                chain: tuple[str, ...]) -> None:
        """Read `-r other.txt` when discovery would not pick the file up on its own."""
        if "://" in include or real is None:
            return  # remote includes are never fetched; without a location there is nothing to join
        target_real, problem = include_target(self.root, real, include)
        if target_real is None:
            self.error(ctx, number, problem or "include not read", kind="include")
            return
        target = os.path.join(os.path.dirname(real), include)
        if file_kind(target) is not None:
            return  # scanned as a file of its own
        display = shown_name(posixpath.normpath(posixpath.join(posixpath.dirname(ctx.path),
                                                               include.replace(os.sep, "/"))))
        if target_real in chain:
            self.error(ctx, number, f"include cycle: {include} is already being read", kind="include-cycle")
            return
        if target_real in self.seen:
            return  # already read through another include
        if len(chain) >= MAX_INCLUDE_DEPTH:  # each level is a few frames deeper: 330 hit the recursion limit (D27)
            self.error(ctx, number, f"include chain deeper than {MAX_INCLUDE_DEPTH} files; {include} not read",
                       kind="include")
            return
        text = self.load(ctx, number, target_real, display)
        if text is not None:
            sub = FileContext(display, text, ctx.catalogue, "requirements")
            self.read_file(sub, target_real, (*chain, target_real))
            self.root.errors.extend(e for e in sub.errors if e not in self.root.errors)

    def load(self, ctx: FileContext, number: int, target: str, display: str) -> str | None:
        if not os.path.lexists(target):
            self.error(ctx, number, f"included file not found: {os.path.basename(target)}", kind="read")
            return None
        try:
            return decode_text(read_regular_file(target, DEFAULT_MAX_BYTES))
        except SourceError as exc:
            self.root.errors.append(FileError(display, exc.kind, exc.message))
        return None

    def error(self, ctx: FileContext, number: int, message: str, kind: str = "parse") -> None:
        error = FileError(ctx.path, kind, f"line {number}: {message}")
        if error not in self.root.errors:
            self.root.errors.append(error)


def _line_parser():
    """pip's line parser (pip_requirements_parser.get_line_parser) with its option parser built
    once: pip builds one for every line, about 300 µs a line (issue 20, D12). A line with options
    gets its own copy of the defaults, which is what the rebuilding was for (append options add
    to a default list); a line without options is not parsed, so nothing changes its defaults."""
    import copy
    import optparse
    import shlex

    parser = pip_req.build_parser()
    shared = parser.get_default_values()

    def parse(line: str):
        args_str, options_str = pip_req.break_args_options(line)
        if not options_str.strip():
            return args_str, shared, []
        options, arguments = parser.parse_args(shlex.split(options_str), optparse.Values(copy.deepcopy(parser.defaults)))
        return args_str, options, arguments

    return parse


# pip numbers lines with str.splitlines(), which also breaks at these; as blanks (same length, so
# columns stay) they leave pip's line numbers equal to ours (auditor.read.text.split_lines).
_NOT_LINE_ENDS = str.maketrans({c: " " for c in "\v\f\x1c\x1d\x1e\x85\u2028\u2029"})


def _pip_lines(text: str) -> str:
    if text.isascii() and not any(c in text for c in "\v\f\x1c\x1d\x1e"):
        return text
    return text.translate(_NOT_LINE_ENDS)


def _first_line(exc: Exception) -> str:
    text = str(exc).strip().removeprefix("pip_requirements_parser: error: ").replace("requirement: : ", "requirement: ")
    return text.splitlines()[0][:200] if text else type(exc).__name__


def _span(ctx: FileContext, number: int) -> tuple[int, int]:
    """The requirement's columns on its first line: from the first character to before a comment."""
    text = ctx.lines[number - 1] if 0 < number <= len(ctx.lines) else ""
    start = len(text) - len(text.lstrip())
    body = text
    cut = body.find(" #")
    if cut >= 0:
        body = body[:cut]
    body = body.rstrip().rstrip("\\").rstrip()
    return start + 1, max(len(body), start) + 1


def _find(ctx: FileContext, number: int, needle: str) -> tuple[int, int]:
    text = ctx.lines[number - 1] if 0 < number <= len(ctx.lines) else ""
    at = text.find(needle)
    if at < 0:
        return _span(ctx, number)
    return at + 1, at + len(needle) + 1


def document(ctx: FileContext) -> Document:
    """The kind's reader (auditor.discover.kinds): the file's dependencies."""
    return Document(dependencies=read_requirements(ctx))

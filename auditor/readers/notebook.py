"""Jupyter notebooks (`.ipynb`), read with json (nbformat is not needed).

The code cells are joined into one Python text with a cell-to-line map and go through the normal
Python scan (auditor.pipeline.kind_checks.check_notebook): the same rules, the same prefilter and
the same cache. IPython syntax is blanked
first, one line for one line so every position stays put: `!shell` and `%magic` lines become
`pass` (and the lines a trailing `\\` continues them on become blank lines), `%%` cell magics blank their cell (the body of `%%time` / `%%capture` stays Python, the
body of `%%bash` / `%%sh` is read as shell). Before that, the lines IPython would run as shell are
read as commands (auditor.readers.commands): `!pip install` / `%pip install` give dependencies,
`%env X=1` and `!export X=1` environment settings, `!nvidia-smi` a command. Findings carry the
cell (1-based among all cells, markdown and raw included, as ruff counts) and the line in it.

A notebook that is not valid JSON, has no `cells` list, or a cell whose source is neither a string
nor a list of strings is an error entry."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from auditor.read.text import split_lines
from auditor.readers.commands import Positions, Script, read_script
from auditor.readers.document import Document, EnvSetting

if TYPE_CHECKING:
    from auditor.context import FileContext

_PYTHON_CELL_MAGICS = frozenset({"time", "timeit", "capture", "prun", "debug"})
_SHELL_CELL_MAGICS = frozenset({"bash", "sh", "script"})
_SHELL_LINE = re.compile(r"^([ \t]*)(?:[A-Za-z_][\w, ]*=\s*)?!!?(.*)$")
_MAGIC_LINE = re.compile(r"^([ \t]*)(?:[A-Za-z_][\w, ]*=\s*)?%(\w+)(.*)$")
_HELP_LINE = re.compile(r"^([ \t]*)(?:\?\??[\w.]+|[\w.]+\?\??)[ \t]*$")
_ENV = re.compile(r"\s*([A-Za-z_][A-Za-z0-9_]*)(?:\s*=\s*|\s+)?(.*)$")
_SURROGATE = re.compile("[\ud800-\udfff]")


class NotebookError(ValueError):
    pass


@dataclass
class Notebook:
    code: str = ""  # the code cells, IPython syntax blanked (what libcst parses)
    original: str = ""  # the same lines as written (snippets, suppressions)
    starts: list[tuple[int, int]] = field(default_factory=list)  # (cell number, first line in the texts)
    shell: list[tuple[int, int, str]] = field(default_factory=list)  # (line, column of text, text) run as shell
    env: list[tuple[int, int, str]] = field(default_factory=list)  # (line, column of text, `%env` argument)
    cells: list[tuple[int, int, str]] = field(default_factory=list)  # (cell number, first line, code) per code cell

    def place(self, line: int) -> tuple[int, int]:
        """(cell number, line in the cell) of a line of the joined texts."""
        cell, first = 0, 1
        for number, start in self.starts:
            if start > line:
                break
            cell, first = number, start
        return cell, line - first + 1


def read_notebook(text: str) -> Notebook:
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise NotebookError(f"not valid JSON: {exc}") from None
    cells = data.get("cells") if isinstance(data, dict) else None
    if not isinstance(cells, list):
        raise NotebookError("no `cells` list: not a Jupyter notebook (nbformat 4)")
    notebook = Notebook()
    code: list[str] = []
    original: list[str] = []
    for number, cell in enumerate(cells, 1):
        if not isinstance(cell, dict):
            raise NotebookError(f"cell {number} is not an object")
        source = cell.get("source", "")
        if isinstance(source, list) and all(isinstance(part, str) for part in source):
            source = "".join(source)
        elif not isinstance(source, str):
            raise NotebookError(f"cell {number}: `source` is neither a string nor a list of strings")
        if cell.get("cell_type") != "code":
            continue
        if not source.isascii():
            # JSON can escape a lone surrogate (`\ud800`), which no Python source holds: one
            # replacement character for one, so positions stay (an internal error before: D21)
            source = _SURROGATE.sub("\ufffd", source)
        # Python's own line ends: str.splitlines() also broke at U+2028, form feeds, \x1c-\x1e and
        # NEL, which moved the lines of everything below and made the cell a parse error (D17)
        lines = split_lines(source) or [""]
        first = len(code) + 1
        notebook.starts.append((number, first))
        blanked = _blank(lines, first, notebook)
        code.extend(blanked)
        original.extend(lines)
        notebook.cells.append((number, first, "\n".join(blanked) + "\n"))
    notebook.code = "\n".join(code) + "\n"
    notebook.original = "\n".join(original) + "\n"
    return notebook


def _blank(lines: list[str], first: int, notebook: Notebook) -> list[str]:
    """The cell's lines with IPython syntax replaced by `pass` (same count, same indentation)."""
    out = list(lines)
    head = lines[0].lstrip()
    start = 0
    if head.startswith("%%"):
        magic = head[2:].split(None, 1)[0] if head[2:].strip() else ""
        out[0] = ""
        start = 1
        if magic in _SHELL_CELL_MAGICS:
            for index in range(1, len(lines)):
                notebook.shell.append((first + index, 1, lines[index]))
                out[index] = ""
            return out
        if magic not in _PYTHON_CELL_MAGICS:
            return [""] * len(lines)
    continued: list | None = None  # after a shell or magic line ending in `\\`: the list its entry is last in
    for index in range(start, len(lines)):
        line = lines[index]
        if continued is not None:  # `!pip install a \\` then `    b`: one command, a blank line for Python
            if continued:
                at, column, text = continued[-1]
                continued[-1] = (at, column, text + "\n" + line)
            out[index] = ""
            continued = continued if line.endswith("\\") else None
            continue
        stripped = line.lstrip()
        if not stripped or (stripped[0] not in "!%?" and not stripped.endswith("?")
                            and not ("=" in stripped and ("!" in stripped or "%" in stripped))):
            continue  # plain Python (the common line: one test)
        shell = _SHELL_LINE.match(line)
        magic = _MAGIC_LINE.match(line) if shell is None else None
        entries: list = []  # where this line's text went (continuation lines follow it there)
        if shell is not None:
            entries = notebook.shell
            entries.append((first + index, shell.start(2) + 1, shell.group(2)))
        elif magic is not None:
            name, rest = magic.group(2), magic.group(3)
            column = magic.start(3) + 1
            if name in ("pip", "conda", "mamba", "uv"):
                entries = notebook.shell
                entries.append((first + index, magic.start(2) + 1, name + rest))
            elif name in ("env", "set_env"):
                entries = notebook.env
                entries.append((first + index, column, rest))
            elif name in ("sx", "system"):
                entries = notebook.shell
                entries.append((first + index, column, rest))
        elif not _HELP_LINE.match(line):
            continue
        indent = line[:len(line) - len(stripped)]
        out[index] = indent + "pass"
        if line.endswith("\\") and (shell is not None or magic is not None):
            continued = entries  # [] for a magic whose text is not read: its lines are blanked all the same
    return out


def magics_document(notebook: Notebook) -> Document:
    """What the shell and `%env` lines say, at their lines in the joined text."""
    positions = Positions(notebook.original)
    script = Script()
    starts = positions.starts
    for line, column, text in notebook.shell:
        offset = starts[line - 1] + column - 1
        read_script(text, list(range(offset, offset + len(text))), positions, via="!", script=script)
    for line, column, text in notebook.env:
        match = _ENV.match(text)
        if match is not None:
            name = match.group(1)
            at = column + match.start(1)
            script.env.append(EnvSetting(line=line, column=at, end_line=line, end_column=column + len(text.rstrip()),
                                         name=name, value=match.group(2) or None, via="%env"))
    return Document(dependencies=script.dependencies, env=script.env, commands=script.commands)


def document(ctx: FileContext) -> Document:
    """The kind's reader for a FileContext over the notebook's JSON text."""
    try:
        return magics_document(read_notebook(ctx.text))
    except NotebookError as exc:
        ctx.error("parse", str(exc))
        return Document()

"""Dockerfiles and Containerfiles, read by hand: the instruction grammar is small (instruction
word, arguments, `\\` continuations or the `# escape=` character, comment lines that may sit inside
a continuation, `<<EOF` heredocs). Each instruction becomes a logical line with a map back to the
file's offsets, so every position points into the file as written.

- `FROM [--platform=...] image [AS stage]`: each stage on its own; `${ARG}` references resolved from
  the global `ARG` defaults (the image is then marked parameterized); a stage name is not an image.
- `ENV A=1 B=2` and the legacy `ENV A 1`: environment settings; so is an `ARG A=1` default (a build
  pinned to `CUDA_VERSION=12.1.0`).
- `RUN` (shell form, exec form and heredoc bodies), `CMD`, `ENTRYPOINT`: commands, read by
  auditor.readers.commands, so `pip install` / `uv pip install` / `conda install` lines give the
  same requirements and indexes as a requirements file.
An unterminated continuation or heredoc is an error entry; the instructions before it still count."""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING

from auditor.readers.commands import Positions, Script, installs, read_script
from auditor.readers.document import Command, Document, EnvSetting, ImageRef, Word

if TYPE_CHECKING:
    from auditor.context import FileContext

_DIRECTIVE = re.compile(r"#\s*([a-zA-Z]+)\s*=\s*(\S+)\s*$")
_HEREDOC = re.compile(r"<<(-?)\s*(['\"]?)([A-Za-z_][A-Za-z0-9_]*)\2")
_VARIABLE = re.compile(r"\$(?:\{([A-Za-z_][A-Za-z0-9_]*)(?::?[-+][^}]*)?\}|([A-Za-z_][A-Za-z0-9_]*))")
_COMMANDS = frozenset({"RUN", "CMD", "ENTRYPOINT"})
_JSON_STRING = re.compile(r'"(?:[^"\\]|\\.)*+"')


class Instruction:
    """One instruction: its keyword and its arguments as a logical line with file offsets."""

    def __init__(self, keyword: str, text: str, origin: list[int], heredocs: list[tuple[str, int]]) -> None:
        self.keyword = keyword
        self.text = text  # the arguments, continuations and inner comment lines removed
        self.origin = origin  # offset in the file of each character of `text`
        self.heredocs = heredocs  # (body, offset of the body in the file)


def instructions(text: str, errors: list[str]) -> list[Instruction]:
    """The file's instructions in order; problems are appended to `errors`."""
    lines = text.split("\n")
    offsets = [0]
    for line in lines[:-1]:
        offsets.append(offsets[-1] + len(line) + 1)
    escape = "\\"
    found: list[Instruction] = []
    i = 0
    directives = True
    while i < len(lines):
        raw = lines[i]
        stripped = raw.strip()
        if directives:
            directive = _DIRECTIVE.match(stripped)
            if directive is not None:
                if directive.group(1).lower() == "escape" and directive.group(2) in ("\\", "`"):
                    escape = directive.group(2)
                i += 1
                continue
            directives = False
        if not stripped or stripped.startswith("#"):
            i += 1
            continue
        chars: list[str] = []
        origin: list[int] = []
        line_index = i
        while True:
            body = lines[line_index]
            start = offsets[line_index]
            content = body.rstrip()
            continued = content.endswith(escape)
            if continued:
                content = content[:-1]
            chars.append(content)
            origin.extend(range(start, start + len(content)))
            line_index += 1
            if not continued:
                break
            while line_index < len(lines) and (not lines[line_index].strip()
                                               or lines[line_index].lstrip().startswith("#")):
                line_index += 1  # comment and empty lines inside a continuation are dropped
            if line_index >= len(lines):
                errors.append(f"line {i + 1}: unterminated continuation (`{escape}` at the end of the file)")
                break
            chars.append(" ")
            origin.append(offsets[line_index])
        logical = "".join(chars)
        lead = len(logical) - len(logical.lstrip())
        keyword, _, _ = logical.lstrip().partition(" ")
        skip = lead + len(keyword)
        while skip < len(logical) and logical[skip] in " \t":
            skip += 1
        heredocs: list[tuple[str, int]] = []
        for match in _HEREDOC.finditer(logical):
            delimiter, strip_tabs = match.group(3), match.group(1) == "-"
            body_start = line_index
            while line_index < len(lines):
                candidate = lines[line_index].lstrip("\t") if strip_tabs else lines[line_index]
                line_index += 1
                if candidate.rstrip("\r") == delimiter:
                    break
            else:
                errors.append(f"line {i + 1}: unterminated here-document (no line `{delimiter}`)")
            end = line_index - 1 if line_index - 1 >= body_start else body_start
            body = "\n".join(lines[body_start:end])
            heredocs.append((body, offsets[body_start] if body_start < len(offsets) else len(text)))
        found.append(Instruction(keyword.upper(), logical[skip:], origin[skip:], heredocs))
        i = line_index
    return found


def document(ctx: FileContext) -> Document:
    errors: list[str] = []
    positions = Positions(ctx.text)
    script = Script()
    env: list[EnvSetting] = []
    bases = _Bases(positions)
    for item in instructions(ctx.text, errors):
        if item.keyword in ("ARG", "FROM"):
            bases.add(item)
            if item.keyword == "ARG":  # `ARG CUDA_VERSION=12.1.0`: a build pinned to a CUDA version
                env.extend(_env(item, positions, "ARG"))
        elif item.keyword == "ENV":
            env.extend(_env(item, positions))
        elif item.keyword in _COMMANDS:
            _commands(item, positions, script)
    errors.extend(script.errors)
    for message in dict.fromkeys(errors):
        ctx.error("parse", message)
    return Document(dependencies=script.dependencies, env=[*env, *script.env], commands=script.commands,
                    images=bases.images, final_image=bases.final())


class _Bases:
    """FROM lines: their images, stage names and the global ARG defaults they may use."""

    def __init__(self, positions: Positions) -> None:
        self.positions = positions
        self.arguments: dict[str, str] = {}
        self.stages: dict[str, str | None] = {}
        self.chain: list[str | None] = []
        self.images: list[ImageRef] = []

    def add(self, item: Instruction) -> None:
        if item.keyword == "ARG":
            if not self.chain:  # only ARGs before the first FROM can be used in FROM lines
                for name, value in re.findall(r"([A-Za-z_][A-Za-z0-9_]*)=(\"[^\"]*\"|'[^']*'|\S*)", item.text):
                    self.arguments[name] = value.strip("\"'")
            return
        image = _image(item, self.arguments, self.stages, self.positions, self.chain)
        if image is not None:
            self.images.append(image)

    def final(self) -> str | None:
        """The image the last stage derives from, following stage names back to an image."""
        reference = self.chain[-1] if self.chain else None
        seen: set[str] = set()
        while reference is not None and reference.lower() in self.stages and reference.lower() not in seen:
            seen.add(reference.lower())
            reference = self.stages[reference.lower()]
        return reference


def _span(item: Instruction, start: int, end: int, positions: Positions) -> tuple[int, int, int, int]:
    line, column = positions.at(item.origin[start])
    end_line, end_column = positions.at(item.origin[end - 1] + 1)
    return line, column, end_line, end_column


def _image(item: Instruction, arguments: dict[str, str], stages: dict[str, str | None], positions: Positions,
           chain: list[str | None]) -> ImageRef | None:
    """The image of a FROM line, or None for a stage reference, `scratch` or a build argument without a
    default. `stages` maps each stage name to its own base (for final_image); `chain` gets every
    FROM's base in order."""
    words = [(m.group(0), m.start(), m.end()) for m in re.finditer(r"\S+", item.text)]
    words = [w for w in words if not w[0].startswith("--")]
    if not words:
        return None
    reference, start, end = words[0]
    alias = words[2][0].lower() if len(words) >= 3 and words[1][0].lower() == "as" else None
    missing = [m.group(1) or m.group(2) for m in _VARIABLE.finditer(reference)
               if (m.group(1) or m.group(2)) not in arguments]
    resolved = None if missing else _VARIABLE.sub(lambda m: arguments[m.group(1) or m.group(2)], reference)
    chain.append(resolved)
    if alias is not None:
        stages[alias] = resolved
    if resolved is None or resolved.lower() in stages and resolved.lower() != alias or resolved.lower() == "scratch":
        return None
    line, column, end_line, end_column = _span(item, start, end, positions)
    return ImageRef(line=line, column=column, end_line=end_line, end_column=end_column, image=resolved,
                    via="FROM", stage=alias, parameterized="$" in reference)


def _env(item: Instruction, positions: Positions, via: str = "ENV") -> list[EnvSetting]:
    """`ENV A=1 B=2`, the legacy `ENV A 1`, and `ARG A=1` (an ARG without a default sets nothing)."""
    settings = []
    text = item.text
    pairs = list(re.finditer(r"([A-Za-z_][A-Za-z0-9_]*)=(\"(?:[^\"\\]|\\.)*\"|'[^']*'|(?:[^\s\\]|\\.)*)", text))
    if pairs:
        for match in pairs:
            line, column, end_line, end_column = _span(item, match.start(), match.end(), positions)
            settings.append(EnvSetting(line=line, column=column, end_line=end_line, end_column=end_column,
                                       name=match.group(1), value=match.group(2).strip("\"'"), via=via))
    elif via == "ENV":  # legacy `ENV NAME value with spaces`
        match = re.match(r"([A-Za-z_][A-Za-z0-9_]*)(?:\s+(.*))?$", text)
        if match is not None:
            line, column, end_line, end_column = _span(item, 0, max(len(text.rstrip()), 1), positions)
            settings.append(EnvSetting(line=line, column=column, end_line=end_line, end_column=end_column,
                                       name=match.group(1), value=match.group(2), via="ENV"))
    return settings


def _commands(item: Instruction, positions: Positions, script: Script) -> None:
    text = item.text
    flags = re.match(r"(?:--[a-z-]+(?:=\S*)?\s+)*", text)
    offset = flags.end() if flags else 0
    body = text[offset:]
    if item.heredocs:  # the bodies are read below; blank the markers (same length: offsets stay put)
        body = _HEREDOC.sub(lambda m: " " * len(m.group(0)), body)
    if body.startswith("["):
        _exec_form(item, offset, positions, script)
    elif body.strip():
        read_script(body, item.origin[offset:], positions, via=item.keyword, script=script)
    for heredoc, start in item.heredocs:
        if item.keyword == "RUN":
            read_script(heredoc, list(range(start, start + len(heredoc))), positions, via="RUN", script=script)


def _exec_form(item: Instruction, offset: int, positions: Positions, script: Script) -> None:
    """`RUN ["pip", "install", "torch"]`: a JSON array of words (anything else is shell form)."""
    text = item.text[offset:]
    try:
        argv = json.loads(text)
    except ValueError:
        read_script(text, item.origin[offset:], positions, via=item.keyword, script=script)
        return
    if not isinstance(argv, list) or not argv or not all(isinstance(a, str) for a in argv):
        return
    # The array holds strings only, so its string tokens are its elements, in order: their spans as
    # written (`"\u0061"` is not json.dumps("a"); searching for that from each word on was
    # quadratic: 80,000 of them took 105 s, issue 20, D9)
    spans = [m.span() for m in _JSON_STRING.finditer(text)]
    if len(spans) != len(argv):
        return
    words = []
    for value, (at, end) in zip(argv, spans, strict=True):
        line, column, end_line, end_column = _span(item, offset + at, offset + end, positions)
        words.append(Word(line=line, column=column, end_line=end_line, end_column=end_column, text=value))
    command = Command(line=words[0].line, column=words[0].column, end_line=words[-1].end_line,
                      end_column=words[-1].end_column, words=words, via=item.keyword)
    script.commands.append(command)
    installs(command, script.dependencies)


def final_image(text: str) -> str | None:
    """The image the last stage builds from (what `docker build` ships), through stage names and
    `${ARG}` defaults; None when it cannot be known. Reads only ARG and FROM lines (no commands,
    no rules): the repository-level alternatives pass calls it on warm runs too."""
    bases = _Bases(Positions(text))
    for item in instructions(text, []):
        if item.keyword in ("ARG", "FROM"):
            bases.add(item)
    return bases.final()

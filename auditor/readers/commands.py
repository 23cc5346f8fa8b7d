"""Shell command lines, as shell scripts, Dockerfile `RUN`/`CMD`, Slurm `#SBATCH` lines and notebook
`!` lines write them: a hand-written tokenizer (quotes, `\\` continuations, comments, `&&`/`||`/`;`/
`|` chains, `$(...)` and backquote substitutions read as commands too, heredoc bodies skipped as
data) and what the commands mean for lock-in: environment settings (`export X=1`, `X=1 cmd`,
`env X=1 cmd`, `docker run -e X=1`) and the packages and indexes of `pip install`, `uv pip install`
and `conda install` lines, read with the same requirement and index model as requirements files.
Nothing is ever executed."""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass, field

from auditor.readers import Dependencies, IndexUrl, Requirement, normalize, parse_requirement, salvage_requirement
from auditor.readers.document import Command, EnvSetting, Word

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_ASSIGNMENT = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)=(.*)", re.S)
_KEYWORDS = frozenset({"if", "then", "else", "elif", "do", "while", "until", "!", "{", "}", "fi", "done", "time",
                       "exec", "nohup", "command", "builtin"})
_WRAPPERS = frozenset({"sudo", "nice", "stdbuf", "ionice", "chronic", "unbuffer"})
_PIP = re.compile(r"pip(?:\d+(?:\.\d+)?)?")
_PYTHON = re.compile(r"python(?:\d+(?:\.\d+)?)?")
_CONDA = frozenset({"conda", "mamba", "micromamba"})
# pip / uv pip options that take a value (everything else starting with "-" is a flag).
_PIP_VALUE_OPTIONS = frozenset({
    "-r", "--requirement", "-c", "--constraint", "-e", "--editable", "-t", "--target", "--prefix", "--root",
    "--platform", "--python-version", "--implementation", "--abi", "--trusted-host", "--cache-dir", "--src",
    "--upgrade-strategy", "--progress-bar", "--log", "--proxy", "--retries", "--timeout", "--exists-action",
    "--cert", "--client-cert", "-C", "--config-settings", "--global-option", "--install-option", "--python", "-p",
    "--index-strategy", "--extra", "--group", "--only-binary", "--no-binary", "--override", "--prerelease",
    "--resolution", "--keyring-provider", "--report", "--link-mode", "--exclude-newer", "--refresh-package",
    "--reinstall-package", "--no-build-isolation-package", "--build-constraint", "--compile-bytecode-level",
})
_PIP_INDEX_OPTIONS = {"-i": "--index-url", "--index-url": "--index-url", "--extra-index-url": "--extra-index-url",
                      "-f": "--find-links", "--find-links": "--find-links", "--index": "--index",
                      "--default-index": "--default-index", "--torch-backend": "--torch-backend"}
_CONDA_VALUE_OPTIONS = frozenset({"-n", "--name", "-p", "--prefix", "-f", "--file", "--solver", "--repodata-fn"})
_CONDA_SPEC = re.compile(r"(?:(?P<channel>[A-Za-z0-9_./:-]+?)::)?(?P<name>[A-Za-z0-9_][A-Za-z0-9_.-]*)(?P<rest>.*)", re.S)


class Positions:
    """1-based (line, column) of offsets in a text."""

    def __init__(self, text: str) -> None:
        self.starts = [0] + [m.end() for m in re.finditer("\n", text)]

    def at(self, offset: int) -> tuple[int, int]:
        index = bisect.bisect_right(self.starts, offset) - 1
        return index + 1, offset - self.starts[index] + 1


@dataclass
class Script:
    """What a stretch of shell says."""

    commands: list[Command] = field(default_factory=list)
    env: list[EnvSetting] = field(default_factory=list)
    dependencies: Dependencies = field(default_factory=Dependencies)
    errors: list[str] = field(default_factory=list)


class _Tokens:
    """One pass over `text`: simple commands as lists of (word, start, end) in `text` offsets."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.commands: list[list[tuple[str, int, int]]] = []
        self.substitutions: list[tuple[int, int]] = []
        self.errors: list[tuple[int, str]] = []  # (offset in text, message)
        self._run()

    def _run(self) -> None:
        text, n = self.text, len(self.text)
        words: list[tuple[str, int, int]] = []
        chars: list[str] | None = None
        start = 0
        redirect = False
        heredocs: list[tuple[str, bool]] = []
        i = 0

        def finish(end: int) -> None:
            nonlocal chars, redirect
            if chars is not None:
                if redirect:
                    redirect = False
                else:
                    words.append(("".join(chars), start, end))
                chars = None

        def close() -> None:
            if words:
                self.commands.append(list(words))
                words.clear()

        while i < n:
            c = text[i]
            if c in " \t\r":
                finish(i)
                i += 1
            elif c == "\\" and (text.startswith("\n", i + 1) or text.startswith("\r\n", i + 1)):
                i += 2 if text[i + 1] == "\n" else 3  # a continuation: the command goes on
            elif c == "\n":
                finish(i)
                close()
                i += 1
                if heredocs:
                    i = self._skip_heredocs(i, heredocs)
                    heredocs.clear()
            elif c == "#" and chars is None:
                end = text.find("\n", i)
                i = n if end < 0 else end
            elif c in ";&|()":
                finish(i)
                close()
                i += 2 if text[i:i + 2] in ("&&", "||", ";;", "|&", ">&") else 1
            elif c == "<" and text.startswith("<<", i) and not text.startswith("<<<", i):
                finish(i)
                i = self._heredoc(i + 2, heredocs)
            elif c in "<>":
                if chars is not None and all(ch.isdigit() for ch in chars):
                    chars = None  # `2>` : the digits are the descriptor
                finish(i)
                while i < n and text[i] in "<>&":
                    i += 1
                redirect = not (i < n and text[i].isdigit() and text[i - 1] == "&")  # `2>&1` has no target word
                if not redirect:
                    while i < n and text[i].isdigit():
                        i += 1
            else:
                if chars is None:
                    chars, start = [], i
                i = self._word_part(i, chars)
        finish(n)
        close()
        if heredocs:
            self.errors.append((n - 1, f"unterminated here-document (no line `{heredocs[0][0]}`)"))

    def _word_part(self, i: int, chars: list[str]) -> int:
        text, n = self.text, len(self.text)
        c = text[i]
        if c == "'":
            end = text.find("'", i + 1)
            if end < 0:
                self.errors.append((i, "unterminated single quote"))
                chars.append(text[i + 1:])
                return n
            chars.append(text[i + 1:end])
            return end + 1
        if c == '"':
            j = i + 1
            while j < n and text[j] != '"':
                if text[j] == "\\" and j + 1 < n:
                    if text[j + 1] == "\n":
                        j += 2
                        continue
                    chars.append(text[j + 1] if text[j + 1] in '"\\$`' else text[j:j + 2])
                    j += 2
                    continue
                if text.startswith("$(", j):
                    j = self._substitution(j, chars)
                    continue
                chars.append(text[j])
                j += 1
            if j >= n:
                self.errors.append((i, "unterminated double quote"))
                return n
            return j + 1
        if c == "\\" and i + 1 < n:
            chars.append(text[i + 1])
            return i + 2
        if text.startswith("$(", i):
            return self._substitution(i, chars)
        if c == "`":
            end = text.find("`", i + 1)
            end = n if end < 0 else end
            self.substitutions.append((i + 1, end))
            chars.append(text[i:end + 1])
            return end + 1
        chars.append(c)
        return i + 1

    def _substitution(self, i: int, chars: list[str]) -> int:
        """`$(...)`: kept in the word as written, and its inside read as commands of its own."""
        text, n = self.text, len(self.text)
        depth, j = 0, i + 1
        while j < n:
            if text[j] == "(":
                depth += 1
            elif text[j] == ")":
                depth -= 1
                if depth == 0:
                    break
            elif text[j] in "'\"":
                close = text.find(text[j], j + 1)
                j = n if close < 0 else close
            j += 1
        self.substitutions.append((i + 2, min(j, n)))
        chars.append(text[i:j + 1])
        return j + 1

    def _heredoc(self, i: int, heredocs: list[tuple[str, bool]]) -> int:
        text, n = self.text, len(self.text)
        strip_tabs = i < n and text[i] == "-"
        if strip_tabs:
            i += 1
        while i < n and text[i] in " \t":
            i += 1
        j = i
        while j < n and text[j] not in " \t\n;&|<>()":
            j += 1
        delimiter = text[i:j].replace("'", "").replace('"', "").replace("\\", "")
        if delimiter:
            heredocs.append((delimiter, strip_tabs))
        return j

    def _skip_heredocs(self, i: int, heredocs: list[tuple[str, bool]]) -> int:
        text, n = self.text, len(self.text)
        for delimiter, strip_tabs in heredocs:
            while i < n:
                end = text.find("\n", i)
                end = n if end < 0 else end
                line = text[i:end]
                i = end + 1
                if (line.lstrip("\t") if strip_tabs else line) == delimiter:
                    break
            else:
                self.errors.append((n - 1, f"unterminated here-document (no line `{delimiter}`)"))
                return n
        return i


def read_script(text: str, origin: list[int] | None, positions: Positions, via: str = "",
                script: Script | None = None) -> Script:
    """The commands, environment settings and installs in `text`. `origin` maps each offset of
    `text` to an offset of the file `positions` was built on (None: `text` is that file)."""
    script = script if script is not None else Script()
    tokens = _Tokens(text)
    for offset, message in tokens.errors:
        at = origin[min(offset, len(origin) - 1)] if origin else max(offset, 0)
        script.errors.append(f"line {positions.at(at)[0]}: {message}")

    def word(item: tuple[str, int, int]) -> Word:
        value, start, end = item
        a = origin[start] if origin is not None else start
        b = (origin[end - 1] + 1) if origin is not None else end
        line, column = positions.at(a)
        end_line, end_column = positions.at(b)
        return Word(line=line, column=column, end_line=end_line, end_column=end_column, text=value)

    for raw in tokens.commands:
        _command([word(item) for item in raw], via, script)
    for start, end in tokens.substitutions:
        inner = origin[start:end] if origin is not None else list(range(start, end))
        read_script(text[start:end], inner, positions, via, script)
    return script


def _command(words: list[Word], via: str, script: Script) -> None:
    """Record one simple command: its leading assignments, then the program and its arguments."""
    i = 0
    while i < len(words) and words[i].text in _KEYWORDS:
        i += 1
    before = len(script.env)
    i = _assignments(words, i, "inline", script)
    if i >= len(words):  # `X=1` alone sets a shell variable; only `X=1 cmd` puts it in cmd's environment
        for setting in script.env[before:]:
            setting.via = "assign"
    while i < len(words):
        program = words[i].text.rsplit("/", 1)[-1]
        if program in _WRAPPERS:
            i += 1
            while i < len(words) and words[i].text.startswith("-"):
                i += 1
        elif program == "env":
            i += 1
            while i < len(words) and words[i].text.startswith("-"):
                i += 1
            i = _assignments(words, i, "env", script)
        elif program == "timeout":
            i += 1
            while i < len(words) and words[i].text.startswith("-"):
                i += 1
            i += 1  # the duration
        elif program in ("export", "declare", "typeset", "readonly", "local") and i + 1 < len(words):
            if program != "export" and not any(w.text.startswith("-") and "x" in w.text for w in words[i + 1:]):
                return  # a shell variable, not the environment
            for item in words[i + 1:]:
                if not item.text.startswith("-"):
                    _setting(item, "export", script, bare_ok=True)
            return
        else:
            break
    if i >= len(words):
        return
    command = Command(line=words[i].line, column=words[i].column, end_line=words[-1].end_line,
                      end_column=words[-1].end_column, words=words[i:], via=via)
    script.commands.append(command)
    argv = command.argv
    program = argv[0].rsplit("/", 1)[-1]
    if program in ("docker", "podman"):
        for index, text in enumerate(argv[1:-1], 1):
            if text in ("-e", "--env"):
                _setting(command.words[index + 1], "docker run -e", script, bare_ok=True)
    installs(command, script.dependencies)


def _assignments(words: list[Word], i: int, via: str, script: Script) -> int:
    while i < len(words) and _ASSIGNMENT.fullmatch(words[i].text):
        _setting(words[i], via, script)
        i += 1
    return i


def _setting(item: Word, via: str, script: Script, bare_ok: bool = False) -> None:
    match = _ASSIGNMENT.fullmatch(item.text)
    if match is not None:
        name, value = match.group(1), match.group(2)
    elif bare_ok and _NAME.fullmatch(item.text):
        name, value = item.text, None
    else:
        return
    script.env.append(EnvSetting(line=item.line, column=item.column, end_line=item.end_line,
                                 end_column=item.column + len(name) if value is None else item.end_column,
                                 name=name, value=value, via=via))


# -- installs ------------------------------------------------------------------------------------------
def installs(command: Command, deps: Dependencies) -> None:
    """The packages and indexes of a pip / uv pip / conda install command, added to `deps`."""
    words = command.words
    argv = command.argv
    program = argv[0].rsplit("/", 1)[-1]
    rest: list[Word] | None = None
    if _PIP.fullmatch(program):
        rest = words[1:]
    elif _PYTHON.fullmatch(program):
        for index in range(1, len(argv) - 1):
            if argv[index] == "-m" and _PIP.fullmatch(argv[index + 1]):
                rest = words[index + 2:]
                break
    elif program == "uv" and len(argv) > 2 and argv[1] == "pip":
        rest = words[2:]
    elif program == "uv" and len(argv) > 1 and argv[1] == "add":
        rest = [Word(text="install"), *words[2:]]
    elif program in _CONDA and len(argv) > 1 and argv[1] in ("install", "create"):
        _conda(words[2:], deps)
        return
    if rest and rest[0].text in ("install", "sync"):
        _pip(rest[1:], deps)


def _pip(words: list[Word], deps: Dependencies) -> None:
    i = 0
    while i < len(words):
        item = words[i]
        text = item.text
        if text.startswith("-"):
            option, _, inline = text.partition("=")
            if option in _PIP_INDEX_OPTIONS or option in _PIP_VALUE_OPTIONS:
                value = inline if inline else (words[i + 1] if i + 1 < len(words) else None)
                if value is not None and option in _PIP_INDEX_OPTIONS:
                    where = item if inline else value
                    url = value if isinstance(value, str) else value.text
                    name = url if option == "--torch-backend" else None
                    deps.indexes.append(IndexUrl(line=where.line, column=where.column, end_line=where.end_line,
                                                 end_column=where.end_column, url="" if name else url,
                                                 option=_PIP_INDEX_OPTIONS[option], name=name))
                i += 1 if inline else 2
                continue
            i += 1
            continue
        requirement = _pip_requirement(text)
        if requirement is not None:
            _place(requirement, item, "pip install")
            deps.requirements.append(requirement)
        i += 1


def _pip_requirement(text: str) -> Requirement | None:
    if not text or text.startswith(("$", ".", "/", "~")) or text in ("install",):
        return None
    if "://" in text or text.endswith((".whl", ".tar.gz", ".zip")):
        name = text.rsplit("/", 1)[-1].split("-", 1)[0] if text.endswith(".whl") else None
        if "@" in text and "://" not in text.split("@", 1)[0]:
            try:
                return parse_requirement(text)
            except ValueError:
                pass
        return Requirement(name=name, key=normalize(name) if name else None, url=text, text=text)
    try:
        return parse_requirement(text)
    except ValueError:
        return salvage_requirement(text)


def _conda(words: list[Word], deps: Dependencies) -> None:
    i = 0
    while i < len(words):
        item = words[i]
        text = item.text
        if text.startswith("-"):
            option, _, inline = text.partition("=")
            if option in ("-c", "--channel"):
                value = words[i + 1] if not inline and i + 1 < len(words) else None
                channel = inline or (value.text if value is not None else "")
                where = item if inline or value is None else value
                if channel:
                    deps.indexes.append(conda_channel(channel, where, "conda -c"))
                i += 1 if inline else 2
                continue
            i += 2 if option in _CONDA_VALUE_OPTIONS and not inline else 1
            continue
        requirement = conda_requirement(text, deps, item)
        if requirement is not None:
            deps.requirements.append(requirement)
        i += 1


def conda_channel(channel: str, where, option: str) -> IndexUrl:
    """A conda channel as an index: its name, and its URL when written as one."""
    url = channel if "://" in channel else ""
    name = channel.rstrip("/").rsplit("/", 1)[-1] if url else channel
    return IndexUrl(line=where.line, column=where.column, end_line=where.end_line, end_column=where.end_column,
                    url=url, option=option, name=name)


def conda_requirement(spec: str, deps: Dependencies, where) -> Requirement | None:
    """`pytorch-cuda=12.1`, `pytorch==2.1.0=py3.10_cuda11.8_cudnn8_0`, `nvidia::cuda-toolkit`: the
    package (origin "conda"), its version as a specifier and its build string; a channel prefix
    becomes an index too."""
    match = _CONDA_SPEC.fullmatch(spec.strip())
    if match is None or spec.startswith(("$", ".", "/")):
        return None
    rest = match.group("rest").strip()
    build = None
    if rest.startswith("=") and not rest.startswith("=="):
        rest = "==" + rest[1:]
    if rest.startswith("=="):
        version, _, build = rest[2:].partition("=")
        rest = "==" + version
        build = build or None
    name = match.group("name")
    requirement = Requirement(name=name, key=normalize(name), specifier=rest, text=spec, origin="conda",
                              build=build)
    _place(requirement, where, "conda")
    if match.group("channel"):
        deps.indexes.append(conda_channel(match.group("channel"), where, "conda channel::package"))
    return requirement


def _place(requirement: Requirement, where, origin: str) -> None:
    requirement.line, requirement.column = where.line, where.column
    requirement.end_line, requirement.end_column = where.end_line, where.end_column
    requirement.origin = requirement.origin or origin

"""Shell and job scripts (`*.sh`, `*.bash`, Slurm `*.slurm` / `*.sbatch`): commands, exported and
inline environment variables, `pip`/`uv`/`conda install` lines (auditor.readers.commands), and Slurm
`#SBATCH` directives as commands of their own (`#SBATCH --gres=gpu:4` is read as
`#sbatch --gres=gpu:4`)."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from auditor.readers.commands import Positions, Script, read_script
from auditor.readers.document import Document, Word

if TYPE_CHECKING:
    from auditor.context import FileContext

_SBATCH = re.compile(r"^[ \t]*#SBATCH[ \t]+([^\n]*)", re.M)


def document(ctx: FileContext) -> Document:
    positions = Positions(ctx.text)
    script = read_script(ctx.text, None, positions)
    for match in _SBATCH.finditer(ctx.text):
        _directive(ctx.text, match, positions, script)
    for message in script.errors:
        ctx.error("parse", message)
    return Document(dependencies=script.dependencies, env=script.env, commands=script.commands)


def _directive(text: str, match: re.Match[str], positions: Positions, script: Script) -> None:
    """`#SBATCH --gres=gpu:4`: the options after the marker, as a `#sbatch` command."""
    start = match.start(1)
    line, column = positions.at(match.start())
    head = Word(line=line, column=column + (len(match.group(0)) - len(match.group(0).lstrip())),
                end_line=line, end_column=positions.at(start)[1], text="#sbatch")
    options = read_script(match.group(1), list(range(start, match.end(1))), positions, via="#SBATCH", script=Script())
    for command in options.commands:
        command.words.insert(0, head)
        command.line, command.column, command.via = head.line, head.column, "#SBATCH"
        script.commands.append(command)

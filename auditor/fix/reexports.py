"""Names other modules of the project import from a module, so that dropping an import a round of
fixes left unused does not break them: `from utils import autocast` in train.py still needs
`from torch.cuda.amp import autocast` in utils.py, which defines no `__all__` (issue 19, pattern 7).

The other modules are read as text (never imported), once per fix run and only when a round is
about to drop an import: `from X import a, b` and `X.a` where X's last part is the module's name
(absolute or relative). Matching by the last part keeps a name that only looks re-imported (a
module of the same name elsewhere): keeping an import is always safe, dropping it is not."""

from __future__ import annotations

import re
from collections.abc import Iterable

from auditor.read.text import SourceError, decode_python, read_regular_file

_FROM = re.compile(r"^[ \t]*from[ \t]+(\.*[\w.]*)[ \t]+import[ \t]+(\([^)]*\)|[^\n#;]*)", re.MULTILINE)
_IMPORT = re.compile(r"^[ \t]*import[ \t]+([\w.]+)(?:[ \t]+as[ \t]+(\w+))?", re.MULTILINE)


class ReExports:
    """module stem -> names other files import from a module of that name."""

    def __init__(self, paths: Iterable[tuple[str, str]], max_bytes: int) -> None:
        self._paths = list(paths)  # (path to open, path as reported)
        self._max_bytes = max_bytes
        self._index: dict[str, dict[str, set[str]]] | None = None  # stem -> name -> reporting files

    def imported_from(self, display: str) -> frozenset[str]:
        """The names files other than `display` import from a module named like it."""
        stem = _stem(display)
        if not stem:
            return frozenset()
        index = self._build()
        return frozenset(name for name, files in index.get(stem, {}).items() if files - {display})

    def _build(self) -> dict[str, dict[str, set[str]]]:
        if self._index is None:
            index: dict[str, dict[str, set[str]]] = {}
            for path, display in self._paths:
                try:
                    text = decode_python(read_regular_file(path, self._max_bytes))
                except (OSError, SourceError):
                    continue
                for module, names in _FROM.findall(text):
                    stem = module.rstrip(".").rpartition(".")[2]
                    imported = re.findall(r"([A-Za-z_]\w*)(?:\s+as\s+(\w+))?", names.strip("()"))
                    for name, alias in imported:
                        if name != "as":
                            index.setdefault(stem, {}).setdefault(name, set()).add(display)
                            self._attributes(text, alias or name, name, index, display)
                for module, alias in _IMPORT.findall(text):
                    stem = module.rpartition(".")[2]
                    self._attributes(text, alias or module, stem, index, display)
            self._index = index
        return self._index

    @staticmethod
    def _attributes(text: str, local: str, stem: str, index: dict[str, dict[str, set[str]]], display: str) -> None:
        """`utils.autocast` where `utils` is a module this file imported: a name read from it."""
        if f"{local}." not in text:
            return
        for name in re.findall(rf"(?<![\w.]){re.escape(local)}\.([A-Za-z_]\w*)", text):
            index.setdefault(stem, {}).setdefault(name, set()).add(display)


def _stem(display: str) -> str:
    name = display.rpartition("/")[2]
    if not name.endswith(".py"):
        return ""
    stem = name[:-3]
    if stem == "__init__":  # a package's names are imported under the package's own name
        stem = display.rpartition("/")[0].rpartition("/")[2]
    return stem

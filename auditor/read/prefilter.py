"""The byte-level prefilter: which Python files can hold a finding at all (only those are parsed).

Two stages over the lower-cased bytes. First, plain substring checks for a few anchors (`cuda`,
`nccl`, ... : `in` on bytes is a fast C search, several times cheaper than one regex with the
same alternatives). A rule's own `tokens` let a file through on their own. A catalogue row needs
more: the walker only reaches `vllm._C.ops` through an import or a dotted use that spells every
component as a whole identifier, so a file is kept for that row only when its anchor is present
and every component is one of the file's identifiers. That second stage runs only on files an
anchor hit and drops the files that merely mention `vllm` or `..._parallel` (a third to a half of
the anchor hits on real code) without ever dropping one the walker could report. The top package
must also be imported by name (`import fla`, `from fla.ops import ...`, `import torch as th`): the
walker resolves names only through imports, and a common word such as `grouped_gemm` (a transformers
expert plan) or `eetq` (a quantizer's name) is no reference to the library. A third kind of
anchor, the name of a wrapped GPU library, needs an identifier that starts with it
(`flash_attn`, `flash_attn_func`), not one that merely contains it (`_supports_flash_attn`).
Last, for files nothing else let through: an import of a module below a top package whose name
has one of the `import_words` (`from torchao.kernel import`, `from .triton_utils.kernels import`):
a GPU library's own GPU modules, reported as inventory lines (rules/contexts.toml [own_package]),
or a relative import (`from . import utils`) in a file whose folder is named with one of them."""

from __future__ import annotations

import re
from collections.abc import Iterable

_IDENTIFIER = re.compile(rb"[a-z0-9_]+")
# Import statements (of the lower-cased text): `from pkg...` and `import a.b as c, d`, wherever they
# stand (`if TYPE_CHECKING: import x`). Each pattern starts with its keyword, which re searches for
# as a literal; matches in strings or comments only let more through.
# A name imported from another module counts too: a shim may re-export the package itself
# (`from vllm.triton_utils import triton`).
_FROM = re.compile(rb"from[ \t]+(\.*)([a-z0-9_.]*)[ \t]+import[ \t]+(?:\(([^)]*)\)|([^\n;#]*))")
_IMPORT = re.compile(rb"import[ \t]+([a-z0-9_., \t]+)")
_RELATIVE_IMPORT = re.compile(rb"(?:^|[;:])[ \t]*from[ \t]+\.", re.MULTILINE)
IMPORTED = b"import:"  # a condition word meaning "this top package is imported", never an identifier


class Prefilter:
    """`prefilter(data)` is False only when no rule can report anything in `data`."""

    def __init__(self, tokens: Iterable[str], qualified_names: Iterable[tuple[str, str]],
                 word_starts: Iterable[str] = (), import_words: Iterable[str] = ()) -> None:
        """`tokens`: lower-case substrings that let a file through alone; `qualified_names`:
        (anchor, qualified name) for each catalogue row; `word_starts`: names that let a file
        through when an identifier starts with them."""
        clauses: dict[bytes, list[frozenset[bytes]]] = {}
        for token in tokens:
            clauses[token.lower().encode()] = []  # unconditional
        for anchor, name in qualified_names:
            key = anchor.lower().encode()
            top, *rest = name.lower().encode().split(b".")
            words = frozenset([IMPORTED + top, *rest])
            if key not in clauses:
                clauses[key] = [words]
            elif clauses[key]:  # an unconditional anchor needs no conditions
                clauses[key].append(words)
        # An anchor that contains a shorter one is present only where that one is too: its
        # conditions can move to the shorter anchor (the first such in table order), which saves
        # a scan of every file. An unconditional anchor inside another makes that one redundant.
        order = {anchor: index for index, anchor in enumerate(clauses)}
        contained = _contained(clauses)
        for anchor in sorted(clauses, key=len, reverse=True):
            inner = contained[anchor]  # all shorter, so none was deleted yet
            if any(not clauses[o] for o in inner):
                del clauses[anchor]
            elif inner and clauses[anchor]:
                clauses[min(inner, key=lambda o: (len(o), order[o]))].extend(clauses[anchor])
                del clauses[anchor]
        self._set({anchor: (_minimal(conds) if conds else None) for anchor, conds in clauses.items()},
                  frozenset(w.lower().encode() for w in word_starts), tuple(sorted({w.lower() for w in import_words})))

    def _set(self, conditions: dict[bytes, tuple[frozenset[bytes], ...] | None], word_starts: frozenset[bytes],
             import_words: tuple[str, ...] = ()) -> None:
        self.conditions = conditions
        self.word_starts = word_starts
        self.groups = _groups([*conditions, *word_starts], conditions)
        self.import_words = import_words
        self._imports = _import_pattern(import_words)

    @property
    def anchors(self) -> tuple[bytes, ...]:
        return tuple(sorted(self.conditions))

    def to_data(self) -> tuple:
        """Plain tuples (marshal can store them), for `from_data` in a later run."""
        return tuple(self.conditions.items()), tuple(sorted(self.word_starts)), self.import_words

    @classmethod
    def from_data(cls, data: tuple) -> Prefilter:
        """The prefilter `to_data` described, without the rules or the catalogue (nor libcst) loaded."""
        conditions, word_starts, *rest = data
        prefilter = cls.__new__(cls)
        prefilter._set(dict(conditions), frozenset(word_starts), tuple(rest[0]) if rest else ())
        return prefilter

    def __call__(self, data: bytes, path: str = "") -> bool:
        """`path`: the file's path as reported; a relative import inside a folder named for GPU code
        (`from . import utils` in `ops/_cutedsl/_cute_lib/`) may import one of its GPU modules."""
        lowered = data.lower()
        words: set[bytes] | None = None
        imported: set[bytes] | None = None  # read from the import lines only for a row whose names are all there
        for gate, members in self.groups:
            if gate not in lowered:
                continue
            for anchor in members:
                if anchor != gate and anchor not in lowered:
                    continue
                if anchor in self.conditions:
                    conditions = self.conditions[anchor]
                    if conditions is None:
                        return True
                    if words is None:
                        words = set(_IDENTIFIER.findall(lowered))
                    for condition in conditions:
                        missing = condition - words
                        if missing and all(word.startswith(IMPORTED) for word in missing):
                            imported = _imported(lowered) if imported is None else imported
                            missing -= imported
                        if not missing:
                            return True
                if anchor in self.word_starts:
                    if words is None:
                        words = set(_IDENTIFIER.findall(lowered))
                    if any(word.startswith(anchor) for word in words):
                        return True
        if self._imports is None:
            return False
        if self._imports.search(lowered) is not None:
            return True
        return bool(path) and self._gpu_folder(path) and _RELATIVE_IMPORT.search(lowered) is not None

    def _gpu_folder(self, path: str) -> bool:
        folders = path.replace("\\", "/").lower().split("/")[:-1]
        return any(not {folder, *folder.split("_")}.isdisjoint(self.import_words) for folder in folders)


def _imported(lowered: bytes) -> set[bytes]:
    """IMPORTED + each top package a lower-cased text imports, and each name it imports from a module."""
    words: set[bytes] = set()
    for dots, module, listed, inline in _FROM.findall(lowered):
        if module and not dots:  # `from . import triton` imports the project's own module, named alike
            words.add(IMPORTED + module.split(b".", 1)[0])
        _add_imported(words, listed or inline)
    for names in _IMPORT.findall(lowered):
        _add_imported(words, names)
    return words


def _add_imported(words: set[bytes], names: bytes) -> None:
    """`a.b as c, d` (or a `from` import's list): IMPORTED + a, IMPORTED + d."""
    for name in names.split(b","):
        top = name.strip().split(b".", 1)[0].split(None, 1)
        if top:
            words.add(IMPORTED + top[0])


def _import_pattern(words: tuple[str, ...]) -> re.Pattern[bytes] | None:
    """`from pkg.x.kernels import`, `import pkg.triton_utils`, `from .gpu_ops import`: a module
    below a top package (or relative) whose last parts hold one of `words` between `.`/`_`."""
    if not words:
        return None
    alternatives = b"|".join(re.escape(w.encode()) for w in words)
    return re.compile(rb"^[ \t]*(?:from|import)[ \t]+\w*\.[\w.]*?(?<=[._])(?:" + alternatives + rb")(?![a-z0-9])",
                      re.MULTILINE)


def _groups(anchors: list[bytes], conditions: dict) -> tuple[tuple[bytes, tuple[bytes, ...]], ...]:
    """Anchors grouped under a shorter anchor they contain ("nvidia" for "nvidia-smi" and
    "nvidia_visible_devices"): a file without it skips the whole group, so the common file, which
    holds no anchor at all, costs one scan per group rather than one per anchor. Only anchors
    gate (they are scanned anyway): a substring chosen for the grouping alone may be common
    ("former" is in every transformers file) and cost more than it saves.
    Groups holding an unconditional anchor come first: they decide the common hit at once."""
    remaining = set(anchors)
    holders: dict[bytes, list[bytes]] = {anchor: [anchor] for anchor in remaining}  # anchor -> those holding it
    for anchor, inner in _contained(remaining).items():
        for shorter in inner:
            holders[shorter].append(anchor)
    groups: list[tuple[bytes, list[bytes]]] = []
    for gate in sorted(remaining, key=lambda a: (len(a), a)):
        if gate in remaining:
            members = sorted(a for a in holders[gate] if a in remaining)
            groups.append((gate, members))
            remaining.difference_update(members)

    def unconditional(anchor: bytes) -> bool:
        return anchor in conditions and conditions[anchor] is None

    return tuple(sorted(
        ((gate, tuple(sorted(members, key=lambda a: (not unconditional(a), a)))) for gate, members in groups),
        key=lambda group: (not any(unconditional(a) for a in group[1]), group[0])))


def _contained(anchors: Iterable[bytes]) -> dict[bytes, list[bytes]]:
    """For each anchor, the other anchors inside it. Each is looked up among its own substrings of
    the lengths present (a few dozen lookups for a name), or, when that would cost more, each
    shorter anchor is tested: testing every pair took minutes for a configuration adding 40,000
    modules (issue 20, D18) and 0.4 s for 1,000."""
    by_length: dict[int, set[bytes]] = {}
    for anchor in anchors:
        by_length.setdefault(len(anchor), set()).add(anchor)
    lengths = sorted(by_length)
    fewer: dict[int, int] = {}  # length -> how many anchors are shorter
    total = 0
    for size in lengths:
        fewer[size], total = total, total + len(by_length[size])
    out: dict[bytes, list[bytes]] = {}
    for size in lengths:
        shorter = [n for n in lengths if n < size]
        lookups = sum(size - n + 1 for n in shorter)
        for anchor in by_length[size]:
            if lookups <= fewer[size]:
                found = {anchor[i:i + n] for n in shorter for i in range(size - n + 1)
                         if anchor[i:i + n] in by_length[n]}
            else:
                found = {other for n in shorter for other in by_length[n] if other in anchor}
            out[anchor] = list(found)
    return out


def _minimal(conditions: list[frozenset[bytes]]) -> tuple[frozenset[bytes], ...]:
    """Drop conditions that include another one (the smaller one is met whenever they are)."""
    unique = set(conditions)
    return tuple(sorted((c for c in unique if not any(o < c for o in unique)), key=sorted))

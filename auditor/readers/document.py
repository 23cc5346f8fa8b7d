"""The typed document every non-Python reader returns: what a file says, with positions.

Rules never look at a file's syntax; they read the parts of its Document they care about:
dependencies (requirements files, pyproject, Dockerfile `RUN pip install`, conda, notebooks),
environment settings (Dockerfile `ENV`, `export`, compose `environment:`, `%env`), commands
(shell lines, `RUN`, `#SBATCH`, `!` lines), container images (`FROM`, `image:`) and the node
trees of structured files (YAML, JSON, TOML). Which reader builds it is the kind's business
(auditor.discover.kinds); the document is built once per file, whichever rule asks first."""

from __future__ import annotations

from dataclasses import dataclass, field
from importlib import import_module
from typing import TYPE_CHECKING

from auditor.discover.kinds import BY_NAME
from auditor.readers import Dependencies, Located

if TYPE_CHECKING:
    from auditor.context import FileContext

STATE = "document"


@dataclass
class Word(Located):
    """One shell word, quotes removed (`text`), at the span it was written."""

    text: str = ""


@dataclass
class Command(Located):
    """One simple command (`a && b` is two), e.g. ["pip", "install", "torch"]."""

    words: list[Word] = field(default_factory=list)
    via: str = ""  # where it was written: "RUN", "CMD", "#SBATCH", "!", "" (a shell line)

    @property
    def argv(self) -> list[str]:
        return [word.text for word in self.words]


@dataclass
class EnvSetting(Located):
    """An environment variable set (or passed through) by the file: `ENV X=1`, `export X=1`,
    `X=1 cmd`, compose `environment:`, a manifest's `env: - name: X`, `%env X=1`."""

    name: str = ""
    value: str | None = None
    via: str = ""


@dataclass
class ImageRef(Located):
    """A container image the file runs on or builds from."""

    image: str = ""  # as written after ARG substitution, e.g. "nvidia/cuda:12.1.0-devel-ubuntu22.04"
    via: str = ""  # "FROM", "image"
    stage: str | None = None  # `FROM x AS stage`
    parameterized: bool = False  # the reference came from a build argument (`FROM ${BASE}`)


@dataclass
class Node(Located):
    """A YAML, JSON or TOML value: a mapping (`pairs`), a sequence (`items`) or a scalar (`value`)."""

    shape: str = "scalar"  # "map" | "seq" | "scalar"
    value: str = ""  # a scalar's text (numbers and booleans as written)
    quoted: bool = False  # a scalar written in quotes (always a string)
    pairs: list[tuple[Node, Node]] = field(default_factory=list, repr=False)
    items: list[Node] = field(default_factory=list, repr=False)

    def get(self, key: str) -> Node | None:
        """The value under a scalar key of a mapping."""
        for k, v in self.pairs:
            if k.shape == "scalar" and k.value == key:
                return v
        return None

    def walk(self, path: tuple[str, ...] = ()) -> list[tuple[tuple[str, ...], Node, Node | None]]:
        """Every (key path, value, key node) below this node; sequence items add "[]" to the path.
        Each node is visited once: an aliased YAML node shared by many parents is reported where it
        was defined, and cycles cannot loop."""
        out: list[tuple[tuple[str, ...], Node, Node | None]] = []
        seen: set[int] = set()
        stack: list[tuple[tuple[str, ...], Node, Node | None]] = [(path, self, None)]
        while stack:
            where, node, key = stack.pop()
            if id(node) in seen:
                continue
            seen.add(id(node))
            out.append((where, node, key))
            if node.shape == "map":
                stack.extend((where + (k.value if k.shape == "scalar" else "?",), v, k)
                             for k, v in reversed(node.pairs))
            elif node.shape == "seq":
                stack.extend((where + ("[]",), item, None) for item in reversed(node.items))
        return out


@dataclass
class Document:
    dependencies: Dependencies = field(default_factory=Dependencies)
    env: list[EnvSetting] = field(default_factory=list)
    commands: list[Command] = field(default_factory=list)
    images: list[ImageRef] = field(default_factory=list)
    trees: list[Node] = field(default_factory=list)  # one per YAML document / JSON / TOML file
    final_image: str | None = None  # Dockerfiles: the image the last stage derives from


def read_document(ctx: FileContext) -> Document:
    """The file's Document, built once per file by its kind's reader."""
    cached = ctx.state.get(STATE)
    if cached is None:
        kind = BY_NAME.get(ctx.kind)
        if kind is None or kind.reader is None:
            cached = Document()
        else:
            module, _, function = kind.reader.partition(":")
            cached = getattr(import_module(module), function)(ctx)
        ctx.state[STATE] = cached
    return cached

"""Cheap name resolution: which import a name refers to, with aliases and shadowing.

Full libcst scope metadata costs several times the parse; the rules only need to know whether
`th` in `th.cuda.synchronize()` is `import torch as th` or something else. Scopes are tracked
during the single walk, in source order: a binding counts from where it appears. An import keeps
its meaning when the name is later set to None or assigned inside an `except` block (the
`try: import cupy / except ImportError: cupy = None` fallback), while any other rebinding, or a
parameter or local assignment in an inner function, hides it."""

from __future__ import annotations

import libcst as cst

LOCAL = None  # a binding that is not an import: a variable, parameter, function or class


class Scope:
    __slots__ = ("kind", "parent", "names", "globals", "name")

    def __init__(self, kind: str, parent: Scope | None, name: str = "") -> None:
        self.kind = kind  # module | function | class | lambda | comprehension
        self.parent = parent
        self.name = name
        self.names: dict[str, str | None] = {}
        self.globals: set[str] = set()

    def bind(self, name: str, qualified: str | None, fallback: bool = False) -> None:
        if fallback and qualified is None and self.names.get(name) is not None:
            return  # an import-failure fallback does not change what the name means elsewhere
        self.names[name] = qualified


class Resolver:
    """The scope stack of one file."""

    def __init__(self) -> None:
        self.module = Scope("module", None)
        self.current = self.module
        self.imported: set[str] = set()  # every name bound by an import anywhere in the file
        # For fixes, which must know whether a name they write means the same everywhere in the
        # file: what each import-bound name stands for, and every name bound to anything else.
        self.import_targets: dict[str, set[str]] = {}
        self.local_names: set[str] = set()
        self.version = 0  # changes with every scope and binding: what a lookup answered may not hold after

    def push(self, kind: str, name: str = "") -> Scope:
        self.version += 1
        self.current = Scope(kind, self.current, name)
        return self.current

    def pop(self) -> None:
        assert self.current.parent is not None
        self.version += 1
        self.current = self.current.parent

    def bind(self, name: str, qualified: str | None = LOCAL, fallback: bool = False) -> None:
        """Bind `name` here; `fallback` marks `x = None` / except-block assignments."""
        self.version += 1
        scope = self.current
        if name in scope.globals:
            scope = self.module
        if qualified is not None:
            self.imported.add(name)
            self.import_targets.setdefault(name, set()).add(qualified)
        else:
            self.local_names.add(name)
        scope.bind(name, qualified, fallback)

    def declare_global(self, name: str) -> None:
        self.version += 1
        self.current.globals.add(name)

    def lookup(self, name: str) -> str | None:
        """The qualified name `name` stands for here, or None when it is not an import."""
        if name not in self.imported:
            return None  # fast path: most names never come from an import
        scope: Scope | None = self.current
        while scope is not None:
            if scope.kind == "class" and scope is not self.current:
                scope = scope.parent  # class bodies are not visible from nested functions
                continue
            if name in scope.globals:
                scope = self.module
            if name in scope.names:
                return scope.names[name]
            scope = scope.parent
        return None

    def function_name(self) -> str:
        scope: Scope | None = self.current
        while scope is not None:
            if scope.kind == "function":
                return scope.name
            scope = scope.parent
        return ""


def dotted_parts(node: cst.BaseExpression) -> list[str] | None:
    """`a.b.c` as ["a", "b", "c"]; None when the expression is not a plain dotted name."""
    parts: list[str] = []
    while isinstance(node, cst.Attribute):
        parts.append(node.attr.value)
        node = node.value
    if not isinstance(node, cst.Name):
        return None
    parts.append(node.value)
    parts.reverse()
    return parts


def dotted_name(node: cst.BaseExpression) -> str | None:
    parts = dotted_parts(node)
    return ".".join(parts) if parts else None

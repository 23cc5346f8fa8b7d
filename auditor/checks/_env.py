"""The one environment-variable matcher behind LK304, LK601 and LK602.

Which variables count, which rule owns each and what to use instead lives in rules/env.toml
(`[[env_var]]` rows). A string literal counts only where code reads or writes the environment:
a subscript (`os.environ["X"]`), the first positional argument of a call (`os.getenv("X")`,
`monkeypatch.setenv("X", ...)`), a dict-literal key, a keyword (`dict(X=...)`, `.update(X=...)`),
`"X" in os.environ`, an assignment to a name like `*_ENV_VAR` (or to a constant spelled like the
value), and, for exact names only, an element of a list/tuple/set literal (`for k in ("CUDA_HOME",
...)`). Mentions inside longer strings, comments and docstrings never do."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import libcst as cst

from auditor import targets
from auditor.catalogue import Catalogue, load_catalogue
from auditor.checks.base import Rule, shared_visit
from auditor.context import FileContext, PythonContext
from auditor.python.syntax import callee_name, is_message_call, name_of_target, positional, string_value
from auditor.readers.document import read_document

_ENV_NAME = re.compile(r"[A-Z][A-Z0-9_]*")
# Calls that read or write a variable by the name in their first argument: a parameter passed there
# makes its function a helper (`def set_env(k, v): os.environ.setdefault(k, v)`).
_ENV_CALLS = frozenset({"os.environ.setdefault", "os.environ.get", "os.environ.pop", "os.getenv", "os.putenv",
                        "os.unsetenv"})
_PARAMS, _HELPERS, _CALLS = "env:params", "env:helpers", "env:calls"  # ctx.state keys the family shares


@dataclass(frozen=True)
class EnvVar:
    """What the catalogue says about one variable (or prefix)."""

    rule: str  # kebab name of the reporting rule
    why: str
    instead: str  # rendered per-target equivalents


def render_instead(instead: dict[str, str]) -> str:
    """{"rocm": "A", "all": "B"} -> "rocm: A; elsewhere: B" (targets in the usual order)."""
    parts = [f"{target}: {instead[target]}" for target in targets.names() if target in instead]
    if "all" in instead:
        parts.append(("elsewhere: " if parts else "") + instead["all"])
    return "; ".join(parts) or "no portable equivalent"


class EnvIndex:
    """Exact names first, then the longest matching prefix. Rows marked `files_only` (broad prefixes
    such as `CUDA_`) count only where a file sets the variable outright (Dockerfile `ENV`, `export`,
    compose `environment:`), not for strings in Python code."""

    def __init__(self, rows: list[dict[str, Any]], files: bool = False) -> None:
        self.exact: dict[str, EnvVar] = {}
        self.prefixes: list[tuple[str, EnvVar]] = []
        for row in rows:
            if row.get("files_only") and not files:
                continue
            var = EnvVar(row["rule"], row.get("why", ""), render_instead(row.get("instead", {})))
            if "name" in row:
                self.exact[row["name"]] = var
            elif "prefix" in row:
                self.prefixes.append((row["prefix"], var))
        self.prefixes.sort(key=lambda item: -len(item[0]))

    def lookup(self, name: str, exact_only: bool = False) -> EnvVar | None:
        if not _ENV_NAME.fullmatch(name):
            return None
        var = self.exact.get(name)
        if var is not None or exact_only:
            return var
        for prefix, var in self.prefixes:
            if name.startswith(prefix) and len(name) > len(prefix):  # "NCCL_" alone is a prefix test
                return var
        return None


_INDEXES: dict[tuple[int, bool], tuple[dict, EnvIndex]] = {}


def env_index(catalogue: Catalogue, files: bool = False) -> EnvIndex:
    """The index for this catalogue's env table, built once (`files`: with the files-only rows)."""
    table = catalogue.table("env")
    cached = _INDEXES.get((id(table), files))
    if cached is None or cached[0] is not table:
        cached = (table, EnvIndex(table.get("env_var", []), files))
        _INDEXES[(id(table), files)] = cached
    return cached[1]


def rule_tokens(rule: str) -> tuple[str, ...]:
    """Prefilter tokens for one rule: every name and prefix it owns, lower-cased."""
    rows = load_catalogue().table("env").get("env_var", [])
    return tuple(sorted({(row.get("name") or row["prefix"]).lower() for row in rows
                         if row["rule"] == rule and not row.get("files_only")}))



# Kinds whose readers report environment settings (auditor.readers.document.Document.env).
ENV_FILE_KINDS = frozenset({"dockerfile", "shell", "notebook", "compose", "yaml"})


class EnvVarRule(Rule):
    """Base of the env-var rules. The matching runs once per node for the whole family (shared
    visits) and each variable is reported under the rule the catalogue gives it. In other kinds of
    file (Dockerfile `ENV`, `export`, compose `environment:`, `%env`) the variables the file sets
    are looked up the same way."""
    fields = frozenset({"var", "why", "instead"})

    file_kinds = frozenset({"python"}) | ENV_FILE_KINDS

    def check_file(self, ctx: FileContext) -> None:
        index = env_index(ctx.catalogue, files=True)
        for setting in read_document(ctx).env:
            # A plain shell assignment (`CUDA_MAJOR=12`) may be a mere variable: exact names only.
            var = index.lookup(setting.name, exact_only=setting.via == "assign")
            if var is not None and var.rule == self.name:
                ctx.findings.append(ctx.make_finding(
                    self, setting.line, setting.column, setting.end_line, setting.end_column,
                    {"var": setting.name, "why": var.why, "instead": var.instead}))

    subject = "`{var}`"

    def _check(self, node: cst.CSTNode, name: str | None, ctx: PythonContext, exact_only: bool = False) -> None:
        if name is None:
            return
        var = env_index(ctx.catalogue).lookup(name, exact_only)
        owner = ctx.rules_by_name.get(var.rule) if var is not None else None
        if owner is not None:  # the rule the catalogue gives this variable, when it is selected
            ctx.report(owner, node, var=name, why=var.why, instead=var.instead)

    def _literal(self, node: cst.CSTNode, ctx: PythonContext, exact_only: bool = False) -> None:
        # Every listed name contains "_": a cheap test before evaluating the literal.
        if isinstance(node, cst.SimpleString) and "_" in node.value:
            self._check(node, string_value(node), ctx, exact_only)
        elif isinstance(node, cst.ConcatenatedString):
            self._check(node, string_value(node), ctx, exact_only)
        elif isinstance(node, cst.Name):
            self._check(node, self._followed(node.value, ctx), ctx, exact_only)

    def _followed(self, name: str, ctx: PythonContext) -> str | None:
        """`key, value = "NCCL_DEBUG", "INFO"` then `os.environ[key] = value`: the one string the file
        assigns the name (so far in the walk). A name the assignment itself reports (`NCCL_ENV_VAR =
        "..."`, `NCCL_DEBUG = "NCCL_DEBUG"`) is left to it."""
        values = ctx.assigned.get(name)
        if not values or len(values) != 1 or not isinstance(values[0], (cst.SimpleString, cst.ConcatenatedString)):
            return None
        text = string_value(values[0])
        pattern = ctx.catalogue.table("env").get("env_contexts", {}).get("env_target_pattern", "env|var")
        if text is None or name.strip("_") == text or re.search(pattern, name, re.IGNORECASE):
            return None
        return text

    @shared_visit
    def visit_Subscript(self, node: cst.Subscript, ctx: PythonContext) -> None:
        if len(node.slice) == 1 and isinstance(node.slice[0].slice, cst.Index):
            index = node.slice[0].slice.value
            self._literal(index, ctx)
            if isinstance(index, cst.Name) and ctx.qualify(node.value) == "os.environ":
                self._helper(index.value, ctx)

    # -- small helpers that set or read a variable by name: `def set_env(k, v): os.environ[k] = v` --
    @shared_visit
    def visit_FunctionDef(self, node: cst.FunctionDef, ctx: PythonContext) -> None:
        params = [p.name.value for p in (*node.params.posonly_params, *node.params.params)]
        ctx.state.setdefault(_PARAMS, {})[node.name.value] = params

    def _helper(self, name: str, ctx: PythonContext) -> None:
        """The environment is read or written by the parameter `name` of the function being walked:
        that function is a helper whose callers pass the variable's name."""
        function = ctx.function_name
        params = ctx.state.get(_PARAMS, {}).get(function) if function else None
        if params and name in params and ctx.resolver.lookup(name) is None:
            ctx.state.setdefault(_HELPERS, {})[function] = (params, name)

    def _pending(self, node: cst.Call, ctx: PythonContext) -> None:
        """String arguments after the first that name a listed variable: reported if the callee
        turns out to be one of the file's helpers (it may be defined below the call)."""
        index = env_index(ctx.catalogue)
        position = 0
        for arg in node.args:
            value = arg.value
            if arg.keyword is None and arg.star == "":
                position += 1
            if not isinstance(value, cst.SimpleString) or "_" not in value.value or (arg.keyword is None and position == 1):
                continue
            text = string_value(value)
            if text is not None and index.lookup(text) is not None:
                where = arg.keyword.value if arg.keyword is not None else position - 1
                ctx.state.setdefault(_CALLS, []).append((node, where, value, text))

    def finish(self, ctx: PythonContext) -> None:
        calls = ctx.state.pop(_CALLS, None)  # once for the family: the first rule to finish takes them
        helpers = ctx.state.get(_HELPERS)
        if not calls or not helpers:
            return
        for call, where, value, text in calls:
            found = helpers.get(callee_name(call) or "")
            if found is None:
                continue
            params, name = found
            method = isinstance(call.func, cst.Attribute) and params[:1] in (["self"], ["cls"])
            position = params.index(name) - (1 if method else 0)
            if where == name or where == position:
                self._check(value, text, ctx)

    @shared_visit
    def visit_Call(self, node: cst.Call, ctx: PythonContext) -> None:
        if is_message_call(node, ctx.catalogue):
            return
        first = positional(node, 0)
        ignored = ctx.catalogue.table("env").get("env_contexts", {}).get("not_lookup_callees", ())
        if first is not None and callee_name(node) not in ignored:
            self._literal(first.value, ctx)
            if isinstance(first.value, cst.Name) and ctx.qualify(node.func) in _ENV_CALLS:
                self._helper(first.value.value, ctx)
        if len(node.args) > 1 or (node.args and node.args[0].keyword is not None):
            self._pending(node, ctx)
        for arg in node.args:
            if arg.keyword is not None:
                self._check(arg.keyword, arg.keyword.value, ctx)

    @shared_visit
    def visit_Dict(self, node: cst.Dict, ctx: PythonContext) -> None:
        for element in node.elements:
            if isinstance(element, cst.DictElement):
                self._literal(element.key, ctx)

    @shared_visit
    def visit_Comparison(self, node: cst.Comparison, ctx: PythonContext) -> None:
        if node.comparisons and isinstance(node.comparisons[0].operator, (cst.In, cst.NotIn)):
            self._literal(node.left, ctx)

    def _assigned(self, target: cst.CSTNode, value: cst.BaseExpression | None, ctx: PythonContext) -> None:
        name = name_of_target(target) if value is not None else None
        if name is None:
            return
        pattern = ctx.catalogue.table("env").get("env_contexts", {}).get("env_target_pattern", "env|var")
        values = [value.body, value.orelse] if isinstance(value, cst.IfExp) else [value]
        for item in values:
            text = string_value(item)
            if text is not None and (re.search(pattern, name, re.IGNORECASE) or name.strip("_") == text):
                self._check(item, text, ctx)

    @shared_visit
    def visit_Assign(self, node: cst.Assign, ctx: PythonContext) -> None:
        for target in node.targets:
            self._assigned(target.target, node.value, ctx)

    @shared_visit
    def visit_AnnAssign(self, node: cst.AnnAssign, ctx: PythonContext) -> None:
        self._assigned(node.target, node.value, ctx)

    def _elements(self, node: cst.List | cst.Tuple | cst.Set, ctx: PythonContext) -> None:
        # Lists of variables to forward, clear or check; exact names only, as a list of
        # NCCL_* words is as likely to be a list of algorithm or backend names.
        for element in node.elements:
            self._literal(element.value, ctx, exact_only=True)

    @shared_visit
    def visit_List(self, node: cst.List, ctx: PythonContext) -> None:
        self._elements(node, ctx)

    @shared_visit
    def visit_Tuple(self, node: cst.Tuple, ctx: PythonContext) -> None:
        self._elements(node, ctx)

    @shared_visit
    def visit_Set(self, node: cst.Set, ctx: PythonContext) -> None:
        self._elements(node, ctx)

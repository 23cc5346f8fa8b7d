"""The contexts of one reported node, read from the nodes around it.

The positions pass (auditor/python/positions.py) hands each reported node its enclosing nodes. Going
from the node outwards, each one may narrow where the node runs:

- the body of an `if` (its test holds), its `else` / `elif` (the test does not), an `IfExp`
  branch, the right side of `and` / `or`;
- a statement after `if not torch.cuda.is_available(): return` (or a test skip) in the same block,
  a test under `@pytest.mark.skipif(...)` / `@unittest.skipUnless(...)` / `@require_torch_gpu`,
  a module with `pytestmark = pytest.mark.skipif(...)` or `pytest.importorskip(...)`;
- the body of a `try` whose `except` falls back instead of re-raising (optional);
- the arguments of a message call (print, logging, an exception), a `package_data=` value, an
  environment-report function (display);
- the branches beside it in an if/elif chain: a sibling for XPU or MPS serves that target.

Only files with findings pay for this, and only for the nodes around their findings."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import libcst as cst

from auditor import targets
from auditor.analysis.guards import NAME_PARTS, UNKNOWN, Judge, Truth
from auditor.analysis.project import NO_FACTS, BackendModule, FileFacts, devices_beside, name_tokens
from auditor.analysis.project import config as project_config
from auditor.analysis.seeds import redundant_seeding
from auditor.analysis.uses import ModuleUses
from auditor.analysis.versions import TorchVersions
from auditor.catalogue import Catalogue
from auditor.python.names import dotted_name, dotted_parts
from auditor.python.syntax import callee_name, is_message_call, name_of_target, string_value
from auditor.python.tree import child_nodes, descendants

if TYPE_CHECKING:
    from auditor.checks.base import Rule
    from auditor.context import PythonContext
    from auditor.python.positions import Placed

_BODY_NODES = 600  # a sibling branch is searched this far for another backend's API
_SHORT = 70


@dataclass
class Where:
    """Where one finding stands; turned into contexts, effects and a message by analysis.apply."""

    condition: Truth = UNKNOWN  # what must hold for the node to run, per platform
    guard: str | None = None  # the innermost test that narrows the platforms
    guard_line: int | None = None
    covered: set[str] = field(default_factory=set)  # targets served by a later sibling branch
    served_before: set[str] = field(default_factory=set)  # targets an earlier branch takes first
    optional: str | None = None  # the optional import / fast-path test or try
    optional_line: int | None = None
    optional_kind: str = "code"  # "dependency": declared in an extra or dependency group
    display: str | None = None  # how it is only displayed or recorded
    shipped: bool = False  # a file name in a list of files to ship: nothing runs on it at all
    siblings: set[str] = field(default_factory=set)  # in the test of a chain: targets other branches serve
    seeder: tuple[str, str, int | None] | None = None  # (seeding call, seed, line) for redundant
    own: str | None = None  # the project's own package it names
    backend: BackendModule | None = None
    test: bool = False
    demo: bool = False  # in the `if __name__ == "__main__":` block of a package module
    # `if cupy is None: raise ...` before it in its block: (the test, its line); no fallback runs
    required: tuple[str, int | None] | None = None
    kinds: set[str] = field(default_factory=set)  # the kinds of the guards that narrow it (guards.py)
    feature: str | None = None  # the function an opt-in NVIDIA-only feature lives in
    feature_line: int | None = None
    runtime: str | None = None  # the runtime only that function imports
    feature_kind: str = "function"  # "choice": the branch of a choice by name (`elif ENGINE == "triton":`)
    # the node decides a branch: in the test of an if, a ternary or a while, or the whole value
    # of a name (`has_gpu = torch.cuda.is_available()`): an availability check there is the guard
    check: bool = False

    @classmethod
    def of_file(cls, facts: FileFacts, display_file: bool = False, integration: str | None = None) -> Where:
        where = cls(backend=facts.backend, test=facts.test,
                    display="in an environment report" if display_file else None)
        if integration is not None:
            where.optional, where.optional_kind = integration, "integration"
        if facts.experimental and not facts.test:  # a module of an opt-in folder: the user picks it by name
            where.feature, where.feature_kind = facts.experimental, facts.opt_in_kind
        return where


def _is_main(test: cst.BaseExpression) -> bool:
    """`__name__ == "__main__"` (either way round)."""
    if not isinstance(test, cst.Comparison) or len(test.comparisons) != 1 \
            or not isinstance(test.comparisons[0].operator, cst.Equal):
        return False
    sides = (test.left, test.comparisons[0].comparator)
    return any(isinstance(s, cst.Name) and s.value == "__name__" for s in sides) \
        and any(string_value(s) == "__main__" for s in sides)

def _and_terms(test: cst.BaseExpression) -> list[cst.BaseExpression]:
    """The terms of an `and` chain (the test itself when it is none)."""
    if isinstance(test, cst.BooleanOperation) and isinstance(test.operator, cst.And):
        return [*_and_terms(test.left), *_and_terms(test.right)]
    return [test]


_STRINGS = (cst.SimpleString, cst.ConcatenatedString, cst.FormattedString)


def _single_assignment(statement: cst.CSTNode) -> tuple[str, cst.BaseExpression] | None:
    """(name, value) when `statement` is one assignment of a value to a plain name (`x = v`, `x: T = v`)."""
    if not isinstance(statement, cst.SimpleStatementLine) or len(statement.body) != 1:
        return None
    small = statement.body[0]
    if isinstance(small, cst.Assign) and len(small.targets) == 1:
        target = small.targets[0].target
    elif isinstance(small, cst.AnnAssign) and small.value is not None:
        target = small.target
    else:
        return None
    return (target.value, small.value) if isinstance(target, cst.Name) else None


def _assigned_value(statement: cst.CSTNode, name: str) -> cst.BaseExpression | None:
    """The value of `name = value` when `statement` is that one assignment."""
    found = _single_assignment(statement)
    return found[1] if found is not None and found[0] == name else None


def _literal_assignment(statement: cst.CSTNode, node: cst.CSTNode) -> str | None:
    """The name `statement` assigns when its whole value is the string literal `node` (`backend = "nccl"`)."""
    found = _single_assignment(statement) if isinstance(node, _STRINGS) else None
    return found[0] if found is not None and found[1] is node else None


def _is_exec(statement: cst.CSTNode) -> bool:
    """`exec(open('configurator.py').read())`: one argument, run in the module's own globals."""
    if not isinstance(statement, cst.SimpleStatementLine) or len(statement.body) != 1:
        return False
    small = statement.body[0]
    call = small.value if isinstance(small, cst.Expr) else None
    return isinstance(call, cst.Call) and isinstance(call.func, cst.Name) and call.func.value == "exec" \
        and len(call.args) == 1


_MISSING_API = frozenset({"AttributeError", "TypeError", "ImportError", "ModuleNotFoundError", "NotImplementedError"})
_CUDA_WORDS = re.compile(r"(?i)cuda|nccl|nvidia|cudnn|\bnv\w")


def _missing_api(caught: cst.BaseExpression | None) -> bool:
    """An except clause that catches only errors of an API that is not there (never a bare `except`)."""
    names = [e.value for e in caught.elements] if isinstance(caught, cst.Tuple) else [caught]
    return caught is not None and bool(names) and all(
        isinstance(n, cst.Name) and n.value in _MISSING_API for n in names)


def _try_text(code: str) -> str:
    first = code.strip().splitlines()[0].strip() if code.strip() else ""
    return f"try: {first[:_SHORT]}"


def bound_names(node: cst.Import | cst.ImportFrom) -> frozenset[str]:
    """The names an import statement binds (`import cupy as cp` -> cp, `from x import a` -> a)."""
    if isinstance(node.names, cst.ImportStar):
        return frozenset()
    found = set()
    for alias in node.names:
        if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
            found.add(alias.asname.name.value)
        else:
            name = dotted_name(alias.name) or ""
            found.add(name.split(".", 1)[0] if isinstance(node, cst.Import) else name)
    return frozenset(found)


def _names_in(test: cst.BaseExpression) -> set[str]:
    return {n.value for n in descendants(test) if isinstance(n, cst.Name)}


def _caller_chooses(where: Where, default: str, line: int | None, kind: str) -> None:
    """A default its callers replace (`load(device=...)`): optional, guarded like an option."""
    where.optional, where.optional_line, where.optional_kind = default, line, kind
    where.kinds.add("option")


def _is_dataclass(definition: cst.ClassDef) -> bool:
    """`@dataclass`, `@dataclasses.dataclass(frozen=True)`, attrs' `@define` / `@attr.s`: a class
    whose annotated fields are its constructor's parameters."""
    for decorator in definition.decorators:
        target = decorator.decorator.func if isinstance(decorator.decorator, cst.Call) else decorator.decorator
        name = target.attr.value if isinstance(target, cst.Attribute) else getattr(target, "value", None)
        if name in ("dataclass", "define", "frozen", "mutable", "s", "attrs"):
            return True
    return False


def _is_literal(node: cst.BaseExpression) -> bool:
    """A value written out in the code: a string, a number, `None`/`True`/`False`, a literal collection."""
    if isinstance(node, cst.Name):
        return node.value in ("None", "True", "False")
    return isinstance(node, (cst.SimpleString, cst.ConcatenatedString, cst.FormattedString, cst.Integer, cst.Float,
                             cst.List, cst.Tuple, cst.Dict, cst.Set))


_NAME_VALUE = re.compile(r"[A-Za-z][\w.-]+")


def _lazy_import(body: cst.BaseSuite) -> str | None:
    """The first module a branch's own statements import (`from .rocm import x` -> ".rocm")."""
    for statement in getattr(body, "body", ()):
        if not isinstance(statement, cst.SimpleStatementLine):
            continue
        for small in statement.body:
            if isinstance(small, cst.Import):
                return dotted_name(small.names[0].name)
            if isinstance(small, cst.ImportFrom):
                module = dotted_name(small.module) if small.module is not None else ""
                return "." * len(small.relative) + (module or "")
    return None


def _branch_runtime(body: cst.BaseSuite, lazy: frozenset[str]) -> str | None:
    """The lazily imported runtime a branch's own statements import (`import bitsandbytes as bnb`)."""
    for statement in getattr(body, "body", ()):
        for small in getattr(statement, "body", ()) if isinstance(statement, cst.SimpleStatementLine) else ():
            if isinstance(small, cst.Import):
                names = [dotted_name(alias.name) for alias in small.names]
            elif isinstance(small, cst.ImportFrom) and not small.relative and small.module is not None:
                names = [dotted_name(small.module)]
            else:
                continue
            found = next((n.split(".", 1)[0] for n in names if n and n.split(".", 1)[0] in lazy), None)
            if found is not None:
                return found
    return None


def _required_runtime(function: cst.FunctionDef, lazy: frozenset[str], opt_in: frozenset[str]) -> str | None:
    """The runtime a function says it cannot run without, in its own top statements: `if
    is_bnb_available(): import bitsandbytes as bnb` whose `else` raises (peft's `loftq_init`), or a
    plain import of a library whose use is an opt-in (`opt_in`: `import bitsandbytes as bnb`). Any
    other plain lazy import may only defer the import's cost (a dispatcher's `send` importing
    deep_ep on the main path): only the runtime's own uses are its feature then. An import whose
    `else` goes on is no requirement."""
    for statement in getattr(function.body, "body", ()):
        found = None
        if isinstance(statement, cst.If) and isinstance(statement.orelse, cst.Else) and _raises(statement.orelse.body):
            found = _branch_runtime(statement.body, lazy)
        elif isinstance(statement, cst.SimpleStatementLine) and opt_in:
            found = _branch_runtime(cst.IndentedBlock(body=[statement]), lazy & opt_in)
        if found is not None:
            return found
    return None


_CONTAINERS = frozenset({"dict", "list", "tuple", "set"})


def _inert(value: cst.BaseExpression) -> bool:
    """Whether building the value runs nothing: literals, containers of them, `dict(...)` of them."""
    return all(not isinstance(node, cst.Call) or (isinstance(node.func, cst.Name) and node.func.value in _CONTAINERS)
               for node in (value, *descendants(value)))


def _opt_in_beyond_cuda(truth: Truth) -> bool:
    """Whether the test is a user's option (not a check of what is there) that may be on where CUDA
    calls are not accepted: a GPU flag (`use_gpu`, `gpu_offload`) on MPS or XPU."""
    if truth.kinds != _OPTION or truth.available or not truth.excludes:
        return False
    return any(truth.may_hold(target) for target in targets.names()
               if not targets.has_role(target, "accepts-cuda-calls"))


_OPTION = frozenset(("option",))


def _raises(block: cst.BaseSuite) -> bool:
    statements = getattr(block, "body", ())
    last = statements[-1] if statements else None
    return isinstance(last, cst.SimpleStatementLine) and any(isinstance(small, cst.Raise) for small in last.body)


_RUNTIMES: dict[int, tuple[Catalogue, tuple[str, ...]]] = {}


def feature_runtimes(catalogue: Catalogue) -> tuple[str, ...]:
    """The runtimes a function makes an opt-in feature by importing them (rules/contexts.toml
    [feature]): the listed ones and the top-level modules of the libraries `runtime_rules` report."""
    cached = _RUNTIMES.get(id(catalogue))
    if cached is not None and cached[0] is catalogue:
        return cached[1]
    table = catalogue.table("contexts").get("feature", {})
    rules = frozenset(table.get("runtime_rules", ()))
    libraries = {entry.name.split(".", 1)[0] for entry in (*catalogue.apis.values(), *catalogue.api_prefixes.values())
                 if entry.rule in rules}
    names = tuple(dict.fromkeys([*table.get("runtimes", ()), *sorted(libraries - {"torch"})]))
    _RUNTIMES[id(catalogue)] = (catalogue, names)
    return names


def lazy_runtimes(text: str, runtimes: list[str] | tuple[str, ...]) -> frozenset[str]:
    """The NVIDIA-only runtimes (rules/contexts.toml [feature]) a file imports, but only indented:
    inside a function or a block, never at its top (a top-level import is the main path's)."""
    lazy = set()
    for name in runtimes:
        if name not in text:
            continue  # the common case: no regex to build
        imports = re.findall(rf"^([ \t]*)(?:import|from)[ \t]+{re.escape(name)}\b", text, re.MULTILINE)
        if imports and "" not in imports:
            lazy.add(name)
    return frozenset(lazy)


def integration_package(path: str, text: str, contexts: dict, facts: FileFacts) -> str | None:
    """The optional package a module is named after and integrates (rules/contexts.toml
    [integration]): `megatron_lm.py` testing `is_megatron_lm_available()`, `transformer_engine.py`
    importing transformer_engine only inside functions or under a test. None for any other module."""
    stem = path.rpartition("/")[2].partition(".")[0].lstrip("_").lower()
    if not stem or stem in facts.own or stem in contexts.get("integration", {}).get("exclude", ()):
        return None
    if stem in contexts.get("guards", {}).get("words", {}):
        return None  # cuda.py, xpu.py: a backend module, not an integration
    if stem not in text:
        return None  # neither imported nor tested for (the common case: no regex to build)
    imports = re.findall(rf"^([ \t]*)(?:import|from)[ \t]+{re.escape(stem)}\b", text, re.MULTILINE)
    if "" in imports:
        return None  # imported at the module's top: a hard dependency of the module
    if f"is_{stem}_available" in text:
        return stem
    # Outside a package, `import stem` in stem.py names the module itself (a usage example).
    return stem if imports and facts.package else None


class Placer:
    """Reads the contexts of the reported nodes of one file."""

    def __init__(self, ctx: PythonContext, placed: Placed) -> None:
        self.ctx = ctx
        self.placed = placed
        self.judge = Judge(ctx)
        self.facts: FileFacts = getattr(ctx, "facts", None) or NO_FACTS
        table = ctx.catalogue.table("contexts")
        self.versions = TorchVersions(table.get("torch_versions", {}), ctx.qualify)
        self._diagnostic_words = frozenset(table.get("guards", {}).get("options", {}).get("diagnostic", ()))
        display = table.get("display", {})
        self.display_keywords = frozenset(display.get("keywords", ()))
        self.display_functions = re.compile(display.get("functions", r"$^"))
        self.display_file = bool(re.search(display.get("files", r"$^"), ctx.path))
        self.integration = integration_package(ctx.path, ctx.text, table, self.facts)
        self.lazy = lazy_runtimes(ctx.text, feature_runtimes(ctx.catalogue))
        # the NVIDIA-only runtimes listed by name make their whole function a feature; a library the
        # catalogue's rows name makes only its own uses one (a flash_attn call beside other code)
        self._whole = frozenset(table.get("feature", {}).get("runtimes", ()))
        self._opt_in = frozenset(table.get("feature", {}).get("opt_in", ()))  # see _required_runtime
        redundant = table.get("redundant", {})
        self.seed_rules = frozenset(redundant.get("rules", ()))
        self.seeders = frozenset(redundant.get("seeders", ()))
        self.option_calls = frozenset(table.get("guards", {}).get("options", {}).get("calls", ()))
        self.config_lookups = frozenset(table.get("guards", {}).get("options", {}).get("lookups", ()))
        self.features: dict[str, tuple[str, ...]] = {
            name: tuple(words) for name, words in table.get("guards", {}).get("features", {}).items()}
        self._words: tuple[str, ...] = ()  # the feature words of the rule being placed
        self._exits: dict[int, list[tuple[int, Truth, cst.CSTNode, bool]]] = {}
        self._requirements: dict[int, list[tuple[int, str, int | None]]] = {}
        self._chains: dict[tuple[int, int], tuple[set[str], set[str]]] = {}
        self._decorators: dict[int, tuple[Truth | None, tuple | None, tuple | None]] = {}
        self._runs: dict[int, int] = {}  # see _left_run
        self._feature_imports: dict[tuple[int, str], bool] = {}  # see _imports_in
        self._required_runtimes: dict[int, str | None] = {}  # see _requires
        self.uses = ModuleUses(ctx.module, ctx.text, placed.line, self.judge.fallback)  # walked on demand
        self._fallbacks: dict[int, tuple] = {}  # a function's id -> (the fallback try's line,), or ()
        self._registries: dict[int, str | None] = {}  # a definition's id -> its registry key, or None
        self._device_methods: dict[int, BackendModule | None] = {}  # a function's id -> what _device_method found
        self._self_registries: dict[int, tuple[str, int | None] | None] = {}  # a class's id -> (its key, line)
        self._default_keys = frozenset(table.get("feature", {}).get("registry", {}).get("default_keys", ()))
        self._main_functions = frozenset(("", *table.get("feature", {}).get("main_path", ())))  # "": the module's top
        self._entry_points = self._main_functions | frozenset(table.get("feature", {}).get("entry_points", ()))
        self._execs: list[int] | None = None  # the module's top-level `exec(...)` statements (_config_default)
        # function -> the tests its calls sit under and what they say together (_called_under_guards)
        self._guarded_calls: dict[int, tuple[list[cst.BaseExpression], Truth]] = {}
        self._choices: dict[int, tuple] = {}  # an if's id -> (the name it picks, the module it imports) or ()
        self._module_requirements: list | None = None  # every `if x is None: raise` of the module (_raised_without)

    # -- entry ---------------------------------------------------------------------------------------
    def where(self, rule: Rule, node: cst.CSTNode, fields: dict[str, Any]) -> Where:
        where = Where.of_file(self.facts, self.display_file, self.integration)
        self._words = self.features.get(rule.name, ())
        ancestors = self.placed.ancestors.get(id(node), ())
        functions: list[cst.FunctionDef] = []  # the enclosing functions, innermost first: a feature's home
        default: cst.Param | None = None  # the parameter whose default the node is
        owner: cst.ClassDef | None = None  # the class whose method the innermost function is
        field: tuple[cst.ClassDef, str] | None = None  # the dataclass field whose default the node is
        child = node
        index = len(ancestors)
        while index > 0:
            index -= 1
            parent = ancestors[index]
            kind = type(parent)
            if kind is cst.BooleanOperation and child is parent.left:
                index = self._left_run(ancestors, index)  # the `and`/`or` above say nothing about it
                child = ancestors[index]
                continue
            if kind in (cst.If, cst.IfExp, cst.While) and child is parent.test:
                where.check = True
            elif kind is cst.Assign and child is parent.value and child is node:
                where.check = True
            if kind is cst.If:
                self._if(where, parent, child, ancestors, index)
                if child is parent.body and where.feature is None:
                    self._choice(where, parent)
            elif kind is cst.IfExp:
                self._ifexp(where, parent, child)
            elif kind is cst.BooleanOperation and child is parent.right:
                left = self.judge.truth(parent.left)
                if isinstance(parent.operator, cst.Or):
                    self._narrow(where, ~left, parent.left, negated=True)
                    if not left.says and where.optional is None:
                        self._or_default(where, parent)
                else:
                    self._narrow(where, left, parent.left)
            elif kind in (cst.IndentedBlock, cst.Module):
                if kind is cst.Module and where.optional is None:
                    self._config_default(where, parent, child, node, ancestors, index)
                if where.optional is None:
                    self._replaced_default(where, parent, child, node)
                self._after_exits(where, parent, child)
                if where.required is None:
                    self._required(where, parent, child)
            elif kind is cst.ExceptHandler and where.optional is None and index > 0:
                self._legacy_handler(where, parent, ancestors[index - 1])
            elif kind in (cst.Try, cst.TryStar) and child is parent.body and self.judge.fallback(parent):
                if where.optional is None:
                    where.optional, where.optional_line = "try/except", self.placed.line(parent)
                    where.kinds.add("fallback")
                    if where.required is None and isinstance(node, (cst.Import, cst.ImportFrom)):
                        where.required = self._raised_without(node)
            elif kind in (cst.FunctionDef, cst.ClassDef):
                if kind is cst.FunctionDef:
                    functions.append(parent)
                    if len(functions) == 1 and index > 1 and isinstance(ancestors[index - 2], cst.ClassDef):
                        owner = ancestors[index - 2]
                    if where.backend is None and index > 0:
                        where.backend = self._device_method(parent, ancestors[index - 1], ancestors[index - 2] if index > 1 else None)
                if not isinstance(child, cst.Decorator):  # a decorator runs where it is written, not under itself
                    self._decorated(where, parent)
                if kind is cst.FunctionDef and where.display is None and self.display_functions.match(parent.name.value):
                    where.display = f"in `{parent.name.value}()`, an environment report"
            elif kind is cst.Call and where.display is None and isinstance(child, cst.Arg) \
                    and is_message_call(parent, self.ctx.catalogue):
                where.display = f"in a `{callee_name(parent)}(...)` message"
            elif kind is cst.Arg and where.display is None and parent.keyword is not None \
                    and parent.keyword.value in self.display_keywords:
                where.display, where.shipped = f"in `{parent.keyword.value}=`, a list of files to ship", True
            elif kind is cst.Arg and index > 0 and where.optional is None:
                self._option_default(where, parent, ancestors[index - 1])
                if where.optional is None:
                    self._lookup_default(where, parent, ancestors[index - 1])
            elif kind is cst.Param and child is parent.default:
                default = parent
            elif kind is cst.AnnAssign and child is parent.value and index > 2 and not functions \
                    and isinstance(ancestors[index - 3], cst.ClassDef) and isinstance(parent.target, cst.Name) \
                    and _is_dataclass(ancestors[index - 3]):
                field = (ancestors[index - 3], parent.target.value)
            child = parent
        if where.feature is None and len(ancestors) > 1 and isinstance(ancestors[1], (cst.ClassDef, cst.FunctionDef)):
            self._registered(where, ancestors[1])
        self._own(where, node, fields)
        if functions and where.optional is None and where.required is None:
            self._called_under_fallback(where, functions[-1])
        if functions:
            self._called_under_guards(where, functions[-1])
        if self.lazy and functions and where.feature is None:  # the innermost (a choice by name) names it
            self._feature(where, functions, fields, node)
            if where.feature is None and where.optional is None:
                self._branch_feature(where, functions[0], ancestors)
        if where.feature is None and where.optional is None:  # a feature's signature is the feature's
            if default is not None and functions:
                self._overridden_default(where, functions, default, owner)
            elif field is not None:
                self._field_default(where, *field)
        if rule.name in self.seed_rules:
            self._redundant(where, node, ancestors)
        return where

    def _option_default(self, where: Where, arg: cst.Arg, call: cst.CSTNode) -> None:
        """`parser.add_argument("--device", default="cuda")`: the value a user overrides on the command
        line (`--device cpu`); other targets lose the default, not the program."""
        if arg.keyword is None or arg.keyword.value != "default" or not isinstance(call, cst.Call) \
                or callee_name(call) not in self.option_calls:
            return
        flags = [text for a in call.args if a.keyword is None
                 for text in (string_value(a.value),) if text is not None and text.startswith("-")]
        if flags:
            where.optional, where.optional_line, where.optional_kind = flags[-1], self.placed.line(call), "default"
            where.kinds.add("option")

    def _called_under_fallback(self, where: Where, function: cst.FunctionDef) -> None:
        """`def dtw_cuda(x): ...` that the module calls only inside `try: return dtw_cuda(x)` with an
        `except` that falls back (whisper's timing.py): the function is that fallback's fast path."""
        found = self._fallbacks.get(id(function))
        if found is None:
            found = self._fallbacks[id(function)] = self.uses.fallback_line(function)
        if found:
            where.optional, where.optional_line = f"try/except around {function.name.value}()", found[0]
            where.kinds.add("fallback")

    def _called_under_guards(self, where: Where, function: cst.FunctionDef) -> None:
        """`def _pin(rank): torch.cuda.set_device(rank)` that the module calls only under `if
        torch.cuda.is_available():` (or an option, a profiling flag): the function runs where one of
        those tests holds, as if its body sat under them. Only a private function or method
        (`self._gather(w)` under `if is_deepspeed_zero3_enabled():`), or any module-level function of
        a script: a public one may have callers elsewhere."""
        name = function.name.value
        public = not name.startswith("_") and (self.facts.package or not self.uses.top_level(function))
        if name.startswith("__") or public:
            return
        found = self._guarded_calls.get(id(function))
        if found is None:
            tests = self.uses.call_guards(function)
            truth = self.judge.truth(tests[0]) if tests else UNKNOWN
            for test in tests[1:]:
                truth = truth | self.judge.truth(test)
            found = self._guarded_calls[id(function)] = (tests, truth)  # once per function, not per finding
        tests, truth = found
        if not tests:
            return
        if len(tests) == 1:
            self._diagnostic(where, tests[0])
        self._narrow(where, truth, tests[0])

    def _overridden_default(self, where: Where, functions: list[cst.FunctionDef], param: cst.Param,
                            owner: cst.ClassDef | None) -> None:
        """`def load(path, device="cuda")` that every call in its module passes `device` to: like an
        option's default, only the default is NVIDIA-only; callers elsewhere may still rely on it, so
        it degrades rather than works. A name used other than in a call (a callback, a registry) or a
        call with `*args`/`**kwargs` may leave it to the default. So is a parameter of a package's
        public function or method that its module never names: the package's API, whose callers
        pass the device (a call in the module that leaves it out shows the default is relied on)."""
        function = functions[0]
        reliance = self.uses.default_reliance(function, param, owner)
        name = f"{function.name.value}({param.name.value}=...)"
        if function.name.value == "__init__" and owner is not None:
            name = f"{owner.name.value}({param.name.value}=...)"
        if reliance == "passed":
            _caller_chooses(where, name, self._def_line(function), "param")
        elif reliance == "unnamed" and len(functions) == 1 and (self._public(function, owner)
                                                                or self._hook(function, owner)):
            _caller_chooses(where, name, self._def_line(function), "api")

    def _legacy_handler(self, where: Where, handler: cst.ExceptHandler, statement: cst.CSTNode) -> None:
        """`try: torch.get_autocast_dtype(device) except (AttributeError, TypeError): ... assert device
        == 'cuda'` (timm): the handler catches only a missing API, and the try's own code ties
        nothing to CUDA, so the CUDA code runs only on an older PyTorch that lacks that API."""
        if not isinstance(statement, (cst.Try, cst.TryStar)) or not _missing_api(handler.type):
            return
        body = self._source(statement.body)  # sliced from the text, not generated again per finding
        if "(" not in body or _CUDA_WORDS.search(body):
            return
        where.optional, where.optional_line, where.optional_kind = _try_text(body), self.placed.line(statement), "legacy"
        where.kinds.add("fallback")

    def _field_default(self, where: Where, owner: cst.ClassDef, field: str) -> None:
        """`backend: str = "nccl"` in a `@dataclass`: the default of its constructor's parameter,
        judged as one (`_overridden_default`)."""
        reliance = self.uses.field_reliance(owner, field)
        if reliance == "passed" or (reliance == "unnamed" and self._public(None, owner)):
            _caller_chooses(where, f"{owner.name.value}({field}=...)", self._def_line(owner),
                            "param" if reliance == "passed" else "api")

    def _hook(self, function: cst.FunctionDef, owner: cst.ClassDef | None) -> bool:
        """`def _setup_distributed(self, launcher, backend="nccl")` in a public subclass whose module never
        calls it: a hook its base class (elsewhere in the package) calls, with the caller's values."""
        name = function.name.value
        return (owner is not None and bool(owner.bases) and name.startswith("_") and not name.startswith("__")
                and self._public(None, owner))

    def _public(self, function: cst.FunctionDef | None, owner: cst.ClassDef | None) -> bool:
        """A function or method other code imports and calls: in a package, not a test, named
        without a leading underscore (`__init__` is the class's), and not a program's entry point."""
        if not self.facts.package or self.facts.test:
            return False
        if owner is not None and (owner.name.value.startswith("_") or not self.uses.top_level(owner)):
            return False
        if function is None:
            return True
        name = function.name.value
        if owner is None and not self.uses.top_level(function):
            return False
        return (name == "__init__" or not name.startswith("_")) and name not in self._entry_points

    def _config_default(self, where: Where, module: cst.Module, statement: cst.CSTNode, node: cst.CSTNode,
                        ancestors: tuple, index: int) -> None:
        """`device = 'cuda'` at a script's top, then `exec(open('configurator.py').read())` (nanoGPT):
        the exec runs in the module's globals, so a config file or the command line may replace every
        setting above it; the value is a default, like an option's."""
        if self._execs is None:
            self._execs = [i for i, s in enumerate(module.body) if _is_exec(s)]
        found = _single_assignment(statement) if self._execs else None
        if found is None:
            return
        if not isinstance(node, _STRINGS):
            return  # a setting's value written out (`device = 'cuda'`), not a call computing it
        name, value = found
        in_value = node is value or (index + 3 < len(ancestors) and ancestors[index + 3] is value)
        position = self.uses.position(statement)
        later = [i for i in self._execs if position is not None and i > position]
        if in_value and later:
            where.optional, where.optional_kind = name, "config"
            where.optional_line = self.placed.line(module.body[later[0]])
            where.kinds.add("option")

    def _replaced_default(self, where: Where, block: cst.CSTNode, statement: cst.CSTNode, node: cst.CSTNode) -> None:
        """`backend = "nccl"`, then `if device_type in backend_map: backend = backend_map[device_type]`
        (torchtune), or `device = "cuda"` then `if args.cpu: device = "cpu"`: the literal is a default
        that an `if` further down the same block replaces with a value that names no CUDA device."""
        name = _literal_assignment(statement, node)
        if name is None:
            return
        position = next((i for i, s in enumerate(block.body) if s is statement), None)
        for later in block.body[position + 1:] if position is not None else ():
            if isinstance(later, cst.If) and self._replaces(later, name):
                where.optional, where.optional_line, where.optional_kind = self._text(later.test), self.placed.line(later), "replaced"
                where.kinds.add("option")
                return

    def _replaces(self, chain: cst.If, name: str) -> bool:
        """A branch of the chain assigns `name` a value other than a CUDA literal."""
        branch: cst.If | cst.Else | None = chain
        while branch is not None:
            for statement in branch.body.body:
                value = _assigned_value(statement, name)
                if value is not None and not _CUDA_WORDS.search(self._source(value)):  # "cpu", a lookup; not f"cuda:{rank}"
                    return True
            branch = branch.orelse if isinstance(branch, cst.If) else None
        return False

    def _lookup_default(self, where: Where, arg: cst.Arg, call: cst.CSTNode) -> None:
        """`cfg.get("env_cfg", dict(dist_cfg=dict(backend="nccl")))`, `kwargs.get("device", "cuda")`:
        the fallback of a setting the run's config or its caller gives (the receiver is named for a
        config: rules/contexts.toml [guards.options] `lookups`); only the fallback is NVIDIA-only. Not
        a lookup in another mapping (`DEVICES.get(name, "cuda")`: its default is what runs)."""
        if not isinstance(call, cst.Call) or not isinstance(call.func, cst.Attribute) or call.func.attr.value != "get" \
                or len(call.args) < 2 or call.args[1] is not arg or arg.keyword is not None:
            return
        receiver = call.func.value
        last = receiver.attr.value if isinstance(receiver, cst.Attribute) else getattr(receiver, "value", None)
        if not isinstance(last, str) or last.lstrip("_").lower() not in self.config_lookups:
            return
        key = string_value(call.args[0].value)
        if key is None or not _inert(arg.value):
            return  # `kwargs.get("device", torch.cuda.current_device())` calls CUDA before the lookup
        where.optional = f"{self._text(receiver)}.get({key!r}, ...)"
        where.optional_line, where.optional_kind = self.placed.line(call), "fallback"
        where.kinds.add("option")

    def _or_default(self, where: Where, node: cst.BooleanOperation) -> None:
        """`get_device_type() or "cuda"`, `args.device or "cuda"`: the fallback of a value a caller, an
        option or a helper gives; like an option's default, only the fallback is NVIDIA-only. A
        left side that is a literal (`"" or "cuda"`, `None or "cuda"`) gives nothing: no default."""
        if _is_literal(node.left):
            return
        where.optional, where.optional_line, where.optional_kind = self._text(node.left), self.placed.line(node), "fallback"
        where.kinds.add("option")

    def _feature(self, where: Where, functions: list[cst.FunctionDef], fields: dict[str, Any],
                 node: cst.CSTNode) -> None:
        """A use of a runtime only functions import, inside the function that imports it (or a
        function nested in it), or through the module global such a function binds: an opt-in
        feature, named for that function."""
        api = str(fields.get("api") or fields.get("module") or "")
        runtime = next((name for name in self.lazy if api == name or api.startswith(name + ".")), None)
        home = None if runtime is None else next((f for f in functions if self._imports_in(f, runtime)), None)
        if home is None and runtime is not None:
            home = self._loader(runtime, node)
        if home is None and runtime is None and where.optional is None:
            # Any other tie in such a function (`def to_tensorrt(self, default_device="cuda")`) is
            # the feature's too, when nothing at the module's top calls it, not even a `__main__`
            # block: a script's `main()` importing pynvml is the program, not an opt-in.
            home, runtime = next(((f, name) for f in functions for name in sorted(self.lazy & self._whole)
                                  if f.name.value not in self._entry_points and self._imports_in(f, name)),
                                 (None, None))
            if home is None:  # a function that cannot run without a runtime it imports is its feature too
                home, runtime = next(((f, found) for f in functions if f.name.value not in self._entry_points
                                      for found in (self._requires(f),) if found is not None), (None, None))
            if home is not None and self.uses.module_uses(home):
                home = None
        if home is not None and not self.uses.main_path_calls(home, self._main_functions):
            where.feature, where.feature_line, where.runtime = home.name.value, self._def_line(home), runtime
            where.feature_kind = "function"

    def _branch_feature(self, where: Where, function: cst.FunctionDef, ancestors: tuple) -> None:
        """`if pretrained_dtype == torch.uint8: import bitsandbytes as bnb ... weight.cuda(device)`
        (litgpt's LoRA merge): a branch of a function whose own statements import a runtime lazily is
        that runtime's path, so every tie in it is the opt-in feature's, named for the function."""
        inner = None
        for ancestor in reversed(ancestors):
            if ancestor is function:
                return
            if isinstance(ancestor, cst.If) and inner is ancestor.body:
                runtime = _branch_runtime(ancestor.body, self.lazy)
                if runtime is not None:
                    where.feature, where.feature_line, where.runtime = function.name.value, self._def_line(function), runtime
                    where.feature_kind = "function"
                    return
            inner = ancestor

    def _registered(self, where: Where, definition: cst.ClassDef | cst.FunctionDef) -> None:
        """`BACKENDS = {"nccl": NcclDispatcher, "deepep": DeepEPDispatcher}` and nothing else naming
        DeepEPDispatcher: a backend the user picks by name, an opt-in feature named for its key."""
        found = self._registries.get(id(definition), "")
        if found == "":
            found = self._registries[id(definition)] = self.uses.registry_key(definition)
        key = found
        if key is not None:
            where.feature, where.feature_line, where.runtime = key, self._def_line(definition), definition.name.value
            where.feature_kind = "registry"
        elif isinstance(definition, cst.ClassDef) and where.backend is None:
            self._self_registered(where, definition)

    def _device_method(self, function: cst.FunctionDef, block: cst.CSTNode, owner: cst.CSTNode | None) -> BackendModule | None:
        """`def cuda(self)` beside `def cpu(self)` in a class (`to_cuda()` beside `to_cpu()` in a
        module): the CUDA member of a set of per-device methods, which runs only when a caller asks
        for that device by name; the others take their own (a backend module, one function wide)."""
        key = id(function)
        if key in self._device_methods:
            return self._device_methods[key]
        found = None
        conf = project_config()
        tokens = name_tokens(function.name.value)
        if tokens[:1] != ["test"] and any(t in conf.cuda_words for t in tokens) \
                and isinstance(block, (cst.IndentedBlock, cst.Module)):  # pytest runs every test_*: none is chosen
            covered, others = devices_beside(tokens, (name_tokens(s.name.value) for s in block.body
                                                      if isinstance(s, cst.FunctionDef) and s is not function), conf)
            if not covered and tokens == ["cuda"] and isinstance(owner, cst.ClassDef):
                # `def cuda(self)` alone, as nn.Module's or a tensor wrapper's: the caller asked for CUDA by
                # name; every other device goes through the class's `cpu()` / `to()` instead
                covered = frozenset(t for t in targets.names() if t != "rocm")
                note = "it runs only when a caller asks for CUDA by name; other devices use the class's `cpu()` / `to()`"
                found = BackendModule(f"{owner.name.value}.cuda()", covered, (), note=note)
            if found is None and (covered or others):
                owner_name = f"{owner.name.value}." if isinstance(owner, cst.ClassDef) else ""
                found = BackendModule(f"{owner_name}{function.name.value}()", covered, others)
        self._device_methods[key] = found
        return found

    def _self_registered(self, where: Where, definition: cst.ClassDef) -> None:
        """`class DDPStrategy: ... registry.register("ddp", cls)` (or `@STRATEGIES.register("ddp")`):
        a strategy, accelerator or backend class put in a registry by name, which the user picks by
        that name (or the dispatcher by the hardware present): an opt-in backend, like a registry
        dict's entry. One registered under a device name is a backend module's (its siblings judge
        it), one registered as the default is the main path."""
        found = self._self_registries.get(id(definition), "")
        if found == "":
            registered = self.uses.self_registration(definition, self._default_keys)
            if registered is not None and registered[0] and self.judge.vocab.device(registered[0]) is not None:
                registered = None  # `register("cuda", cls)`: the CUDA accelerator, a backend module
            found = self._self_registries[id(definition)] = None if registered is None else (
                registered[0] or definition.name.value, self._def_line(definition))
        if found is not None:
            where.feature, where.feature_line, where.runtime = found[0], found[1], definition.name.value
            where.feature_kind = "registered"

    def _choice(self, where: Where, node: cst.If) -> None:
        """`elif ENGINE == "triton": from .flash_attn_triton import ...`: a branch taken for one value
        of a backend or strategy name, importing its module lazily, is an opt-in backend: a feature
        named for that value."""
        found = self._choices.get(id(node))
        if found is None:
            value = self._chosen_name(node.test)
            module = _lazy_import(node.body) if value is not None else None
            found = self._choices[id(node)] = (value, module) if module is not None else ()
        if found:
            where.feature, where.feature_line, where.runtime = found[0], self.placed.line(node.test), found[1]
            where.feature_kind = "choice"

    def _chosen_name(self, test: cst.BaseExpression) -> str | None:
        """The name a test picks: `engine == "triton"`, `backend in ("deepep", "hybridep")`; None for a
        device (a guard), a flag value ("1", "true") or a comparison of two values."""
        if not isinstance(test, cst.Comparison) or len(test.comparisons) != 1:
            return None
        op, right = test.comparisons[0].operator, test.comparisons[0].comparator
        chosen: cst.BaseExpression | None = None
        if isinstance(op, cst.Equal):
            sides = [(test.left, right), (right, test.left)]
            chosen, texts = next(((a, [string_value(b)]) for a, b in sides
                                  if not _is_literal(a) and string_value(b) is not None), (None, None))
        elif isinstance(op, cst.In) and not _is_literal(test.left) and isinstance(right, (cst.Tuple, cst.List, cst.Set)):
            chosen, texts = test.left, [string_value(e.value) for e in right.elements]
        else:
            return None
        vocab = self.judge.vocab
        choices = self.ctx.catalogue.table("contexts").get("feature", {}).get("choices", {})
        not_names = frozenset(choices.get("not_names", ()))
        if not texts or any(t is None or not _NAME_VALUE.fullmatch(t) or vocab.device(t) is not None
                            or t.lower() in vocab.falsy or t.lower() in not_names for t in texts):
            return None
        func = chosen.func if isinstance(chosen, cst.Call) else chosen
        if self.ctx.qualify(func) in choices.get("platforms", ()):
            return None  # `sys.platform == "linux"`: where the code runs, not a backend it picks
        return "/".join(texts)

    def _loader(self, runtime: str, node: cst.CSTNode) -> cst.FunctionDef | None:
        """The module-level function that imports the runtime into the global the node reads
        (`_fwd = None` at the top; `def _ensure(): global _fwd; from flash_mla import f as _fwd`):
        the name holds the runtime only once that function ran, so its uses are its feature's."""
        root = node.func if isinstance(node, cst.Call) else node
        while isinstance(root, cst.Attribute):
            root = root.value
        if not isinstance(root, cst.Name) or "global" not in self.ctx.text:
            return None
        declares = re.compile(rf"^[ \t]*global[ \t][^\n]*\b{re.escape(root.value)}\b", re.MULTILINE)
        for statement in self.ctx.module.body:
            if isinstance(statement, cst.FunctionDef) and self._imports_in(statement, runtime) \
                    and declares.search(self.ctx.module.code_for_node(statement.body)) is not None:
                return statement
        return None

    def _requires(self, function: cst.FunctionDef) -> str | None:
        """`_required_runtime`, once per function."""
        key = id(function)
        if key not in self._required_runtimes:
            self._required_runtimes[key] = _required_runtime(function, self.lazy, self._opt_in)
        return self._required_runtimes[key]

    def _imports_in(self, scope: cst.FunctionDef, runtime: str) -> bool:
        """Whether the function itself imports the runtime: a use of a name a module-level
        `try: import apex` bound is that optional import's, not a feature of the function."""
        key = (id(scope), runtime)
        found = self._feature_imports.get(key)
        if found is None:
            code = self.ctx.module.code_for_node(scope.body)  # only functions using a lazy runtime
            found = self._feature_imports[key] = re.search(
                rf"^[ \t]*(?:import|from)[ \t]+{re.escape(runtime)}\b", code, re.MULTILINE) is not None
        return found

    def _def_line(self, scope: cst.FunctionDef | cst.ClassDef) -> int | None:
        """The line of `def name` (`class name`): a definition's node starts at its leading blank lines
        and decorators."""
        start = self.placed.line(scope)
        if start is None:
            return None
        pattern = re.compile(rf"\s*(?:async\s+)?(?:def|class)\s+{re.escape(scope.name.value)}\b")
        lines = self.ctx.lines  # split once per file (the snippets use them too)
        for number in range(start, min(len(lines), start + 200) + 1):
            if pattern.match(lines[number - 1]):
                return number
        return start

    def _left_run(self, ancestors: tuple, index: int) -> int:
        """The index of the outermost of the `and`/`or` operations above ancestors[index] that
        each hold the one below as their left side. Ancestors share their outer part, so a node's
        index is the same in every tuple holding it: each node of a chain is climbed once per
        file, not once per finding in it (issue 20, D7)."""
        climbed = []
        top = index
        while top > 0:
            known = self._runs.get(id(ancestors[top]))
            if known is not None:
                top = known
                break
            above = ancestors[top - 1]
            if type(above) is not cst.BooleanOperation or above.left is not ancestors[top]:
                break
            climbed.append(id(ancestors[top]))
            top -= 1
        for key in climbed:
            self._runs[key] = top
        return top

    # -- narrowing ------------------------------------------------------------------------------------
    def _narrow(self, where: Where, truth: Truth, test: cst.CSTNode, negated: bool = False) -> None:
        where.condition = where.condition & truth
        if self._words and not negated and where.optional is None:
            text = self._source(test).lower()
            if any(word in text for word in self._words):  # `if args.load_in_4bit:`: the option's own path
                where.optional, where.optional_line = self._text(test), self._test_line(test)
                where.kinds.add("option")
        if where.optional is None and not negated and _opt_in_beyond_cuda(truth):
            # `if module.ephemeral_gpu_offload: x.to("cuda")`: a GPU option a user may turn on on an
            # MPS or XPU machine too; there only the opted-in path fails, a run without it goes on
            where.optional, where.optional_line, where.optional_kind = self._text(test), self._test_line(test), "option"
        if truth.excludes or truth.requires_package:
            where.kinds |= truth.kinds - {"launch", "mode"}
        if where.guard is None and truth.excludes:
            where.guard, where.guard_line = self._text(test, negated), self._test_line(test)
        if where.optional is None and truth.requires_package:
            where.optional, where.optional_line = self._text(test, negated), self._test_line(test)
            if "launch" in truth.kinds or "mode" in truth.kinds:
                where.optional_kind = "launch" if "launch" in truth.kinds else "mode"

    def _test_line(self, test: cst.CSTNode) -> int | None:
        """The line of an `if`'s test. Positions are generated up to the file's last finding; a test
        after it (the guard of a call to the function a finding is in) is found in the text instead."""
        line = self.placed.line(test)
        if line is not None:
            return line
        found = re.search(rf"\b(?:el)?if[ \t(]+{re.escape(self.ctx.module.code_for_node(test))}", self.ctx.text)
        return self.ctx.text.count("\n", 0, found.start()) + 1 if found is not None else None

    def _source(self, node: cst.CSTNode) -> str:
        """The node's code: a slice of the text when the positions pass generated it (the left side
        of a long `and` chain would otherwise be generated again for each finding in it: issue 20,
        D7), else libcst's code generation."""
        span = self.placed.spans.get(id(node))
        return self.ctx.text[span[0]:span[1]] if span is not None else self.ctx.module.code_for_node(node)

    def _text(self, node: cst.CSTNode, negated: bool = False) -> str:
        source = self._source(node)
        head = source[:_SHORT * 4]  # its normalised text starts the whole one's: enough when longer than shown
        text = " ".join(head.split())
        if len(text) <= _SHORT and len(source) > len(head):
            text = " ".join(source.split())
        if negated:
            text = text[4:] if text.startswith("not ") else f"not ({text})" if " " in text else f"not {text}"
        return text if len(text) <= _SHORT else text[:_SHORT - 3] + "..."

    def _if(self, where: Where, node: cst.If, child: cst.CSTNode, ancestors: tuple, index: int) -> None:
        if child is node.body and index > 0 and isinstance(ancestors[index - 1], cst.Module) and _is_main(node.test):
            # A script's main block is the program itself, and so is a package's __main__.py.
            where.demo = where.demo or (bool(self.facts.package) and not self.ctx.path.endswith("__main__.py"))
            return
        if child is node.body or child is node.orelse:
            self._old_torch(where, node.test, child is node.body)
        if child is node.body:
            self._diagnostic(where, node.test)
            self._narrow(where, self.judge.truth(node.test), node.test)
        elif child is node.orelse:
            self._narrow(where, ~self.judge.truth(node.test), node.test, negated=True)
        else:  # the test itself: the chain's other branches serve their targets
            if child is node.test and not where.siblings:
                head = index
                while head > 0 and isinstance(ancestors[head - 1], cst.If) and ancestors[head - 1].orelse is ancestors[head]:
                    head -= 1
                before, after = self._chain(ancestors[head], node.body)
                where.siblings = before | after | self._exit_siblings(node, ancestors, index)
            return
        if child is node.body or isinstance(child, cst.Else):
            head = index
            while head > 0 and isinstance(ancestors[head - 1], cst.If) and ancestors[head - 1].orelse is ancestors[head]:
                head -= 1
            mine = child if child is node.body else child.body
            before, after = self._chain(ancestors[head], mine)
            where.served_before |= before
            where.covered |= after
            if before:
                where.kinds.add("dispatch")
            if child is node.body:
                where.covered |= self._exit_siblings(node, ancestors, index)

    def _exit_siblings(self, node: cst.If, ancestors: tuple, index: int) -> set[str]:
        """`if cuda: return CudaPlatform()` then `if xpu: return XpuPlatform()` ... : a chain written as
        early returns. The statements after an exiting `if` are its else: what they serve counts."""
        if node.orelse is not None or index == 0 or not self.judge.exits_block(node):
            return set()
        block = ancestors[index - 1]
        body = getattr(block, "body", None)
        if not isinstance(body, (list, tuple)):
            return set()
        position = next((i for i, statement in enumerate(body) if statement is node), None)
        if position is None:
            return set()
        served: set[str] = set()
        for statement in body[position + 1:position + 12]:
            if isinstance(statement, cst.If):
                served |= self._named(statement.test)
            served |= self._served(statement)
        return served

    def _old_torch(self, where: Where, test: cst.BaseExpression, in_body: bool) -> None:
        """The branch of a version test that only an older PyTorch takes (`torch.Stream() if
        is_torch_version(">=", "2.7") else torch.cuda.Stream()`): every target runs a current one."""
        if where.optional is not None:
            return
        branch = self.versions.branch(test)
        if branch is not None and (branch == "old") == in_body:
            where.optional, where.optional_line, where.optional_kind = self._text(test), self._test_line(test), "old_torch"
            where.kinds.add("fallback")

    def _diagnostic(self, where: Where, test: cst.BaseExpression) -> None:
        """`if args.profile:`, `if self.debug and rank == 0:`, `if cfg.profiler_profile_memory and ...:`:
        a branch only a profiling or debugging option turns on (rules/contexts.toml [guards.options]
        `diagnostic`) is optional; a normal run skips it. Not `not args.profile`, an `or`, or a torch
        setting (`torch.backends.cudnn.benchmark`)."""
        if where.optional is not None:
            return
        flag = next((term for term in _and_terms(test) if self._diagnostic_flag(term)), None)
        if flag is not None:
            where.optional, where.optional_line, where.optional_kind = self._text(flag), self._test_line(test), "diagnostic"
            where.kinds.add("option")

    def _diagnostic_flag(self, term: cst.BaseExpression) -> bool:
        if not isinstance(term, (cst.Name, cst.Attribute)):
            return False
        qualified = self.ctx.qualify(term)
        if qualified is not None and qualified.split(".", 1)[0] == "torch":
            return False
        return any(t.lower() in self._diagnostic_words for t in NAME_PARTS.findall(name_of_target(term) or ""))

    def _ifexp(self, where: Where, node: cst.IfExp, child: cst.CSTNode) -> None:
        if child is node.body or child is node.orelse:
            self._old_torch(where, node.test, child is node.body)
        if child is node.body:
            self._narrow(where, self.judge.truth(node.test), node.test)
            where.covered |= self._served(node.orelse)
        elif child is node.orelse:
            self._narrow(where, ~self.judge.truth(node.test), node.test, negated=True)
            before = self._served(node.body) | self._named(node.test)
            where.served_before |= before
            if before:
                where.kinds.add("dispatch")

    def _after_exits(self, where: Where, block: cst.CSTNode, child: cst.CSTNode) -> None:
        exits = self._exits.get(id(block))
        if exits is None:
            exits = self._exits[id(block)] = self._block_exits(block)
        if not exits:
            return
        position = next((i for i, statement in enumerate(block.body) if statement is child), None)
        if position is None:
            return
        for index, truth, test, whole in exits:
            if isinstance(test, cst.If):
                # `if isinstance(self.strategy, XLAStrategy): return XLAPrecision()`: the devices it
                # names took that return, as an earlier branch of a chain takes them
                if index < position:
                    where.served_before |= self._named(test.test)
                    where.kinds.add("dispatch")
            elif (whole and index != position) or index < position:  # `pytestmark = skipif(...)` is not under itself
                self._narrow(where, truth, test, negated=isinstance(test, cst.BaseExpression) and not whole)

    def _raised_without(self, node: cst.Import | cst.ImportFrom) -> tuple[str, int | None] | None:
        """The first `if cupy is None: raise ...` anywhere in the module for a name the optional
        import binds: its fallback (`cupy = None`) only defers the failure to the code that checks."""
        if self._module_requirements is None:
            self._module_requirements = [
                (statement, f"if {self._text(statement.test)}: raise", self.placed.line(statement))
                for statement in (descendants(self.ctx.module) if "raise" in self.ctx.text else ())
                if isinstance(statement, cst.If) and self.judge.requirement(statement)]
        names = bound_names(node)
        for statement, text, line in self._module_requirements:
            if any(n in names for n in _names_in(statement.test)):
                return text, line
        return None

    def _required(self, where: Where, block: cst.IndentedBlock | cst.Module, child: cst.CSTNode) -> None:
        found = self._requirements.get(id(block))
        if found is None:  # once per block: every finding below it asks
            found = self._requirements[id(block)] = [
                (index, f"if {self._text(statement.test)}: raise", self.placed.line(statement))
                for index, statement in enumerate(block.body)
                if isinstance(statement, cst.If) and self.judge.requirement(statement)]
        if not found:
            return
        position = next((i for i, statement in enumerate(block.body) if statement is child), None)
        before = [(text, line) for index, text, line in found if position is not None and index < position]
        if before:
            where.required = before[0]

    def _block_exits(self, block: cst.CSTNode) -> list[tuple[int, Truth, cst.CSTNode, bool]]:
        """(index, what must hold after it, the test, applies to the whole block) per guard statement."""
        found = []
        module = isinstance(block, cst.Module)
        for index, statement in enumerate(block.body):
            if isinstance(statement, cst.If):
                truth = self.judge.exit_guard(statement)
                if truth is not None and (truth.excludes or truth.requires_package):
                    found.append((index, truth, statement.test, False))
                elif truth is not None and self._named(statement.test):
                    found.append((index, truth, statement, False))  # an early return for named devices
            elif module and isinstance(statement, cst.SimpleStatementLine):
                truth = self.judge.module_skip(statement)
                if truth is not None and (truth.excludes or truth.requires_package):
                    found.append((index, truth, statement.body[0], True))
        return found

    def _decorated(self, where: Where, node: cst.FunctionDef | cst.ClassDef) -> None:
        condition, guard, optional = self._decorations(node)
        if condition is not None:
            where.condition = where.condition & condition
            where.kinds |= condition.kinds
        if where.guard is None and guard is not None:
            where.guard, where.guard_line = guard
        if where.optional is None and optional is not None:
            where.optional, where.optional_line = optional

    def _decorations(self, node: cst.FunctionDef | cst.ClassDef) -> tuple[Truth | None, tuple | None, tuple | None]:
        """What the decorators that narrow say, folded once per definition (every finding in a
        stack of 5,000 decorators asked each of them again: issue 20, D19): (their conditions
        together, the first guard and the first optional one, with their lines)."""
        found = self._decorators.get(id(node))
        if found is not None:
            return found
        condition: Truth | None = None
        guard = optional = None
        for decorator in node.decorators:
            truth = self.judge.decorator(decorator.decorator)
            if truth is not None and (truth.excludes or truth.requires_package):
                condition = truth if condition is None else condition & truth
                if guard is None and truth.excludes:
                    guard = (f"@{self._text(decorator.decorator)}", self.placed.line(decorator))
                if optional is None and truth.requires_package:
                    optional = (f"@{self._text(decorator.decorator)}", self.placed.line(decorator))
        found = self._decorators[id(node)] = (condition, guard, optional)
        return found

    # -- siblings in dispatch chains -----------------------------------------------------------------------
    def _chain(self, head: cst.If, mine: cst.CSTNode) -> tuple[set[str], set[str]]:
        """Targets served by the other branches of the if/elif/else chain starting at `head`:
        (by a branch before this one, which takes them first; by a branch after it)."""
        key = (id(head), id(mine))
        found = self._chains.get(key)
        if found is not None:
            return found
        before: set[str] = set()
        after: set[str] = set()
        seen_mine = False
        current: cst.If | cst.Else | None = head
        while current is not None:
            body = current.body
            if body is mine:
                seen_mine = True
            else:
                served = self._served(body)
                if isinstance(current, cst.If):
                    served |= self._named(current.test)
                (after if seen_mine else before).update(served)
            current = current.orelse if isinstance(current, cst.If) else None
        found = self._chains[key] = (before, after)
        return found

    def _named(self, test: cst.BaseExpression) -> set[str]:
        """Targets a test picks out by name (`elif torch.backends.mps.is_available()`, `elif
        device.type == "xpu"`), not under a `not`."""
        named: set[str] = set()
        stack = [test]
        while stack:
            node = stack.pop()
            if isinstance(node, cst.UnaryOperation):
                continue
            if isinstance(node, cst.BooleanOperation):
                stack.extend((node.left, node.right))
                continue
            devices = self.judge.compared_devices(node)
            if devices is not None:  # `flag in ("cpu", "mps")`: a CPU value is a device chosen too
                cuda = targets.SOURCE_PLATFORM in devices
                named.update(t for t in targets.names()
                             if t in devices and not (cuda and targets.has_role(t, "accepts-cuda-calls")))
                continue
            truth = self.judge.truth(node)
            if truth.excludes:  # a "cuda" test takes ROCm too, but names no other backend for it
                cuda = truth.may_hold(targets.SOURCE_PLATFORM)
                named.update(t for t in targets.names()
                             if truth.may_hold(t) and not (cuda and targets.has_role(t, "accepts-cuda-calls")))
        return named

    def _served(self, body: cst.CSTNode) -> set[str]:
        """Targets a branch serves: another backend's API (torch.xpu.*, torch_xla) or a device string."""
        vocab = self.judge.vocab
        every = frozenset(targets.names())
        cuda_alike = frozenset(targets.with_role("accepts-cuda-calls"))
        served: set[str] = set()
        stack = [body]
        seen = 0
        while stack and seen < _BODY_NODES:
            node = stack.pop()
            seen += 1
            if isinstance(node, (cst.Import, cst.ImportFrom)):  # module names are absolute as written
                modules = [dotted_name(a.name) for a in node.names] if isinstance(node, cst.Import) else \
                    [dotted_name(node.module)] if node.module is not None else []
                for module in modules:
                    for part in (module or "").split("."):
                        platforms = vocab.words.get(part.removeprefix("torch_"))
                        if platforms and targets.SOURCE_PLATFORM not in platforms:
                            served.update(platforms & every)
                continue
            if isinstance(node, (cst.Attribute, cst.Name)) and dotted_parts(node) is not None:
                qualified = self.ctx.qualify(node)
                if qualified:
                    for part in qualified.split(".")[:3]:
                        word = part.removeprefix("torch_")
                        platforms = vocab.words.get(word) or vocab.words.get(word.rstrip("x"))
                        if platforms and word == "accelerator":
                            served.update((platforms & every) - cuda_alike)  # the CUDA branch serves those
                        elif platforms and targets.SOURCE_PLATFORM not in platforms:
                            served.update(platforms & every)
                continue
            text = string_value(node) if isinstance(node, (cst.SimpleString, cst.ConcatenatedString)) else None
            if text is not None:
                platforms = vocab.device(text)
                if platforms and targets.SOURCE_PLATFORM not in platforms:
                    served.update(platforms & every)
                continue
            if isinstance(node, cst.IfExp):
                served |= self._named(node.test)
            stack.extend(child_nodes(node))
        return served

    # -- the project's own packages ------------------------------------------------------------------------
    def _own(self, where: Where, node: cst.CSTNode, fields: dict[str, Any]) -> None:
        own = self.facts.own
        if not own:
            return
        if isinstance(node, cst.Import):
            modules = [dotted_name(alias.name) for alias in node.names]
        elif isinstance(node, cst.ImportFrom) and (node.relative or node.module is None):
            if not isinstance(fields.get("api"), str):
                return
            modules = [fields["api"]]  # `from .triton_utils import x`, resolved by the rule
        elif isinstance(node, cst.ImportFrom):
            base = dotted_name(node.module)
            names = [] if isinstance(node.names, cst.ImportStar) else [
                dotted_name(alias.name) for alias in node.names]
            modules = [f"{base}.{name}" for name in names] or [base]
        elif isinstance(fields.get("library") or fields.get("api"), str):
            modules = [fields.get("library") or fields["api"]]  # a use: whose library it is
        else:
            return
        if not modules or any(m is None for m in modules):
            return
        tops = {m.split(".", 1)[0] for m in modules}
        built = self.facts.extensions  # compiled extensions its own setup.py builds are its own too
        if len(tops) == 1 and (tops <= own or all(m in built or m.split(".", 1)[0] in built for m in modules)):
            where.own = next(iter(tops))

    # -- redundant seeding -----------------------------------------------------------------------------------
    def _redundant(self, where: Where, node: cst.CSTNode, ancestors: tuple) -> None:
        """`torch.cuda.manual_seed_all(s)` beside a seeding of every device with the same value
        (auditor/analysis/seeds.py: the judgement F22's deletion shares)."""
        if not isinstance(node, cst.Call) or not node.args or node.args[0].keyword is not None:
            return
        if len(ancestors) < 3 or not isinstance(ancestors[-1], cst.Expr):
            return
        statement, block = ancestors[-2], ancestors[-3]
        if not isinstance(statement, cst.SimpleStatementLine) or len(statement.body) != 1 \
                or not isinstance(block, (cst.IndentedBlock, cst.Module)):
            return
        found = redundant_seeding(statement, block.body, node.args[0].value, self.ctx.qualify, self.seeders,
                                  self.ctx.module.code_for_node)
        if found is not None:
            where.seeder = (found.seeder, found.seed, self.placed.line(found.statement))

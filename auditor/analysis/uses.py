"""What a module does with its own names, from one walk of its tree (only for a file whose findings
ask, and only once): whether a function is called only inside a `try` that falls back, whether
every call passes a parameter, whether the module's main path calls a function unconditionally,
and whether a class or function is only listed in a registry by name (auditor.analysis.placement).
Nothing here looks beyond the module: the cross-file steps are auditor.analysis.crossfile's."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

import libcst as cst

from auditor.python.syntax import callee_name, string_value
from auditor.python.tree import child_nodes, descendants

_EXITS = frozenset({"exit", "_exit", "quit", "abort"})  # sys.exit, os._exit, quit(), os.abort: the end of the program


@dataclass(frozen=True)
class Use:
    """Where one use of a name stands in its module."""

    fallback: int | None  # the line of the innermost `try` around it that falls back (0: not placed), or None
    conditional: bool  # under an if, a try, a loop's test or the right side of and/or
    within: str  # the module-level function or class it is in ("" at module level)
    function: str = ""  # the innermost function it is in
    registry: str = ""  # the key it is listed under in a registry dict (`{"deepep": DeepEPDispatcher, ...}`)
    guard: cst.BaseExpression | None = None  # the test of the innermost `if` whose body holds it


@dataclass(frozen=True)
class Call:
    keywords: frozenset[str]
    positional: int  # -1: `f(*args, **kwargs)`, what it passes is unknown
    attribute: bool  # `obj.f(...)` rather than `f(...)`


class ModuleUses:
    """The uses of names in one module; the walk runs on the first question that needs it."""

    def __init__(self, module: cst.Module, text: str, line: Callable[[cst.CSTNode], int | None],
                 falls_back: Callable[[cst.Try | cst.TryStar], bool]) -> None:
        self.module = module
        self.text = text
        self._line = line
        self._falls_back = falls_back
        self._names: dict[str, list[Use]] | None = None
        self._attributes: dict[str, list[Use]] = {}  # attribute name -> its uses (`obj.name`)
        self._calls: dict[str, list[Call]] = {}  # callee's last name -> its calls
        self._positions: dict[int, int] | None = None
        self._mentions: dict[str, bool] = {}

    # -- questions --------------------------------------------------------------------------------------
    def position(self, node: cst.CSTNode) -> int | None:
        """The index of a statement among the module's top-level ones, None for any other node."""
        if self._positions is None:
            self._positions = {id(statement): i for i, statement in enumerate(self.module.body)}
        return self._positions.get(id(node))

    def top_level(self, node: cst.CSTNode) -> bool:
        return self.position(node) is not None

    def named_again(self, name: str) -> bool:
        """Whether the file names `name` more than once (its definition and a use): cheap, and false
        for most functions, which spares the walk."""
        found = self._mentions.get(name)
        if found is None:
            found = self._mentions[name] = len(re.findall(rf"\b{re.escape(name)}\b", self.text)) >= 2
        return found

    def fallback_line(self, function: cst.FunctionDef) -> tuple[int | None] | tuple[()]:
        """(the line of the fallback `try`,) when the module uses the module-level function only
        inside `try` blocks whose handler falls back (whisper: `try: return dtw_cuda(x)`), else ()."""
        name = function.name.value
        if "try" not in self.text or not self.top_level(function) or not self.named_again(name):
            return ()
        sites = [use for use in self.names().get(name, ()) if use.within != name]
        if sites and all(use.fallback is not None for use in sites):
            return (sites[0].fallback or None,)
        return ()

    def default_reliance(self, function: cst.FunctionDef, param: cst.Param,
                         owner: cst.ClassDef | None = None) -> str:
        """What the module does with a parameter's default: "passed" (it calls the function and
        every call passes the parameter, by keyword or by position: a method called on an object
        skips `self`, and an `__init__`'s calls are its class's), "unnamed" (it names the function
        nowhere but its own definition: only callers elsewhere decide) or "relied" (a call leaves it
        out, or the function is used as a value, a callback or a registry entry, which may)."""
        params = [*function.params.posonly_params, *function.params.params]
        position = next((i for i, p in enumerate(params) if p is param), None)
        if position is None and param not in function.params.kwonly_params:
            return "relied"
        shift = 1 if params[:1] and params[0].name.value in ("self", "cls") else 0
        if function.name.value == "__init__" and owner is not None and self.top_level(owner):
            return self._reliance(owner.name.value, param.name.value, position, False, shift)
        return self._reliance(function.name.value, param.name.value, position, not self.top_level(function), shift)

    def field_reliance(self, owner: cst.ClassDef, field: str) -> str:
        """`default_reliance` for a dataclass field: a keyword (or position) of the class's calls."""
        if not self.top_level(owner):
            return "relied"
        return self._reliance(owner.name.value, field, None, False, 0)

    def _reliance(self, name: str, keyword: str, position: int | None, method: bool, shift: int) -> str:
        if not self.named_again(name):
            return "unnamed"
        uses = self.names().get(name, ())
        count = len(self._attributes.get(name, ())) if method else sum(1 for use in uses if use.within != name)
        calls = [call for call in self._calls.get(name, ()) if call.attribute == method]
        if not calls and not count:
            return "unnamed"  # named again only inside itself, or in text that is no use (a docstring)
        if not calls or len(calls) != count:
            return "relied"  # never called here, or named other than in a call
        for call in calls:
            index = None if position is None else position - (shift if call.attribute or not method else 0)
            if keyword not in call.keywords and (index is None or call.positional <= index):
                return "relied"
        return "passed"

    def main_path_calls(self, function: cst.FunctionDef, main: frozenset[str]) -> bool:
        """Whether a use of the function (`f()` or `self.f()`) with no condition around it stands in
        one of the `main` functions ("" is the module's top)."""
        name = function.name.value
        if not self.named_again(name):
            return False
        uses = [*self.names().get(name, ()), *self._attributes.get(name, ())]
        return any(not use.conditional and use.function != name and use.function in main for use in uses)

    def call_guards(self, function: cst.FunctionDef) -> list[cst.BaseExpression]:
        """The tests of the `if`s the module calls a function under, when every use of it is such a
        call: a module-level function (`if torch.cuda.is_available(): _pin(0)`) or a method called on
        an object (`if is_deepspeed_zero3_enabled(): self._gather(w)`); [] when one is not (a call
        with no `if` around it, the function passed as a value, or only recursion)."""
        name = function.name.value
        if not self.named_again(name):
            return []
        method = not self.top_level(function)
        names = self.names()
        if method:  # `self._gather(w)`: its uses are attributes; a bare name of it is another's
            uses = [use for use in self._attributes.get(name, ()) if use.function != name]
            if names.get(name):
                return []
        else:
            uses = [use for use in names.get(name, ()) if use.within != name]
        calls = [call for call in self._calls.get(name, ()) if call.attribute == method]
        if not uses or len(calls) != len(uses) or any(use.guard is None for use in uses):
            return []
        return [use.guard for use in uses if use.guard is not None]

    def module_uses(self, function: cst.FunctionDef) -> bool:
        """Whether the module's top level names the function (or `x.function`) at all, under a
        condition or not: an `if __name__ == "__main__": main()` runs it."""
        name = function.name.value
        if not self.named_again(name):
            return False
        return any(not use.function and use.within != name
                   for use in (*self.names().get(name, ()), *self._attributes.get(name, ())))

    def registry_key(self, definition: cst.ClassDef | cst.FunctionDef) -> str | None:
        """The key of the registry dict that is the only place the module names a module-level
        class or function (`{"alltoall": NcclDispatcher, "deepep": DeepEPDispatcher}`), else None."""
        name = definition.name.value
        if not self.top_level(definition) or re.search(rf"[\"']\s*:\s*{re.escape(name)}\b", self.text) is None:
            return None  # never the value of a string key (the common case: no walk)
        uses = [use for use in self.names().get(name, ()) if use.within != name]
        if uses and all(use.registry for use in uses) and not self._attributes.get(name):
            return uses[0].registry
        return None

    def self_registration(self, definition: cst.ClassDef, not_keys: frozenset[str]) -> tuple[str, cst.Call] | None:
        """(the name, the call) when a module-level class registers itself in a registry by name: a
        `@REGISTRY.register("fsdp")` decorator (with its key: `@register()` names no choice), or `registry.register("fsdp", cls, ...)` inside its
        own body (lightning's `register_strategies` classmethod), and the module never builds it
        directly. The name is the first literal key ("" when every key is computed, `register(name,
        cls)` in a loop). None for a key in `not_keys` (`default`, `auto`: the default choice)."""
        name = definition.name.value
        if not self.top_level(definition) or "register" not in self.text:
            return None
        calls = [d.decorator for d in definition.decorators if isinstance(d.decorator, cst.Call)
                 and (callee_name(d.decorator) or "").startswith("register")
                 and d.decorator.args and string_value(d.decorator.args[0].value) is not None]
        calls += [node for node in descendants(definition.body)  # the class's own `register(key, cls)` calls
                  if isinstance(node, cst.Call) and callee_name(node) == "register" and len(node.args) >= 2
                  and isinstance(node.args[1].value, cst.Name) and node.args[1].value.value in ("cls", name)]
        if not calls:
            return None
        keys = [string_value(call.args[0].value) for call in calls if call.args]
        if any(key is not None and key.lower() in not_keys for key in keys):
            return None  # registered as the default: what runs when nobody chooses
        outside = [use for use in self.names().get(name, ()) if use.within != name]
        if any(not use.function and not use.registry for use in outside):
            return None  # built or named at the module's top: the module's own main path uses it
        return next((key for key in keys if key), ""), calls[0]

    # -- the walk -----------------------------------------------------------------------------------------
    def names(self) -> dict[str, list[Use]]:
        """Per name used in the module (definitions aside): where each use stands."""
        if self._names is not None:
            return self._names
        uses: dict[str, list[Use]] = {}
        attributes = self._attributes
        stack: list[tuple[cst.CSTNode, Use]] = [(self.module, Use(None, False, "", ""))]
        while stack:
            node, here = stack.pop()
            kind = type(node)
            if kind is cst.Name:
                uses.setdefault(node.value, []).append(here)
                continue
            if kind is cst.Annotation:
                continue  # a type (`-> Union[DataLoader, Prefetcher]`) is no use of the value
            if kind is cst.Call:
                self._record_call(node)
            elif kind is cst.Attribute:  # `obj.name`: a method's use, not the module-level name's
                attributes.setdefault(node.attr.value, []).append(here)
                stack.append((node.value, here))
                continue
            elif kind is cst.FunctionDef or kind is cst.ClassDef:
                within = node.name.value if not here.within and self.top_level(node) else here.within
                inner = Use(here.fallback, False, within, node.name.value) if kind is cst.FunctionDef \
                    else Use(here.fallback, here.conditional, within, here.function)
                stack.extend((child, inner) for child in child_nodes(node) if child is not node.name)
                continue
            elif kind is cst.Try or kind is cst.TryStar:
                # a fast path's fallback: inside a function (a script's `try: main()` is the program)
                # and going on past the handler (one that exits ends the program instead)
                falls_back = here.function and self._falls_back(node) and not _handler_exits(node)
                line = (self._line(node) or 0) if falls_back else here.fallback
                stack.append((node.body, Use(line, True, here.within, here.function)))
                other = Use(here.fallback, True, here.within, here.function)
                stack.extend((child, other) for child in child_nodes(node) if child is not node.body)
                continue
            elif kind is cst.If or kind is cst.IfExp or kind is cst.While:
                stack.append((node.test, here))
                other = Use(here.fallback, True, here.within, here.function)
                guarded = Use(here.fallback, True, here.within, here.function, guard=node.test) \
                    if kind is not cst.While else other
                stack.extend((child, guarded if child is node.body else other)
                             for child in child_nodes(node) if child is not node.test)
                continue
            elif kind is cst.Dict:
                self._registry(node, here, uses, stack)
                continue
            elif kind is cst.BooleanOperation:
                stack.append((node.left, here))
                stack.append((node.right, Use(here.fallback, True, here.within, here.function)))
                continue
            stack.extend((child, here) for child in child_nodes(node))
        self._names = uses
        return uses

    @staticmethod
    def _registry(node: cst.Dict, here: Use, uses: dict[str, list[Use]], stack: list) -> None:
        """A dict of two or more names by string key is a registry: each name's use records its key."""
        named = [e for e in node.elements if isinstance(e, cst.DictElement) and type(e.value) is cst.Name
                 and string_value(e.key) is not None]
        if len(named) < 2:  # one name is no choice
            named = []
        for element in named:
            uses.setdefault(element.value.value, []).append(
                Use(here.fallback, here.conditional, here.within, here.function, string_value(element.key)))
        listed = {id(element) for element in named}
        stack.extend((element, here) for element in node.elements if id(element) not in listed)

    def _record_call(self, node: cst.Call) -> None:
        func = node.func
        name = func.value if isinstance(func, cst.Name) else func.attr.value if isinstance(func, cst.Attribute) else None
        if name is None:
            return
        if any(arg.star for arg in node.args):
            call = Call(frozenset(), -1, isinstance(func, cst.Attribute))
        else:
            call = Call(frozenset(arg.keyword.value for arg in node.args if arg.keyword is not None),
                        sum(1 for arg in node.args if arg.keyword is None), isinstance(func, cst.Attribute))
        self._calls.setdefault(name, []).append(call)


def _handler_exits(node: cst.Try | cst.TryStar) -> bool:
    """Whether an except clause ends the program (`sys.exit(1)`, `exit()`, `os._exit(1)`)."""
    for handler in node.handlers:
        for statement in handler.body.body:
            if not isinstance(statement, cst.SimpleStatementLine):
                continue  # a compound statement (an if, a loop) does real work: the handler goes on
            for small in statement.body:
                call = small.value if isinstance(small, cst.Expr) else None
                if isinstance(call, cst.Call) and callee_name(call) in _EXITS:
                    return True
    return False

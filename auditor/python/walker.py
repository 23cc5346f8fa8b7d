"""One pass over a libcst tree that tracks scopes and dispatches to the rules.

libcst's own visitor rebuilds every node as it goes and costs about as much as the parse;
reading the dataclass fields directly (auditor/python/tree.py) costs a tenth of that. Rules get `visit_<NodeType>(node, ctx)`
calls in source order (parents before children) and `on_reference` for dotted names the
catalogue knows."""

from __future__ import annotations

from collections.abc import Callable, Iterable

import libcst as cst

from auditor.catalogue import Catalogue
from auditor.checks.base import Rule
from auditor.context import PythonContext, Reference
from auditor.python.names import dotted_name, dotted_parts
from auditor.python.tree import KIND, NODE, SEQUENCE, child_fields, kind_of

_TYPING = frozenset({"typing", "typing_extensions"})
_ALIAS_FORMS = frozenset({"Union", "Optional", "Type", "Callable", "ClassVar", "Sequence", "List", "Tuple",
                          "Dict", "Iterable", "Iterator", "Generator", "Mapping"})
_COMPREHENSIONS = (cst.ListComp, cst.SetComp, cst.GeneratorExp, cst.DictComp)


class Walker:
    """Walks one module for a fixed set of rules; build once, reuse for every file."""

    def __init__(self, rules: Iterable[Rule], catalogue: Catalogue) -> None:
        self.rules = list(rules)
        self.catalogue = catalogue
        self.by_code = {rule.code: rule for rule in self.rules}
        self.by_name = {rule.name: rule for rule in self.rules}
        self.handlers: dict[type, list[Callable]] = {}
        shared: set[Callable] = set()  # family-wide handlers run once, whichever rule carries them
        for rule in self.rules:
            for attr in dir(type(rule)):
                if attr.startswith("visit_"):
                    node_type = getattr(cst, attr[6:], None)
                    function = getattr(type(rule), attr)
                    if not isinstance(node_type, type) or function in shared:
                        continue
                    if getattr(function, "__lockin_shared__", False):
                        shared.add(function)
                    self.handlers.setdefault(node_type, []).append(getattr(rule, attr))
        self._special: dict[type, Callable] = {
            cst.Name: Walker._name, cst.Attribute: Walker._attribute, cst.Call: Walker._call,
            cst.Arg: Walker._arg, cst.Import: Walker._import, cst.ImportFrom: Walker._import_from,
            cst.FunctionDef: Walker._function, cst.Lambda: Walker._lambda,
            cst.ClassDef: Walker._class, cst.Assign: Walker._assign,
            cst.AnnAssign: Walker._ann_assign, cst.AugAssign: Walker._aug_assign,
            cst.For: Walker._for, cst.WithItem: Walker._with_item,
            cst.ExceptHandler: Walker._except, cst.NamedExpr: Walker._named_expr,
            cst.Global: Walker._global, cst.Nonlocal: Walker._global,
            cst.CompFor: Walker._comp_for, cst.Annotation: Walker._annotation,
            **{t: Walker._comprehension for t in _COMPREHENSIONS},
        }

    def run(self, ctx: PythonContext) -> None:
        self.ctx = ctx
        ctx.rules_by_name = self.by_name
        self.in_except = 0
        for rule in self.rules:
            rule.begin(ctx)
        self.walk(ctx.module)
        for rule in self.rules:
            rule.finish(ctx)

    # -- generic traversal -------------------------------------------------------------------
    def walk(self, node: cst.CSTNode) -> None:
        node_type = type(node)
        handlers = self.handlers.get(node_type)
        if handlers:
            for handler in handlers:
                handler(node, self.ctx)
        special = self._special.get(node_type)
        if special is not None:
            special(self, node)
        else:
            self.walk_children(node)

    def walk_children(self, node: cst.CSTNode) -> None:
        # Inlined auditor.python.tree.child_nodes: this loop runs for every node of every file.
        for name in child_fields(type(node)):
            value = getattr(node, name)
            kind = KIND.get(type(value)) or kind_of(type(value))
            if kind is NODE:
                self.walk(value)
            elif kind is SEQUENCE:
                for item in value:
                    if (KIND.get(type(item)) or kind_of(type(item))) is NODE:
                        self.walk(item)

    def walk_all(self, nodes: Iterable[cst.CSTNode | None]) -> None:
        for node in nodes:
            if node is not None:
                self.walk(node)

    # -- references ----------------------------------------------------------------------------
    def reference(self, node: cst.BaseExpression, kind: str, call: cst.Call | None = None) -> bool:
        """Dispatch a dotted name to its rule; False when `node` is not a dotted name."""
        parts = dotted_parts(node)
        if parts is None:
            return False
        head = self.ctx.resolver.lookup(parts[0])
        if head is not None:
            qualified = head if len(parts) == 1 else head + "." + ".".join(parts[1:])
            self.dispatch(qualified, call if call is not None else node, kind, call)
        return True

    def dispatch(self, qualified: str, node: cst.CSTNode, kind: str, call: cst.Call | None = None,
                 statement: cst.CSTNode | None = None) -> None:
        entry = self.catalogue.lookup_api(qualified)
        if entry is None:
            return
        if entry.scope == "import" and kind != "import":
            return
        if entry.scope == "ref" and kind == "import":
            return
        rule = self.by_name.get(entry.rule)
        if rule is not None:
            rule.on_reference(Reference(qualified, entry, node, kind, call, statement), self.ctx)

    def _name(self, node: cst.Name) -> None:
        self.reference(node, "ref")

    def _attribute(self, node: cst.Attribute) -> None:
        if not self.reference(node, "ref"):
            self.walk(node.value)  # e.g. f(x).cuda: the call inside still matters

    def _call(self, node: cst.Call) -> None:
        if not self.reference(node.func, "call", call=node):
            self.walk(node.func)
        self.walk_all(node.args)

    def _arg(self, node: cst.Arg) -> None:
        self.walk(node.value)  # the keyword is a parameter name, not a reference

    # -- bindings ------------------------------------------------------------------------------
    def _import(self, node: cst.Import) -> None:
        for alias in node.names:
            full = dotted_name(alias.name)
            if full is None:
                continue
            if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
                self.ctx.resolver.bind(alias.asname.name.value, full)
            else:
                top = full.split(".", 1)[0]
                self.ctx.resolver.bind(top, top)
            self.dispatch(full, alias, "import", statement=node)

    def _import_from(self, node: cst.ImportFrom) -> None:
        module = dotted_name(node.module) if node.module is not None else None
        relative = bool(node.relative)
        if isinstance(node.names, cst.ImportStar):
            return
        for alias in node.names:
            name = alias.name.value if isinstance(alias.name, cst.Name) else dotted_name(alias.name)
            if name is None:
                continue
            local = alias.asname.name.value if (alias.asname is not None and isinstance(alias.asname.name, cst.Name)) else name
            if relative or module is None:
                self.ctx.resolver.bind(local)
                continue
            qualified = f"{module}.{name}"
            self.ctx.resolver.bind(local, qualified)
            self.dispatch(qualified, alias, "import", statement=node)

    def bind_target(self, target: cst.BaseExpression, qualified: str | None = None, fallback: bool = False) -> None:
        """Bind the names an assignment target introduces; attribute targets are references."""
        if isinstance(target, cst.Name):
            self.ctx.resolver.bind(target.value, qualified, fallback)
        elif isinstance(target, (cst.Tuple, cst.List)):
            for element in target.elements:
                self.bind_target(element.value, None, fallback)
        elif isinstance(target, cst.StarredElement):
            self.bind_target(target.value, None, fallback)
        else:
            self.walk(target)

    def _alias_of(self, value: cst.BaseExpression | None) -> str | None:
        """`x = torch.cuda` makes x an alias of torch.cuda."""
        if value is None or not isinstance(value, (cst.Name, cst.Attribute)):
            return None
        return self.ctx.qualify(value)

    def _assign(self, node: cst.Assign) -> None:
        if type(node.value) is cst.Subscript and self._type_alias(node.value):
            self._as_types(node.value)  # `_P = Union[A, torch.cuda.Stream]`: it names types, runs nothing
        else:
            self.walk(node.value)
        alias = self._alias_of(node.value)
        fallback = self.in_except > 0 or (isinstance(node.value, cst.Name) and node.value.value == "None")
        for target in node.targets:
            self.record(target.target, node.value)
            self.bind_target(target.target, alias, fallback)

    def record(self, target: cst.BaseExpression, value: cst.BaseExpression | None) -> None:
        """Keep what a name or `self.name` is assigned (guards follow flags through it without
        parsing again; None: something not known, a loop variable, a parameter); `a, b = x, y`
        assigns element by element."""
        assigned = self.ctx.assigned
        if isinstance(target, cst.Name):
            assigned.setdefault(target.value, []).append(value)
        elif isinstance(target, cst.Attribute):
            if isinstance(target.value, cst.Name) and target.value.value == "self":
                assigned.setdefault("self." + target.attr.value, []).append(value)
        elif isinstance(target, (cst.Tuple, cst.List)):
            values = value.elements if isinstance(value, (cst.Tuple, cst.List)) else ()  # type: ignore[union-attr]
            if len(values) == len(target.elements) and not any(
                    isinstance(e, cst.StarredElement) for e in (*values, *target.elements)):
                for element, item in zip(target.elements, values, strict=True):
                    self.record(element.value, item.value)
            else:  # `a, b = f()`: each is assigned something unknown
                for element in target.elements:
                    self.record(element.value, None)
        elif isinstance(target, cst.StarredElement):
            self.record(target.value, None)

    def _type_alias(self, value: cst.Subscript) -> bool:
        """`Union[...]`, `Optional[...]`, `typing.Type[...]`: a type alias's value, as the module's
        imports resolve it (typing or typing_extensions)."""
        qualified = self.ctx.qualify(value.value) or ""
        return qualified.partition(".")[0] in _TYPING and qualified.rpartition(".")[2] in _ALIAS_FORMS

    def _annotation(self, node: cst.Annotation) -> None:
        self._as_types(node.annotation)

    def _as_types(self, node: cst.CSTNode) -> None:
        # Rules ask ctx.in_annotation instead of collecting every node of every annotation.
        self.ctx.in_annotation += 1
        try:
            self.walk(node)
        finally:
            self.ctx.in_annotation -= 1

    def _ann_assign(self, node: cst.AnnAssign) -> None:
        self.walk(node.annotation)
        if node.value is not None:
            self.walk(node.value)
            self.record(node.target, node.value)
        self.bind_target(node.target, self._alias_of(node.value))

    def _aug_assign(self, node: cst.AugAssign) -> None:
        self.walk(node.value)
        if isinstance(node.target, cst.Name):
            self.record(node.target, None)
            self.ctx.resolver.bind(node.target.value)
        else:
            self.walk(node.target)

    def _for(self, node: cst.For) -> None:
        self.walk(node.iter)
        self.record(node.target, None)
        self.bind_target(node.target)
        self.walk(node.body)
        if node.orelse is not None:
            self.walk(node.orelse)

    def _with_item(self, node: cst.WithItem) -> None:
        self.walk(node.item)
        if node.asname is not None:
            self.record(node.asname.name, None)
            self.bind_target(node.asname.name)

    def _except(self, node: cst.ExceptHandler) -> None:
        if node.type is not None:
            self.walk(node.type)
        if node.name is not None:
            self.bind_target(node.name.name)
        self.in_except += 1
        self.walk(node.body)
        self.in_except -= 1

    def _named_expr(self, node: cst.NamedExpr) -> None:
        self.walk(node.value)
        self.record(node.target, node.value)
        self.bind_target(node.target)

    def _global(self, node: cst.Global | cst.Nonlocal) -> None:
        if isinstance(node, cst.Global):
            for item in node.names:
                self.ctx.resolver.declare_global(item.name.value)

    # -- scopes ----------------------------------------------------------------------------------
    def _params(self, params: cst.Parameters) -> list[str]:
        """Walk defaults and annotations (evaluated outside); return the parameter names."""
        names: list[str] = []
        every = [*params.posonly_params, *params.params, *params.kwonly_params]
        for extra in (params.star_arg, params.star_kwarg):
            if isinstance(extra, cst.Param):
                every.append(extra)
        for param in every:
            handlers = self.handlers.get(cst.Param)
            if handlers:
                for handler in handlers:
                    handler(param, self.ctx)
            if param.default is not None:
                self.walk(param.default)
            if param.annotation is not None:
                self.walk(param.annotation)
            names.append(param.name.value)
        return names

    def _function(self, node: cst.FunctionDef) -> None:
        self.walk_all(node.decorators)
        names = self._params(node.params)
        if node.returns is not None:
            self.walk(node.returns)
        self.ctx.resolver.bind(node.name.value)
        self.ctx.resolver.push("function", node.name.value)
        assigned = self.ctx.assigned
        for name in names:
            self.ctx.resolver.bind(name)
            assigned.setdefault(name, []).append(None)  # a parameter: whatever the caller passes
        self.walk(node.body)
        self.ctx.resolver.pop()

    def _lambda(self, node: cst.Lambda) -> None:
        names = self._params(node.params)
        self.ctx.resolver.push("lambda")
        for name in names:
            self.ctx.resolver.bind(name)
        self.walk(node.body)
        self.ctx.resolver.pop()

    def _class(self, node: cst.ClassDef) -> None:
        self.walk_all(node.decorators)
        self.walk_all(node.bases)
        self.walk_all(node.keywords)
        self.ctx.resolver.bind(node.name.value)
        self.ctx.resolver.push("class", node.name.value)
        self.walk(node.body)
        self.ctx.resolver.pop()

    def _comprehension(self, node: cst.BaseComp) -> None:
        self.ctx.resolver.push("comprehension")
        self.walk(node.for_in)
        if isinstance(node, cst.DictComp):
            self.walk(node.key)
            self.walk(node.value)
        else:
            self.walk(node.elt)
        self.ctx.resolver.pop()

    def _comp_for(self, node: cst.CompFor) -> None:
        self.walk(node.iter)
        self.bind_target(node.target)
        self.walk_all(node.ifs)
        if node.inner_for_in is not None:
            self.walk(node.inner_for_in)

"""When a CUDA seed call repeats a seeding that already covers CUDA (`torch.manual_seed(s)` seeds
every device): the one judgement the `redundant` context (auditor/analysis/placement.py) and the
deletion fix of cuda-rng-seed (F22) share, so that "Delete it" is said exactly where it is done.

`torch.cuda.manual_seed_all(s)` is redundant beside `seeder(s)` only when both see the same seed
value and nothing between them draws random numbers:
- the two are statements of the same block;
- the seed expression has no side effect and reads the same value at both (no call, no
  `next(it)`, no walrus; none of the names it reads is bound between them: `seed = seed + rank`);
- every statement between them is another seeding call (`random.seed(s)`, `np.random.seed(s)`),
  an import or an assignment without calls (`cudnn.deterministic = True`): a `torch.randn(..., device="cuda")`
  between them would draw from the generator the CUDA call resets."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import libcst as cst

from auditor.python.tree import descendants

_IMPURE = (cst.Call, cst.Await, cst.Yield, cst.NamedExpr, cst.Lambda, cst.ListComp, cst.SetComp, cst.DictComp,
           cst.GeneratorExp)


@dataclass(frozen=True)
class Seeding:
    """The seeding call that makes a CUDA seed redundant."""

    seeder: str  # qualified name: torch.manual_seed
    seed: str  # the seed's code, whitespace collapsed
    statement: cst.SimpleStatementLine


def seed_text(node: cst.CSTNode, code: Callable[[cst.CSTNode], str]) -> str:
    return " ".join(code(node).split())


def redundant_seeding(statement: cst.CSTNode, block: Sequence[cst.CSTNode], seed: cst.BaseExpression,
                      qualify: Callable[[cst.CSTNode], str | None], seeders: frozenset[str] | set[str],
                      code: Callable[[cst.CSTNode], str]) -> Seeding | None:
    """The seeding among `block`'s statements that makes the CUDA seed call standing alone in
    `statement` (with argument `seed`) redundant, or None."""
    if not _pure(seed):
        return None
    wanted = seed_text(seed, code)
    names = _names_read(seed)
    position = next((i for i, s in enumerate(block) if s is statement), None)
    if position is None:
        return None
    for step in (-1, 1):  # the nearest seeding before, then after
        index = position + step
        while 0 <= index < len(block):
            other = block[index]
            found = _seeding(other, qualify, seeders)
            if found is not None and found[1] is not None and seed_text(found[1], code) == wanted:
                return Seeding(found[0], wanted, other)  # type: ignore[arg-type]
            if not _quiet(other, names, qualify):
                break
            index += step
    return None


def _pure(node: cst.CSTNode) -> bool:
    return not any(isinstance(n, _IMPURE) for n in descendants(node))


def _names_read(node: cst.CSTNode) -> set[str]:
    return {n.value for n in descendants(node) if isinstance(n, cst.Name)}


def _seeding(statement: cst.CSTNode, qualify: Callable[[cst.CSTNode], str | None],
             seeders: frozenset[str] | set[str]) -> tuple[str, cst.BaseExpression | None] | None:
    """(qualified seeder, its seed argument) when the statement is one call to a known seeder."""
    if not isinstance(statement, cst.SimpleStatementLine) or len(statement.body) != 1:
        return None
    small = statement.body[0]
    call = small.value if isinstance(small, cst.Expr) else None
    if not isinstance(call, cst.Call):
        return None
    qualified = qualify(call.func)
    if qualified not in seeders:
        return None
    first = call.args[0] if call.args and call.args[0].keyword is None and not call.args[0].star else None
    return qualified, first.value if first is not None else None


def _quiet(statement: cst.CSTNode, names: set[str], qualify: Callable[[cst.CSTNode], str | None]) -> bool:
    """A statement that neither draws random numbers nor changes the seed's value: a seeding call
    of any library, or a simple assignment without calls that binds none of `names`."""
    if not isinstance(statement, cst.SimpleStatementLine):
        return False
    for small in statement.body:
        if isinstance(small, cst.Expr) and isinstance(small.value, cst.Call):
            call = small.value
            callee = call.func.attr.value if isinstance(call.func, cst.Attribute) else \
                call.func.value if isinstance(call.func, cst.Name) else ""
            if "seed" not in callee.lower() or not all(_pure(a.value) for a in call.args):
                return False
            continue
        if isinstance(small, (cst.Assign, cst.AnnAssign, cst.AugAssign)):
            if not _pure(small):
                return False
            targets = [t.target for t in small.targets] if isinstance(small, cst.Assign) else [small.target]
            if any(n.value in names for t in targets for n in descendants(t) if isinstance(n, cst.Name)):
                return False
            continue
        if isinstance(small, (cst.Import, cst.ImportFrom)) and not isinstance(small.names, cst.ImportStar):
            bound = {(a.asname.name if a.asname else a.name) for a in small.names}
            if any(n.value in names for b in bound for n in descendants(b) if isinstance(n, cst.Name)):
                return False
            continue
        if isinstance(small, cst.Pass):
            continue
        return False
    return True


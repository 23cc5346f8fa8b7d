"""How much work one finding is on one target: a bucket of rules/plan/plan.toml [effort] order
(minutes, hours, days, no equivalent) and the reason, step by step. Data in the catalogue; the
order of the steps here:

1. the rule's bucket ([effort.rules], else `default`);
2. "no equivalent" when the vendor says nothing replaces it on the target ([effort.no_equivalent],
   or a package whose replacement there says nothing does): final;
3. minutes when it runs on the target as it is (effect `works`) or `audit --fix` rewrites it;
4. its contexts (each of a "+"-joined context) and its component's kind shift it: the strongest
   shift applies, once (test code in a tests folder is one reason to make it smaller, not two),
   never below the first bucket; every reason that applies is said;
5. a component kind marked `optional` ([effort.component]: examples, tests, benchmarks, docs)
   makes the item optional, whatever its bucket: not what the repository ships."""

from __future__ import annotations

from dataclasses import dataclass

from auditor.fix.applicability import fixable
from auditor.model import Finding
from auditor.plan.catalogue import Effort, Shift


@dataclass(frozen=True)
class Cost:
    bucket: str
    reason: str
    optional: bool = False  # in a component the repository does not ship (an example, a test)


def finding_cost(finding: Finding, target: str, effort: Effort, *, replacement: str | None = None,
                 component_kind: str | None = None, fixed: bool | None = None) -> Cost:
    """The bucket of `finding` on `target`; `replacement` is what replaces its package there, if
    any; `component_kind` the kind of the component its file belongs to (None: not known); `fixed`
    whether `audit --fix` rewrites it (None: its own fix says, `fixable`)."""
    part = effort.component.get(component_kind) if component_kind else None
    optional = part is not None and part.optional
    bucket, reason = effort.rules.get(finding.name, effort.default)
    none = effort.no_equivalent.get(finding.name)
    if none is not None and target in none[0]:
        return _with_part(Cost(effort.order[-1], none[1].text, optional), part, target)
    if replacement is not None and any(p.search(replacement) for p in effort.nothing_replaces):
        return _with_part(Cost(effort.order[-1], f"nothing replaces it on {target}: {replacement}", optional), part, target)
    if finding.targets.get(target) == "works":
        return Cost(effort.order[0], effort.works.format(target=target), optional)
    if fixable(finding) if fixed is None else fixed:
        return Cost(effort.order[0], effort.fixed, optional)
    shifts = [effort.context[name] for name in (finding.context or "").split("+") if name in effort.context]
    if part is not None:
        shifts.append(part)
    if shifts:
        bucket = shifted(effort.order, bucket, min(s.shift for s in shifts))
    return Cost(bucket, "; ".join([reason, *(s.reason.format(target=target) for s in shifts)]), optional)


def _with_part(cost: Cost, part: Shift | None, target: str) -> Cost:
    """A final bucket keeps its size; an optional component still says why it matters less."""
    if part is None or not part.optional:
        return cost
    return Cost(cost.bucket, f"{cost.reason}; {part.reason.format(target=target)}", cost.optional)


def shifted(order: tuple[str, ...], bucket: str, by: int) -> str:
    """`bucket` moved by `by` places, staying among the work buckets (never into or out of the last)."""
    index = order.index(bucket)
    if index == len(order) - 1:
        return bucket
    return order[max(0, min(len(order) - 2, index + by))]


def largest(order: tuple[str, ...], buckets: list[str]) -> str | None:
    """The largest of `buckets` (None when there are none)."""
    return max(buckets, key=order.index) if buckets else None


def largest_cost(order: tuple[str, ...], costs: list[Cost]) -> Cost | None:
    """The largest of the costs that are not optional, else of all (None when there are none): an
    example's missing equivalent does not make the shipped work "no equivalent"."""
    counted = [c for c in costs if not c.optional] or costs
    return max(counted, key=lambda c: order.index(c.bucket)) if counted else None

"""How much work one finding is on one target: a bucket of rules/plan/plan.toml [effort] order
(minutes, hours, days, no equivalent) and the reason, step by step. Data in the catalogue; the
order of the steps here:

1. the rule's bucket ([effort.rules], else `default`);
2. "no equivalent" when the vendor says nothing replaces it on the target ([effort.no_equivalent],
   or a package whose replacement there says nothing does): final;
3. minutes when it runs on the target as it is (effect `works`) or `audit --fix` rewrites it;
4. its context and its component kind shift it down (never below the first bucket)."""

from __future__ import annotations

from dataclasses import dataclass

from auditor.fix.applicability import fixable
from auditor.model import Finding
from auditor.plan.catalogue import Effort


@dataclass(frozen=True)
class Cost:
    bucket: str
    reason: str


def finding_cost(finding: Finding, target: str, effort: Effort, *, replacement: str | None = None,
                 component_kind: str | None = None) -> Cost:
    """The bucket of `finding` on `target`; `replacement` is what replaces its package there, if any."""
    bucket, reason = effort.rules.get(finding.name, effort.default)
    none = effort.no_equivalent.get(finding.name)
    if none is not None and target in none[0]:
        return Cost(effort.order[-1], none[1].text)
    if replacement is not None and any(p.search(replacement) for p in effort.nothing_replaces):
        return Cost(effort.order[-1], f"nothing replaces it on {target}: {replacement}")
    if finding.targets.get(target) == "works":
        return Cost(effort.order[0], effort.works.format(target=target))
    if fixable(finding):
        return Cost(effort.order[0], effort.fixed)
    reasons = [reason]
    for table, key in ((effort.context, finding.context), (effort.component, component_kind)):
        shift = table.get(key) if key else None
        if shift is not None:
            bucket = shifted(effort.order, bucket, shift.shift)
            reasons.append(shift.reason.format(target=target))
    return Cost(bucket, "; ".join(reasons))


def shifted(order: tuple[str, ...], bucket: str, by: int) -> str:
    """`bucket` moved by `by` places, staying among the work buckets (never into or out of the last)."""
    index = order.index(bucket)
    if index == len(order) - 1:
        return bucket
    return order[max(0, min(len(order) - 2, index + by))]


def largest(order: tuple[str, ...], buckets: list[str]) -> str | None:
    """The largest of `buckets` (None when there are none)."""
    return max(buckets, key=order.index) if buckets else None

"""The plan as the HTML page gets it: the JSON plan with each step's items cut to the largest
`PAGE_ITEMS`, so that a large tree's page stays small enough to attach to a CI run (on the whole
corpus step 3 alone held 9,420 items, 4.6 MB of the page). Every finding is still on the page, in
its findings list, and `--format json` keeps every item."""

from __future__ import annotations

PAGE_ITEMS = 100  # items shown per step


def for_page(document: dict, order: tuple[str, ...], limit: int | None = None) -> dict:
    """A copy of `document` (a plan, or a ranking as it is) whose steps keep their `limit` largest
    items (the ones that are not optional first, then by effort, in the plan's order) and say in
    `more` how many were left out (`limit` None: PAGE_ITEMS)."""
    if "steps" not in document:
        return document
    keep = PAGE_ITEMS if limit is None else limit
    return {**document, "steps": [_cut(step, order, keep) for step in document["steps"]]}


def _cut(step: dict, order: tuple[str, ...], limit: int) -> dict:
    items = step["items"]
    if len(items) <= limit:
        return {**step, "more": 0}

    def size(index: int) -> tuple[bool, int]:
        effort = items[index].get("effort")
        return items[index].get("optional", False), -(order.index(effort) if effort in order else -1)

    kept = sorted(sorted(range(len(items)), key=size)[:limit])
    return {**step, "items": [items[i] for i in kept], "more": len(items) - limit}

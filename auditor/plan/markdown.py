"""The plan (and the ranking) as markdown: the answer first, then the seven steps, then the score
after `audit --fix`, what the plan could not see and the reader's questions. Untrusted text
(paths, snippets, messages) is put in code spans or escaped so it cannot shape the page."""

from __future__ import annotations

import re

_SPECIAL = re.compile(r"([\\\[\]<>|*])")  # what could make a link, HTML, a table cell or emphasis
_PIPE = re.compile(r"(?<!\\)\|")


def esc(text: object) -> str:
    """Text from the scanned repository, shown as plain text in markdown: no link, no HTML, one
    line. Code spans stay when their backticks pair up (an odd one is escaped), and their inside is
    left as it is: markdown shows a code span literally, so an escape there would show too."""
    value = " ".join(str(text).split())
    if value.count("`") % 2:
        return _SPECIAL.sub(r"\\\1", value).replace("`", "\\`")
    parts = value.split("`")
    return "`".join(part if i % 2 else _SPECIAL.sub(r"\\\1", part) for i, part in enumerate(parts))


def cell(text: str) -> str:
    """Markdown made safe for a table cell: every pipe escaped, in code spans too (GFM reads `\\|` there)."""
    return _PIPE.sub(r"\\|", text)


def code(text: object) -> str:
    value = " ".join(str(text).split()).replace("`", "'")
    return f"`{value}`"


def _place(item: dict) -> str:
    if not item.get("path"):
        return ""
    return " — " + code(f"{item['path']}:{item['line']}" if item.get("line") else item["path"])


def _effort(item: dict) -> str:
    return f" **[{item['effort']}]**" if item.get("effort") else ""


def _parts(item: dict, split: bool) -> str:
    """The components an item is in, when the plan is split into several; optional said so."""
    names = ", ".join(esc(name) for name in item.get("components") or []) if split else ""
    optional = "optional" if item.get("optional") else ""
    tag = "; ".join(part for part in (f"in {names}" if names else "", optional) if part)
    return f" *({tag})*" if tag else ""


def _components(plan: dict) -> list[str]:
    """The headline per component: verdict and score on the target and what blocks it first."""
    parts = plan["headline"].get("components") or []
    if len(parts) < 2:  # one component is the headline itself
        return []
    lines = ["", "By component (the headline judges what ships; the others are judged on their own):", "",
             f"| component | kind | verdict on {plan['target']} | score | what blocks it first |", "|---|---|---|---|---|"]
    for part in parts:
        blockers = part["blockers"]
        first = (esc(blockers[0]["why"]) + _place(blockers[0]) + (f" (+{len(blockers) - 1} more)" if len(blockers) > 1 else "")
                 if blockers else "nothing")
        shipped = " (ships)" if part["shipped"] else ""
        lines.append(f"| {esc(part['name'])}{shipped} | {part['kind']} | {part['verdict']} | {part['score']} | {cell(first)} |")
    return lines


def _fact_line(fact: dict) -> str:
    source = f" ({fact['source']})" if fact.get("source") else ""
    flag = " *(unverified)*" if fact.get("status") == "unverified" else ""
    return f"{fact['text']}{flag}{source}"


def render_plan(plan: dict) -> str:
    lines = [f"# Migration plan: {plan['display']} (`{plan['target']}`)", ""]
    head, after = plan["headline"], plan["after_fixes"]
    lines.append(f"**Verdict: {head['verdict']}**, score {head['score']} on {plan['target']}; "
                 f"after `audit --fix` about {after['score']} (an estimate: {after['fixed']} finding(s) rewritten). "
                 + esc(head["summary"]))  # it names the shipped components: repository text
    if head["blockers"]:
        lines += ["", "What blocks it:"]
        lines += [f"- {esc(b['why'])}{_place(b)}" for b in head["blockers"]]
    lines += _components(plan)
    split = len(head.get("components") or []) > 1
    for step in plan["steps"]:
        lines += ["", f"## {step['number']}. {step['title']}" + (f" — effort: {step['effort']}" if step["effort"] else ""),
                  "", step["summary"]]
        lines += _step_body(step, split)
    lines += ["", "## Score after automatic fixes", "",
              f"About **{after['score']}** ({after['verdict']}) on {plan['target']}, from {head['score']}: {after['how']} "
              "(an estimate)."]
    lines += ["", "## What this plan could not see", ""] + [f"- {u}" for u in plan["unseen"]]
    lines += ["", "## Questions for you", ""] + [f"- {q}" for q in plan["questions"]]
    return "\n".join(lines) + "\n"


def _step_body(step: dict, split: bool = False) -> list[str]:
    lines: list[str] = []
    if step["key"] == "hardware-choices":
        if step.get("owner"):
            lines += ["", f"Closest to owning the device choice today: {code(step['owner'])}."]
        for group, item in zip(step["groups"], step["items"], strict=True):  # an item per group, in order
            lines += ["", f"- **{group['title']}** [{group['effort']}]{_parts(item, split)}: {group['lines']} line(s) in "
                          f"{len(group['files'])} file(s), {group['fixed_by_audit_fix']} by `audit --fix`. "
                          f"Owner: {group['owner']}"]
            lines += [f"  - {code(path)}" for path in group["files"][:8]]
            lines += [f"  - {esc(s['what'])}: {code(s['text'])} — {code(str(s['path']) + ':' + str(s['line']))}"
                      for s in group["signals"][:5]]
        return lines
    if step["key"] == "target-changes":
        if step.get("stack"):
            lines += ["", f"Moves to: {_fact_line(step['stack'])}."]
        if step["notes"]:
            lines += ["", "From the vendor's notes:"] + [f"- *{n['topic']}*: {_fact_line(n)}" for n in step["notes"]]
        legacy = step.get("legacy")
        if legacy:
            used = "the repository is on it" if legacy["in_use"] else "not in use here"
            lines += ["", f"Legacy path, apart: {legacy['title']} ({used}; {legacy['source']})"]
            lines += [f"- *{n['topic']}*: {_fact_line(n)}" for n in legacy["changes"]]
    if step["key"] == "capacity":
        for entry in step["checklist"]:
            lines.append(f"- [ ] **{entry['item']}**: {entry['fact']['text'] if entry['fact'] else entry['text']}"
                         + (" *(unverified)*" if entry["fact"] and entry["fact"]["status"] == "unverified" else ""))
            lines += [f"  - found: {esc(s['what'])} {code(s['text'])} — {code(str(s['path']) + ':' + str(s['line']))}"
                      for s in entry["signals"][:3]]
        return lines
    if step["key"] in ("parity", "benchmark") and step.get("written"):
        lines += ["", "Written: " + ", ".join(code(p) for p in step["written"])]
    if step["key"] == "dependencies":
        for item in step["items"]:
            where = ", ".join(code(f"{p['path']}:{p['line']}") for p in item["places"][:4])
            lines.append(f"- {esc(item['text'])}{_effort(item)}{_parts(item, split)} — {where}")
        return lines
    if step["items"]:
        lines.append("")
        shown = step["items"][:40]
        lines += [f"- {esc(i['text'])}{_effort(i)}{_parts(i, split)}{_place(i)}" for i in shown]
        if len(step["items"]) > len(shown):
            lines.append(f"- … and {len(step['items']) - len(shown)} more (`--format json` lists them all)")
    return lines


def render_ranking(ranking: dict) -> str:
    lines = ["# Which target first", "", "| # | target | verdict | score | dependency changes | points |",
             "|---|---|---|---|---|---|"]
    for row in ranking["ranking"]:
        lines.append(f"| {row['rank']} | {row['display']} (`{row['target']}`) | {row['verdict']} | {row['score']} | "
                     f"{row['dependencies']} | {row['points']} |")
    lines += ["", "Why:"]
    for row in ranking["ranking"]:
        lines.append(f"- `{row['target']}`: " + "; ".join(row["why"]))
    if ranking["tools"]:
        lines += ["", "Tools in use: " + ", ".join(ranking["tools"]) + "."]
    lines += ["", ranking["workload"]]
    if ranking["edge"]:
        lines += ["", ranking["edge"]]
    lines += ["", "Then: `audit plan PATH --target T` for the chosen target.",
              "", "## What this ranking could not see", ""] + [f"- {u}" for u in ranking["unseen"]]
    lines += ["", "## Questions for you", ""] + [f"- {q}" for q in ranking["questions"]]
    return "\n".join(lines) + "\n"

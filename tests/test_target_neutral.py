"""No message or suggestion lists targets by hand: the targets a finding raises, degrades or works
on are rendered from its effects (`{raising_targets}`, `{degrading_targets}`, `{working_targets}`)
and per-target facts from the registry (`{visibility_variables}`, ...), so a new target can never
leave a stale "raises on TPU, Trainium, MPS, XPU, CPU" behind."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

from auditor import targets
from auditor.catalogue_check import template_fields
from auditor.checks.base import COMMON_FIELDS
from auditor.checks.registry import all_rules

ROOT = Path(__file__).resolve().parent.parent
# Catalogue fields whose text becomes part of a finding's message or suggestion (or a verdict's reason).
TEXT_KEYS = {"replacement", "note", "what", "action", "why", "instead", "support", "message", "suggestion",
             "dependency_message", "import_message", "integration_message"}


def _vocabulary() -> re.Pattern:
    """Every way a text names a target: its name, display name, sentence form, vendor, guard and
    sibling words (ROCm, AMD, hip, Intel, sycl, Apple, Metal, XLA, Neuron, Ascend, the CPU, ...)."""
    words: set[str] = set()
    for t in targets.registry().targets:
        words.update({t.name, t.display, *t.words, *t.siblings})
        words.update(w for w in (t.called, t.vendor) if w)
    words.update({"Intel XPU", "Apple MPS", "macOS"})
    alternatives = "|".join(sorted(map(re.escape, words), key=len, reverse=True))
    one = rf"(?<![\w.`/-])(?:{alternatives})(?![\w`/-])"
    return re.compile(rf"{one}(?:\s*(?:,|/|\band\b|\bor\b|, and|, or)\s*(?:the\s+)?{one})+", re.IGNORECASE)


LIST = _vocabulary()


def hand_written_lists(text: str) -> list[str]:
    """Runs of two or more target names outside code spans: "TPU, Trainium and MPS"."""
    return [m.group(0) for m in LIST.finditer(re.sub(r"`[^`]*`", "``", text))]


def test_the_detector_finds_what_the_issue_describes():
    assert hand_written_lists("raises on TPU, Trainium, MPS, XPU, CPU") == ["TPU, Trainium, MPS, XPU, CPU"]
    assert hand_written_lists("runs on NVIDIA, AMD and Intel GPUs only") == ["AMD and Intel"]
    assert hand_written_lists("no backend for TPU or Trainium") == ["TPU or Trainium"]
    assert hand_written_lists("`torch.xpu.x`, `torch.mps.y` through the device module") == []  # code is not a list
    assert hand_written_lists("raises on {raising_targets}; ROCm maps CUDA") == []  # one vendor fact is not a list


def _rule_texts():
    for rule in all_rules():
        for attribute in ("message", "suggestion", "subject"):
            yield f"{rule.code} {attribute}", getattr(rule, attribute, "") or ""


def _catalogue_texts():
    for path in sorted((ROOT / "rules").glob("*.toml")):
        if path.name == targets.FILE:
            continue  # the registry is where per-target facts belong
        yield from _walk(path.stem, tomllib.loads(path.read_text(encoding="utf-8")), "")


def _walk(stem: str, value, where: str):
    if isinstance(value, dict):
        for key, item in value.items():
            inner = f"{where}.{key}"
            if isinstance(item, str) and (key in TEXT_KEYS or stem == "verdicts"):
                yield f"rules/{stem}.toml {inner}", item
            else:
                yield from _walk(stem, item, inner)
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _walk(stem, item, f"{where}[{index}]")


def test_no_message_or_suggestion_lists_targets_by_hand():
    texts = [*_rule_texts(), *_catalogue_texts()]
    assert len(texts) > 500  # every rule's templates and every catalogue text that reaches a finding
    offenders = [f"{where}: {hits}" for where, text in texts if (hits := hand_written_lists(text))]
    assert offenders == [], "render the targets from the effects or the registry instead:\n" + "\n".join(offenders)


def test_the_target_fields_are_every_rules_to_use():
    assert {"raising_targets", "degrading_targets", "working_targets", *targets.FACT_FIELDS} <= COMMON_FIELDS
    used = {name for rule in all_rules() for attribute in ("message", "suggestion")
            for name in template_fields(getattr(rule, attribute))}
    assert {"raising_targets", "degrading_targets", "working_targets"} <= used


def test_a_template_names_only_the_effect_classes_its_rule_has(scan_source):
    """A message saying "raises on {raising_targets}" for a rule that raises nowhere would read "raises
    on no target": each rule's templates use the classes its effects fill."""
    for rule in all_rules():
        values = set(rule.effects().values())
        for attribute in ("message", "suggestion"):
            for name, effect in (("raising_targets", "raises"), ("degrading_targets", "degrades"),
                                 ("working_targets", "works")):
                if name in template_fields(getattr(rule, attribute)):
                    assert effect in values, (rule.code, attribute, name)


def test_rendered_messages_follow_the_effects(scan_source):
    result = scan_source({"train.py": "import torch\ntorch.cuda.synchronize()\nm = M().cuda()\n"})
    by_rule = {f.rule: f for f in result.findings}
    raising = [t for t, e in by_rule["LK204"].targets.items() if e == "raises"]
    assert f"({targets.displays(raising)})" in by_rule["LK204"].message
    assert by_rule["LK102"].message.endswith(f"it raises on {targets.displays(raising)}.")

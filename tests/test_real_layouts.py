"""The score and the verdict tell the truth on small realistic projects (fixtures/): a LoRA script
hard-wired to bitsandbytes 8-bit loading, and one server written once with a per-device dispatch
layer and once with its CUDA calls inline."""

from __future__ import annotations

from pathlib import Path

import pytest

from auditor import targets
from auditor.config.settings import Settings
from auditor.pipeline.scan import scan
from auditor.portability.score import compute_scores
from auditor.portability.verdict import verdicts

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"


def audit(name: str):
    result = scan([str(FIXTURES / name)], Settings(cache=False, jobs=1))
    assert not result.errors, result.errors
    return result, compute_scores(result.findings), verdicts(result.findings)


def test_lora_script_hard_wired_to_8bit_loading_is_no_a_on_tpu():
    result, scores, verdict = audit("lora-script")
    assert [f.rule for f in result.findings if f.path == "train_lora.py"] == ["LK412"]
    for target in ("tpu", "trainium"):
        assert scores.grades[target] != "A" and scores.targets[target] < 75
        assert verdict[target].verdict == "fails"
        assert verdict[target].reasons[0].rule == "LK412" and verdict[target].reasons[0].line == 24
    # bitsandbytes>=0.50 runs on NVIDIA, AMD, Intel and the CPU: there only the container fails (an
    # NVIDIA-only base image, LK509, with no alternative image in the repository)
    for target in ("rocm", "xpu", "cpu"):
        assert verdict[target].verdict == "fails"
        assert [r.rule for r in verdict[target].reasons] == ["LK509"]
    assert scores.targets["cpu"] > scores.targets["tpu"] + 20
    script = [f for f in result.findings if f.path != "Dockerfile"]
    assert compute_scores(script).targets["cpu"] == 100 and verdicts(script)["cpu"].verdict == "runs"


def test_a_dispatch_layer_scores_above_the_same_code_inline():
    layered, layered_scores, layered_verdict = audit("dispatch-layer")
    inline, inline_scores, inline_verdict = audit("inline-cuda")
    for target in layered_scores.targets:
        assert layered_scores.targets[target] >= inline_scores.targets[target], target
    for target in ("mps", "xpu", "cpu"):  # a sibling module serves them
        assert layered_scores.targets[target] > inline_scores.targets[target] + 10
        assert layered_verdict[target].verdict == "runs" and inline_verdict[target].verdict == "fails"
    # TPU and Trainium have no module of their own: the layer falls back to its CPU backend there
    assert layered_verdict["tpu"].verdict == "runs-degraded"
    backend = [f for f in layered.findings if f.path == "serve/platforms/cuda.py"]
    assert backend and {f.context for f in backend} == {"backend-module"}
    missing = [t for t in targets.names() if t not in ("mps", "xpu", "cpu") and not targets.has_role(t, "accepts-cuda-calls")]
    assert all(f"{targets.join(missing)} have none" in f.message for f in backend)


@pytest.mark.parametrize("name", ["lora-script", "dispatch-layer", "inline-cuda", "demo-repo"])
def test_messages_never_claim_raises_where_nothing_raises(name):
    result, _, _ = audit(name)
    for f in result.findings:
        if "raises" not in f.targets.values():
            assert " raises" not in f.message.replace("still raises", ""), (f.rule, f.message)

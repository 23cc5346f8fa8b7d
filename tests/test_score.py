"""The score's promises: 100 when clean, monotone, kernels far above deprecations, size-fair."""

from __future__ import annotations

import math
import random

import pytest

from auditor.model import Finding
from auditor.portability.score import compute_scores, grade
from auditor.targets import names as target_names

TARGETS = target_names()  # every target of the registry (rules/targets.toml)

RAISES = {t: ("works" if t == "rocm" else "raises") for t in TARGETS}
DEGRADES = {t: ("works" if t == "rocm" else "degrades") for t in TARGETS}


def finding(rule="LK102", severity="major", path="a.py", line=1, targets=RAISES, name="x"):
    return Finding(path, line, 1, line, 2, rule, name, "device", severity, "m", "s", targets)


def test_clean_code_scores_100():
    scores = compute_scores([])
    assert scores.overall == 100 and set(scores.targets.values()) == {100}
    assert scores.grades["overall"] == "A"


def test_rocm_is_untouched_by_what_works_there():
    scores = compute_scores([finding()])
    assert scores.targets["rocm"] == 100 and scores.targets["tpu"] < 100


def test_monotone_adding_lock_in_never_raises_a_score():
    rng = random.Random(4)
    pool = [finding(rule=f"LK{rng.choice([101, 102, 201, 401, 501])}", severity=rng.choice(["blocker", "major", "minor", "info"]),
                    path=f"f{rng.randrange(8)}.py", line=rng.randrange(1, 50),
                    targets=rng.choice([RAISES, DEGRADES])) for _ in range(60)]
    for _ordering in range(3):  # three random orders of the same pool
        rng.shuffle(pool)
        seen: list[Finding] = []
        previous = compute_scores(seen)
        for item in pool:
            # one rule always has one severity and one effect: keep the first seen for each rule
            if any(s.rule == item.rule and (s.severity, s.targets) != (item.severity, item.targets) for s in seen):
                continue
            seen.append(item)
            current = compute_scores(seen)
            assert current.overall <= previous.overall
            assert all(current.targets[t] <= previous.targets[t] for t in TARGETS)
            previous = current


def test_a_custom_kernel_weighs_far_more_than_a_deprecated_alias():
    kernel = compute_scores([finding(rule="LK401", severity="blocker")]).targets["tpu"]
    alias = compute_scores([finding(rule="LK209", severity="minor", targets=DEGRADES)]).targets["tpu"]
    assert 100 - kernel > 20 * (100 - alias)


def test_size_fair_repeats_in_one_file_cost_no_more_and_spread_costs_sublinearly():
    one = compute_scores([finding()]).targets["tpu"]
    many_lines = compute_scores([finding(line=i) for i in range(1, 51)]).targets["tpu"]
    assert one == many_lines
    two_files = compute_scores([finding(path="a.py"), finding(path="b.py")]).targets["tpu"]
    sixty_four = compute_scores([finding(path=f"f{i}.py") for i in range(64)]).targets["tpu"]
    assert two_files < one
    loss_2, loss_64 = 100 - two_files, 100 - sixty_four
    assert loss_64 < 8 * loss_2  # 32 times the files, far less than 32 times the cost


def test_costs_explain_the_loss():
    scores = compute_scores([finding(rule="LK401", severity="blocker"), finding(rule="LK102")])
    costs = scores.costs["tpu"]
    assert [c.rule for c in costs] == ["LK401", "LK102"]
    assert abs(sum(c.points for c in costs) - (100 - scores.targets["tpu"])) < 0.2


def test_grades():
    assert [grade(s) for s in (100, 90, 89.9, 75, 60, 40, 39.9, 0)] == ["A", "A", "B", "B", "C", "D", "F", "F"]


# -- context and calibration (issue 11) -----------------------------------------------------------

def ctx_finding(context=None, severity="major", targets=RAISES, rule="LK204", path="a.py", line=1):
    return Finding(path, line, 1, line, 2, rule, "x", "cuda-api", severity, "m", "s", targets, context=context)


def test_guarded_costs_less_than_main_and_test_less_again():
    main = compute_scores([ctx_finding()]).targets["tpu"]
    # a guarded call: minor, degrades where skipped (what analysis.apply makes of it)
    guarded = compute_scores([ctx_finding("guarded", "minor", DEGRADES)]).targets["tpu"]
    optional = compute_scores([ctx_finding("optional", "minor", DEGRADES)]).targets["tpu"]
    test = compute_scores([ctx_finding("test")]).targets["tpu"]
    test_guarded = compute_scores([ctx_finding("test+guarded", "minor", DEGRADES)]).targets["tpu"]
    assert main < test < guarded == optional < test_guarded < 100
    assert compute_scores([ctx_finding("own-package", "info", {t: "works" for t in TARGETS})]).targets["tpu"] == 100
    assert compute_scores([ctx_finding("redundant", "info", {t: "works" for t in TARGETS})]).targets["tpu"] == 100


def test_backend_module_costs_only_where_no_sibling_serves():
    effects = {**RAISES, "xpu": "works", "cpu": "works"}  # platforms/cuda.py beside xpu.py and cpu.py
    scores = compute_scores([ctx_finding("backend-module", targets=effects)]).targets
    assert scores["xpu"] == scores["cpu"] == 100 and scores["tpu"] < 100


def test_the_unit_of_kernel_work_is_a_folder():
    one = [finding(rule="LK401", severity="blocker", path="csrc/attn/k.cu")]
    instantiations = [finding(rule="LK401", severity="blocker", path=f"csrc/attn/k_hdim{i}.cu") for i in range(120)]
    headers = [finding(rule="LK401", severity="blocker", path=f"csrc/include/h{i}.cuh") for i in range(5)]
    two = one + [finding(rule="LK401", severity="blocker", path="csrc/norm/n.cu")]

    def lk401(items):
        return compute_scores([replace_name(f, "cuda-source-file") for f in items]).targets["tpu"]

    assert lk401(one) == lk401(instantiations) == lk401(instantiations + headers)
    assert lk401(two) < lk401(one)
    assert lk401(headers) < 100  # headers alone still count once


def test_the_unit_of_a_config_device_value_is_its_folder():
    def lk105(paths):
        return compute_scores([replace_name(finding(rule="LK105", path=p), "cuda-config-device") for p in paths]).targets["tpu"]

    llama = [f"recipes/configs/llama3/{i}.yaml" for i in range(12)]
    assert lk105(llama) == lk105(llama[:1]) > lk105(llama + ["recipes/configs/qwen2/a.yaml"])
    # other rules still count files
    files = [replace_name(finding(rule="LK101", path=p.replace(".yaml", ".py")), "hardcoded-cuda-device") for p in llama]
    assert compute_scores(files).targets["tpu"] < compute_scores(files[:1]).targets["tpu"]


def replace_name(f, name):
    from dataclasses import replace

    return replace(f, name=name)


def test_monotone_with_contexts_severities_and_per_finding_effects():
    rng = random.Random(11)
    contexts = [None, "guarded", "optional", "test", "test+guarded", "display", "backend-module", "own-package"]
    effects = ["works", "degrades", "raises"]
    pool = [ctx_finding(rng.choice(contexts), rng.choice(["blocker", "major", "minor", "info"]),
                        {t: rng.choice(effects) for t in TARGETS}, rule=f"LK{rng.choice([101, 204, 401, 409])}",
                        path=f"d{rng.randrange(3)}/f{rng.randrange(6)}.py", line=rng.randrange(1, 40))
            for _ in range(80)]
    for _ordering in range(3):
        rng.shuffle(pool)
        seen: list[Finding] = []
        previous = compute_scores(seen)
        for item in pool:
            seen.append(item)
            current = compute_scores(seen)
            assert all(current.targets[t] <= previous.targets[t] for t in TARGETS), item
            assert current.overall <= previous.overall
            previous = current



def _cost(score: float) -> float:
    """The points behind a score: score = 100 * exp(-cost / 100)."""
    return -100 * math.log(score / 100)


def test_an_opt_in_feature_costs_a_quarter_of_the_main_path():
    # a move can leave an opt-in feature on NVIDIA: porting it is a choice, weighed as display code is
    main = compute_scores([finding(rule="LK411", severity="blocker")]).targets["tpu"]
    feature = compute_scores([Finding("a.py", 1, 1, 1, 2, "LK411", "x", "kernel", "blocker", "m", "s", RAISES,
                                      context="feature")]).targets["tpu"]
    assert _cost(feature) * 4 == pytest.approx(_cost(main), rel=0.01)  # scores are rounded to 0.1


def test_a_triton_kernel_without_a_fallback_weighs_what_a_cuda_kernel_does(scan_source):
    found = scan_source({"k.py": "import triton\n\n@triton.jit\ndef k(x_ptr):\n    pass\n"}).findings
    triton = [f for f in found if f.rule == "LK403"]
    assert triton and {f.severity for f in triton} == {"blocker"}
    assert all(f.targets["xpu"] == "works" and f.targets["rocm"] == "works" for f in triton)
    # trap: behind an import fallback it is an optional fast path, no blocker
    found = scan_source({"g.py": "try:\n    import triton\nexcept ImportError:\n    triton = None\n"}).findings
    guarded = [f for f in found if f.rule == "LK403" and f.path.endswith("g.py")]
    assert guarded and {f.severity for f in guarded} <= {"minor", "info"}


# -- the judged part: its size and the ties confined to a few of its modules --------------------------

def test_a_part_whose_every_module_holds_the_tie_scores_the_same_at_any_size():
    from auditor.portability.verdict import Part

    def every_module(n: int) -> float:
        ties = [finding(path=f"lib/m{i}.py") for i in range(n)]
        return compute_scores(ties, part=Part(files=n)).targets["tpu"]

    assert every_module(32) == pytest.approx(every_module(128), abs=0.2) == pytest.approx(every_module(512), abs=0.2)
    # up to size_floor (16 modules) the size changes nothing
    ties = [finding(path=f"lib/m{i}.py") for i in range(4)]
    assert compute_scores(ties, part=Part(files=16)).targets == compute_scores(ties).targets


def test_the_same_ties_in_a_larger_part_cost_less():
    from auditor.portability.verdict import Part

    ties = [finding(rule="LK102", path=f"lib/m{i}.py") for i in range(3)] + [finding(rule="LK301", path="lib/d.py")]
    small, large = (compute_scores(ties, part=Part(files=n)).targets["tpu"] for n in (16, 400))
    assert large > small
    # the costs still add up to what the target loses
    scores = compute_scores(ties, part=Part(files=400))
    assert sum(c.points for c in scores.costs["tpu"]) == pytest.approx(100 - scores.targets["tpu"], abs=0.2)


def test_ties_confined_to_a_few_modules_cost_as_a_loss_where_the_part_runs():
    from auditor.portability.verdict import Part, verdicts

    ties = [finding(rule="LK401", severity="blocker", path="lib/kernel.py")]
    confined = Part(files=50)  # 1 of 50 modules: the verdict degrades the part
    assert verdicts(ties, part=confined)["tpu"].verdict == "runs-degraded"
    halved = compute_scores([finding(rule="LK401", severity="blocker", path="lib/kernel.py", targets=DEGRADES)],
                            part=confined).targets["tpu"]
    assert compute_scores(ties, part=confined).targets["tpu"] == halved
    # traps: a one-module package, and the same tie in a file installed with the part, fail it: full cost
    for part in (Part(files=1), Part(files=50, installed=frozenset({"lib/kernel.py"}))):
        assert verdicts(ties, part=part)["tpu"].verdict == "fails"
        assert compute_scores(ties, part=part).targets["tpu"] < halved


def test_monotone_with_a_part_spreading_a_confined_tie_never_raises_a_score():
    from auditor.portability.verdict import Part

    part = Part(files=20)  # share 0.2: four files confine a tie, five fail the part
    seen: list[Finding] = []
    previous = compute_scores(seen, part=part)
    for i in range(8):
        seen.append(finding(rule="LK102", path=f"lib/m{i}.py"))
        current = compute_scores(seen, part=part)
        assert all(current.targets[t] <= previous.targets[t] for t in TARGETS), i
        previous = current

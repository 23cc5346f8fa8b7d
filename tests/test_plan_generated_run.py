"""The generated parity test and benchmark run for real on CPU-only PyTorch: pytest in a
subprocess with the reference and the target both forced to cpu passes, with the stand-in model
and with a user's entry; outputs that differ beyond the agreed tolerances fail it; a target or a
reference that is absent skips it; reference outputs saved on one "machine" are compared on
another; the benchmark prints its line per device.

Importing torch takes seconds, so one subprocess does it once and runs every step: several pytest
sessions (each with its own environment, over a folder of generated files) and the benchmark."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import xml.etree.ElementTree as ElementTree
from pathlib import Path

import pytest

from auditor.plan.devices import registry_devices
from auditor.plan.parity import render_parity_test
from auditor.plan.write import write_tests

# Entries a user might write, and traps: each name is one generated parity test.
CASES = '''
import itertools
import random
import threading

import torch

_calls = itertools.count()


def make_case(batch_size=2, seq_len=16):
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.GELU(), torch.nn.Linear(16, 4))
    return model, torch.randn(batch_size, 8)


class Nested(torch.nn.Module):
    def __init__(self, drift=0):
        super().__init__()
        self.linear = torch.nn.Linear(5, 3)
        self.drift = drift

    def forward(self, x, scale=1.0):
        y = self.linear(x) * scale
        winner = y.argmax(dim=1) + self.drift * next(_calls)
        return {"sum": y.sum(dim=1), "parts": (y.double(), [winner, y > 0]),
                "count": y.numel(), "mean": float(y.mean()), "name": "nested", "nothing": None}


def nested_case():
    return Nested(), {"x": torch.randn(4, 5), "scale": 2.0}


def nested_int_drift():  # one integer deep inside differs on the second run: exact match fails
    return Nested(drift=1), {"x": torch.randn(4, 5)}


class Drifting(torch.nn.Module):
    """Adds `step` times the number of earlier calls: the second device's output differs."""

    def __init__(self, step):
        super().__init__()
        self.step = step
        self.weight = torch.nn.Parameter(torch.ones(4))

    def forward(self, x):
        return x * self.weight + self.step * next(_calls)


def drift_within():  # 1e-7 is inside float32's agreed (1e-4, 1e-5)
    return Drifting(1e-7), torch.ones(3, 4)


def drift_beyond():  # 1e-3 is not
    return Drifting(1e-3), torch.ones(3, 4)


def seeded_noise():  # draws from torch's and Python's generators: seeded alike before each run
    return (lambda x: x + torch.rand_like(x) + random.random()), torch.zeros(3, 3)


def unseeded_noise():  # draws from a generator nobody seeds
    def noisy(x):
        generator = torch.Generator().manual_seed(random.SystemRandom().randrange(2**62))
        return x + torch.rand(x.shape, generator=generator)
    return noisy, torch.zeros(3, 3)


def dtype_flip():  # float32 on the reference, float64 on the target
    return (lambda x: x.double() if next(_calls) % 2 else x), torch.ones(4)


def drift_bf16():  # 1e-2: beyond float32's agreed pair, inside bfloat16's (3e-2, 1e-2)
    return Drifting(1e-2), torch.ones(3, 4)


def nan_both():  # NaN where the reference has NaN is a match
    return (lambda x: x / x), torch.zeros(2)


def nan_target():  # NaN on the target only is not
    calls = itertools.count()
    return (lambda x: x * float("nan") if next(calls) else x), torch.ones(2)


def keys_flip():  # a dict whose keys change between runs
    calls = itertools.count()
    return (lambda x: {"b" if next(calls) else "a": x}), torch.ones(2)


def complex_out():  # complex outputs use their real dtype's pair
    return (lambda x: torch.fft.fft(x)), torch.randn(8)


def float8_out():  # a dtype nobody agreed a tolerance for
    return (lambda x: x.to(torch.float8_e4m3fn)), torch.ones(4)


class Locked(torch.nn.Module):
    """Holds a lock, so it cannot be deep-copied: the test builds it again, same seed."""

    def __init__(self):
        super().__init__()
        self.lock = threading.Lock()
        self.linear = torch.nn.Linear(3, 3)

    def forward(self, x):
        with self.lock:
            return self.linear(x)


def locked_case():
    return Locked(), torch.randn(2, 3)


def bare_model():  # forgets the inputs
    return torch.nn.Linear(2, 2)


class Logged(torch.nn.Module):
    """Notes which copy runs: the benchmark's order of steps, per device."""

    def forward(self, x):
        with open("calls.log", "a") as log:
            print(id(self), file=log)
        return x * 2


def logged_case():
    return Logged(), torch.ones(2)


def rows_only(rows=3):  # no batch_size parameter: the benchmark counts the first input's rows
    return torch.nn.Linear(6, 2), (torch.randn(5, 6),)
'''

# generated test -> (entry, expected outcome, text its message must hold)
ENTRY_CASES = {
    "user": ("parity_cases:make_case", "passed", ""),
    "nested": ("parity_cases:nested_case", "passed", ""),
    "nested_int_drift": ("parity_cases:nested_int_drift", "failed", "output['parts'][1][0]: 4 of 4 values differ (exact match)"),
    "drift_within": ("parity_cases:drift_within", "passed", ""),
    "drift_beyond": ("parity_cases:drift_beyond", "failed", "cpu differs from cpu beyond the agreed tolerances:\n"
                     "output: 12 of 12 values differ beyond rtol=0.0001, atol=1e-05; the greatest difference, 0.001, "
                     "at (0, 0): 1 on the reference, 1.001 on the target"),
    "seeded_noise": ("parity_cases:seeded_noise", "passed", ""),
    "unseeded_noise": ("parity_cases:unseeded_noise", "failed", "values differ beyond rtol=0.0001, atol=1e-05"),
    "drift_bf16": ("parity_cases:drift_bf16", "failed", "values differ beyond rtol=0.0001"),
    "nan_both": ("parity_cases:nan_both", "passed", ""),
    "nan_target": ("parity_cases:nan_target", "failed", "the greatest difference, inf, at (0,): 1 on the reference, "
                   "nan on the target"),
    "complex": ("parity_cases:complex_out", "passed", ""),
    "keys_flip": ("parity_cases:keys_flip", "failed", "output: ['a'] on the reference, ['b'] on the target"),
    "dtype_flip": ("parity_cases:dtype_flip", "failed", "torch.float32 (4,) on the reference, torch.float64 (4,)"),
    "float8": ("parity_cases:float8_out", "failed", "no tolerance agreed for torch.float8_e4m3fn"),
    "locked": ("parity_cases:locked_case", "passed", ""),
    "bare_model": ("parity_cases:bare_model", "failed", "must return (model, inputs)"),
    "missing_module": ("no_such_module_here:make_case", "failed", "cannot import the entry"),
}


# One interpreter (torch is imported once) runs each step of a plan: a pytest session over a
# folder with its own environment (the generated files read it when imported; importlib mode
# keeps same-named files of different folders apart), the benchmark as a script, or its main().
# It lives in a folder of its own, so the entry is found only through the current folder, as
# the generated files promise.
DRIVER = """
import contextlib, io, json, os, runpy, sys
import pytest
results = []
for step in json.loads(sys.argv[1]):
    for name in [n for n in os.environ if n.startswith("LOCKIN_PARITY_")]:
        del os.environ[name]
    os.environ.update(step.get("env", {}))
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            if step["kind"] == "pytest":
                code = pytest.main([step["folder"], "-q", "-p", "no:cacheprovider", "--import-mode=importlib",
                                    "--junitxml=" + step["folder"] + ".xml"])
            elif step["kind"] == "script":
                sys.argv = [step["path"], *step["argv"]]
                runpy.run_path(step["path"], run_name="__main__")
                code = 0
            else:
                module = runpy.run_path(step["path"], run_name="generated_bench")
                code = module["main"](step["argv"])
        except SystemExit as stop:
            code = stop.code
    results.append({"code": int(code), "out": out.getvalue(), "err": err.getvalue()})
print(json.dumps(results))
"""

TINY = ["--warmup", "1", "--steps", "2", "--rounds", "2", "--batch-size", "2", "--seq-len", "8"]
BENCH_CALLS = {  # main(argv) of the benchmark generated for tpu, as it is
    "train": ["--reference", "cpu", "--target", "cpu", "--entry", "parity_cases:make_case", "--mode", "train", *TINY],
    "absent": ["--reference", "cpu", "--entry", "parity_cases:rows_only", "--dtype", "float64", *TINY],
    "only": ["--only", "target", "--target", "cpu", *TINY],
    "bad_dtype": ["--reference", "cpu", "--target", "cpu", "--dtype", "float17", *TINY],
    "no_steps": ["--reference", "cpu", "--target", "cpu", "--steps", "0"],
    "logged": ["--reference", "cpu", "--target", "cpu", "--entry", "parity_cases:logged_case", "--warmup", "1",
               "--steps", "2", "--rounds", "4"],
}


def generate(project: Path) -> list[dict]:
    """Every generated file of the runs below, and the plan of the runs."""
    (project / "parity_cases.py").write_text(CASES, encoding="utf-8")
    for target in registry_devices():  # as written by write_tests: forced to cpu, and as they are
        write_tests(project / "forced", target, project="demo")
        write_tests(project / "as_generated", target, project="demo")
        (project / "as_generated" / f"test_parity_{target}_vs_cpu.py").write_text(
            render_parity_test(f"{target}_vs_cpu", project="demo", device=registry_devices()[target], reference="cpu"),
            encoding="utf-8")
    for name, (entry, _, _) in ENTRY_CASES.items():
        (project / "forced" / f"test_parity_{name}.py").write_text(
            render_parity_test(name, project="demo", device="cpu", entry=entry), encoding="utf-8")
    (project / "bfloat16").mkdir()  # the stand-in (its token ids stay int64) and a drift bfloat16 accepts
    for name, entry in (("bf16_standin", None), ("bf16_drift", "parity_cases:drift_bf16")):
        (project / "bfloat16" / f"test_parity_{name}.py").write_text(
            render_parity_test(name, project="demo", device="cpu", entry=entry), encoding="utf-8")
    # saved/ runs where the reference is, compared/ where it is not
    for folder, names in (("saved", ["standin"]), ("compared", ["standin", "other"])):
        (project / folder).mkdir()
        for name in names:
            entry = "parity_cases:make_case" if name == "other" else None
            (project / folder / f"test_parity_saved_{name}.py").write_text(
                render_parity_test(f"saved_{name}", project="demo", device="cpu", entry=entry), encoding="utf-8")
    (project / "tools").mkdir()
    (project / "tools" / "driver.py").write_text(DRIVER, encoding="utf-8")
    outputs = str(project / "reference-outputs.pt")
    cpu_pair = {"LOCKIN_PARITY_REFERENCE": "cpu", "LOCKIN_PARITY_TARGET": "cpu"}
    return [
        {"kind": "pytest", "folder": "forced", "env": cpu_pair},
        {"kind": "pytest", "folder": "as_generated"},
        {"kind": "pytest", "folder": "bfloat16", "env": {**cpu_pair, "LOCKIN_PARITY_DTYPE": "bfloat16"}},
        # the "NVIDIA machine" runs the reference and saves it; the "target machine" has no reference
        {"kind": "pytest", "folder": "saved", "env": {"LOCKIN_PARITY_REFERENCE": "cpu",
                                                      "LOCKIN_PARITY_TARGET": "tpu", "LOCKIN_PARITY_OUTPUTS": outputs}},
        {"kind": "pytest", "folder": "compared", "env": {"LOCKIN_PARITY_REFERENCE": "tpu",
                                                         "LOCKIN_PARITY_TARGET": "cpu", "LOCKIN_PARITY_OUTPUTS": outputs}},
        {"kind": "script", "path": "forced/bench_cpu.py", "argv": ["--reference", "cpu", *TINY]},
        *({"kind": "main", "path": "as_generated/bench_tpu.py", "argv": argv} for argv in BENCH_CALLS.values()),
    ]


def outcomes_of(report: Path) -> dict[str, tuple[str, str]]:
    """test name -> (outcome, message) from a junit report."""
    outcomes = {}
    for case in ElementTree.parse(report).iter("testcase"):
        outcome, message = "passed", ""
        for child in case:
            if child.tag in ("failure", "error", "skipped"):
                outcome = {"failure": "failed", "error": "error", "skipped": "skipped"}[child.tag]
                message = (child.get("message") or "") + "\n" + (child.text or "")
        outcomes[case.get("name")] = (outcome, message)
    return outcomes


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict:
    """Generate every file and run the plan in one interpreter; run name -> its result."""
    project = tmp_path_factory.mktemp("project")
    plan = generate(project)
    env = {k: v for k, v in os.environ.items() if not k.startswith("LOCKIN_PARITY_") and k != "PYTHONPATH"}
    env.update(OMP_NUM_THREADS="1", PYTHONDONTWRITEBYTECODE="1")
    proc = subprocess.run([sys.executable, str(project / "tools" / "driver.py"), json.dumps(plan)], cwd=project,
                          env=env, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    results = json.loads(proc.stdout.splitlines()[-1])
    named = {}
    for step, result in zip(plan, results, strict=True):
        if step["kind"] == "pytest":
            assert (project / f"{step['folder']}.xml").exists(), result
            named[step["folder"]] = outcomes_of(project / f"{step['folder']}.xml")
    named["saved_written"] = (project / "reference-outputs.pt").exists()
    named["calls"] = (project / "calls.log").read_text(encoding="utf-8").split()
    named["bench_cli"] = results[5]
    named.update(zip(BENCH_CALLS, results[6:], strict=True))
    return named


def test_forced_to_cpu_the_generated_test_passes_for_every_target(runs):
    outcomes = runs["forced"]
    for target in registry_devices():
        assert outcomes[f"test_parity_{target}"] == ("passed", ""), target


@pytest.mark.parametrize("name", list(ENTRY_CASES))
def test_entries_pass_and_traps_fail(runs, name):
    _, expected, text = ENTRY_CASES[name]
    outcome, message = runs["forced"][f"test_parity_{name}"]
    assert outcome == expected, message
    assert text in message


def test_each_dtype_has_its_own_tolerance(runs):
    # LOCKIN_PARITY_DTYPE=bfloat16 casts the model and its floating inputs; the 1e-2 drift that
    # fails in float32 (above) is inside bfloat16's agreed pair
    assert runs["bfloat16"] == {"test_parity_bf16_standin": ("passed", ""), "test_parity_bf16_drift": ("passed", "")}


def test_an_absent_target_or_reference_skips_with_the_reason(runs):
    outcomes = runs["as_generated"]
    for target in registry_devices():  # the target is checked first; then the reference, cuda
        outcome, message = outcomes[f"test_parity_{target}"]
        assert outcome == "skipped" and " is absent: " in message, (target, message)
    reference = outcomes["test_parity_cpu"][1]
    assert "reference device cuda is absent: this torch " in reference and "is not the cuda build" in reference
    reasons = {target: outcomes[f"test_parity_{target}_vs_cpu"] for target in registry_devices()}
    assert reasons.pop("cpu") == ("passed", "")
    assert "target device cuda is absent" in reasons["rocm"][1] and "not the hip build" in reasons["rocm"][1]
    assert "torch_tpu not installed" in reasons["tpu"][1]
    assert "target device neuron is absent" in reasons["trainium"][1]
    assert "torch_neuronx not installed" in reasons["trainium"][1]
    assert "no mps device" in reasons["mps"][1] and "no xpu device" in reasons["xpu"][1]
    assert "torch_npu not installed" in reasons["npu"][1]  # a registry target: no code of its own
    assert {outcome for outcome, _ in reasons.values()} == {"skipped"}


def test_reference_outputs_saved_on_one_machine_are_compared_on_another(runs):
    first, second = runs["saved"], runs["compared"]
    assert runs["saved_written"]
    outcome, message = first["test_parity_saved_standin"]
    assert outcome == "skipped" and "target device tpu is absent" in message and "saved to" in message
    assert second["test_parity_saved_standin"] == ("passed", "")
    # outputs saved for the stand-in are not a reference for another entry
    outcome, message = second["test_parity_saved_other"]
    assert outcome == "failed" and "save them again on the reference machine" in message


LINE = re.compile(r"role=(reference|target) device=(\S+) items/s=(\d+\.\d) ms/step=\d+\.\d{3} batch=(\d+) "
                  r"input=(\S+) dtype=(\S+) mode=(inference|train) warmup=(\d+) steps=(\d+) rounds=(\d+)(?: threads=\d+)? "
                  r"torch=\S+$")


def test_the_benchmark_prints_one_line_per_device_and_the_ratio(runs):
    run = runs["bench_cli"]
    assert run["code"] == 0, run["err"]
    lines = run["out"].splitlines()
    assert len(lines) == 3, run["out"]
    for role, line in zip(("reference", "target"), lines[:2], strict=True):
        found = LINE.match(line)
        assert found, line
        assert found.groups()[:2] == (role, "cpu") and float(found.group(3)) > 0
        assert found.groups()[3:] == ("2", "2x8", "float32", "inference", "1", "2", "2")
        assert "threads=1" in line
    assert re.fullmatch(r"ratio=\d+\.\d{3} target=cpu reference=cpu", lines[2])


def test_the_benchmark_trains_counts_rows_and_names_what_is_absent(runs):
    train, absent, only, bad_dtype, no_steps, _ = (runs[name] for name in BENCH_CALLS)
    assert train["code"] == 0 and len(train["out"].splitlines()) == 3
    assert all("mode=train" in line and "input=2x8" in line for line in train["out"].splitlines()[:2])
    # the target (tpu, as generated) is absent: named on stderr, exit 1, the reference still measured
    assert absent["code"] == 1 and "absent role=target device=tpu: no tpu device" in absent["err"]
    (line,) = absent["out"].splitlines()
    assert LINE.match(line) and "batch=5 input=5x6 dtype=float64" in line  # rows of the first input
    assert only["code"] == 0 and len(only["out"].splitlines()) == 1 and "role=target device=cpu" in only["out"]
    assert bad_dtype["code"] == 2 and "float17" in bad_dtype["err"]
    assert no_steps["code"] == 2 and "expected 1 or more" in no_steps["err"]


def test_the_benchmark_warms_up_both_then_alternates_which_goes_first(runs):
    assert runs["logged"]["code"] == 0, runs["logged"]["err"]
    blocks = []  # (copy, steps in a row)
    for copy in runs["calls"]:
        if blocks and blocks[-1][0] == copy:
            blocks[-1][1] += 1
        else:
            blocks.append([copy, 1])
    first, second = blocks[0][0], blocks[1][0]
    assert first != second
    # warm-up 1 each; rounds of 2 steps: AB, BA, AB, BA (adjacent rounds of one copy merge)
    assert blocks == [[first, 1], [second, 1], [first, 2], [second, 4], [first, 4], [second, 4], [first, 2]]

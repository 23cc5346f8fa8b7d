"""Cross-file fallbacks (issue 15 item 3): a module of the project imported only under a fallback or a
guard (whisper's Triton timing kernels, imported inside `try:` in timing.py) is as optional as those
imports; a function its module calls only inside a fallback `try` is that fallback's fast path. Traps:
one unconditional import, or one use outside the `try`, keeps the main path."""

from __future__ import annotations

from auditor.portability.verdict import verdicts

PYPROJECT = "[project]\nname = 'whisper'\n[tool.setuptools]\npackages = ['whisper']\n"
TRITON_OPS = ("import torch\n"
              "try:\n    import triton\n    import triton.language as tl\n"
              "except ImportError:\n    raise RuntimeError('triton import failed')\n\n"
              "@triton.jit\ndef dtw_kernel(x, BLOCK: tl.constexpr):\n    pass\n\n"
              "def median_filter_cuda(x, width):\n    return x\n")
TIMING = ("import subprocess, warnings\n\n"
          "def median_filter(x, width):\n"
          "    if x.is_cuda:\n"
          "        try:\n"
          "            from .triton_ops import median_filter_cuda\n"
          "            return median_filter_cuda(x, width)\n"
          "        except (RuntimeError, subprocess.CalledProcessError):\n"
          "            warnings.warn('falling back')\n"
          "    return x\n\n"
          "def dtw_cuda(x):\n"
          "    from .triton_ops import dtw_kernel\n"
          "    y = x.cuda()\n"
          "    dtw_kernel[(1,)](y)\n"
          "    return y.cpu()\n\n"
          "def dtw(x):\n"
          "    try:\n        return dtw_cuda(x)\n"
          "    except (RuntimeError, subprocess.CalledProcessError):\n        warnings.warn('slower DTW')\n"
          "    return x\n")


def files(**extra: str) -> dict[str, str]:
    return {"pyproject.toml": PYPROJECT, "whisper/__init__.py": "", "whisper/triton_ops.py": TRITON_OPS,
            "whisper/timing.py": TIMING, **extra}


def test_a_module_imported_only_under_fallbacks_is_optional(scan_source):
    result = scan_source(files())
    kernels = [f for f in result.findings if f.path.endswith("triton_ops.py")]
    assert kernels and all("optional" in f.context.split("+") for f in kernels)
    assert all(f.targets["cpu"] == "degrades" and f.severity in ("minor", "info") for f in kernels)
    assert "imported only under a fallback or a guard" in kernels[0].message
    assert "timing.py:6" in kernels[0].message
    # the function timing.py calls only inside `try:` is that fallback's fast path
    (cuda,) = [f for f in result.findings if f.rule == "LK102"]
    assert cuda.context == "optional" and "try/except around dtw_cuda()" in cuda.message
    assert cuda.targets["cpu"] == "degrades"
    judged = verdicts(result.findings)
    # MPS loses the fast path; the CPU is the baseline, which never had it
    assert judged["mps"].verdict == "runs-degraded" and judged["cpu"].verdict == "runs"


def test_trap_one_unconditional_import_keeps_the_module_on_the_main_path(scan_source):
    result = scan_source(files(**{"whisper/model.py": "from .triton_ops import dtw_kernel\n"}))
    kernels = [f for f in result.findings if f.path.endswith("triton_ops.py") and f.rule == "LK403"]
    assert kernels and all(f.context is None and f.targets["cpu"] == "raises" for f in kernels)
    assert verdicts(result.findings)["cpu"].verdict == "fails"


def test_trap_a_function_also_used_outside_the_try_is_not_a_fast_path(scan_source):
    timing = TIMING + "KERNELS = {'dtw': dtw_cuda}\n"
    result = scan_source(files(**{"whisper/timing.py": timing}))
    (cuda,) = [f for f in result.findings if f.rule == "LK102"]
    assert cuda.context is None and cuda.targets["cpu"] == "raises"
    kernels = [f for f in result.findings if f.path.endswith("triton_ops.py") and f.rule == "LK403"]
    assert all(f.targets["cpu"] == "raises" for f in kernels)  # dtw_cuda's import is on the main path now


def test_trap_a_programs_main_in_a_try_that_logs_or_exits_is_no_fast_path(scan_source):
    script = ("import sys, logging, torch\n\n"
              "def main():\n    torch.zeros(2).cuda()\n\n"
              "def run():\n    try:\n        main()\n    except Exception:\n        logging.exception('failed')\n"
              "        sys.exit(1)\n\n"
              "if __name__ == '__main__':\n    try:\n        run()\n    except Exception:\n        logging.exception('failed')\n")
    result = scan_source({"train.py": script})
    (cuda,) = [f for f in result.findings if f.rule == "LK102"]
    assert cuda.context is None and cuda.targets["cpu"] == "raises"


def test_a_handler_with_a_compound_statement_is_read_without_error(scan_source):
    """A handler holding an `if` (Megatron's dynamic_engine.py) once raised inside the walk."""
    src = ("import torch\n\ndef fast(x):\n    return x.cuda()\n\n"
           "def run(x, verbose=False):\n    try:\n        return fast(x)\n    except RuntimeError:\n"
           "        if verbose:\n            print('slow path')\n        return x\n")
    result = scan_source({"m.py": src})
    assert not result.errors
    (cuda,) = [f for f in result.findings if f.rule == "LK102"]
    assert cuda.context == "optional"  # the handler goes on to a fallback

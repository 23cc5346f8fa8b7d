"""The prefilter must never drop a file that has a finding: every rule's INVALID examples and
the fixtures give the same findings with the prefilter on and off (the corpus check is
bench/check_prefilter.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from auditor.checks.registry import all_rules, full_catalogue
from auditor.config.settings import Settings
from auditor.discover.files import SourceFile, file_kind
from auditor.pipeline.runtime import Runtime
from auditor.pipeline.scan import scan
from auditor.read.prefilter import Prefilter

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"

INVALID = [
    pytest.param(rule, example, id=f"{rule.code}-{index}")
    for rule in all_rules()
    for index, example in enumerate(rule.INVALID)
    if file_kind(example.path) == "python"
]


@pytest.mark.parametrize(("rule", "example"), INVALID)
def test_invalid_examples_pass_the_rules_own_prefilter(rule, example):
    """With only this rule selected its prefilter still lets each of its bad examples through."""
    runtime = Runtime([rule], full_catalogue())
    assert runtime.needs_check(SourceFile(example.path, example.path, "python"), example.code.encode()), (
        f"{rule.code}: the prefilter drops an INVALID example; add a token:\n{example.code}")


def _findings(paths: list[str], prefilter: bool, monkeypatch: pytest.MonkeyPatch) -> tuple[list[dict], int]:
    if not prefilter:
        monkeypatch.setattr(Runtime, "may_match", lambda self, data, path="": True)
    result = scan(paths, Settings(cache=False, jobs=1))
    monkeypatch.undo()
    return [f.to_dict() for f in result.findings], result.files_parsed


def test_examples_and_fixtures_same_findings_with_and_without_prefilter(tmp_path, monkeypatch):
    for rule in all_rules():
        for index, example in enumerate(rule.INVALID):
            target = tmp_path / rule.code / str(index) / example.path
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(example.code, encoding="utf-8")
    paths = [str(tmp_path)] + ([str(FIXTURES)] if FIXTURES.is_dir() else [])
    (on, parsed_on), (off, parsed_off) = _findings(paths, True, monkeypatch), _findings(paths, False, monkeypatch)
    assert on == off
    assert on, "the examples must produce findings"
    assert parsed_off > parsed_on, "switching the prefilter off must parse the files it rules out"


def test_prefilter_skips_files_without_tokens(scan_source):
    result = scan_source({"plain.py": "import numpy as np\nx = np.zeros(3)\n" * 50})
    assert result.files_parsed == 0 and not result.findings


def test_rule_tokens_are_case_insensitive_substrings():
    check = Prefilter(["cuda"], [])
    assert check(b"x = 'CUDA'") and check(b"import pycuda") and not check(b"import torch")


def test_catalogue_rows_need_every_component_as_an_identifier():
    check = Prefilter([], [("vllm", "vllm._C"), ("parallel", "torch.nn.parallel")])
    assert check(b"from vllm import _C\n")
    assert check(b"import vllm._C as ops\n")
    assert check(b"import torch\nm = torch.nn.parallel.DistributedDataParallel(m)\n")
    assert not check(b"import vllm\nvllm.config\n")  # `_C` is never spelled as a name
    assert not check(b"import torch\ntensor_parallel = torch.nn.Linear\n")  # no `parallel` identifier
    assert not check(b"import torch\n")


def test_catalogue_rows_need_their_top_package_imported():
    """The walker resolves a library only through an import naming it: the same words in a string
    or in the project's own names (transformers' `grouped_gemm` expert plan) are no reference."""
    check = Prefilter([], [("grouped_gemm", "grouped_gemm"), ("fla", "fla.ops")])
    assert not check(b"plan = {'experts': 'grouped_gemm'}\ndef grouped_gemm(x):\n    return x\n")
    assert not check(b"from mypkg import ops\nfla = ops.fla\n")  # `ops` is there, `fla` is not imported
    assert check(b"import grouped_gemm\n") and check(b"import os, grouped_gemm as gg\n")
    assert check(b"if TYPE_CHECKING: import grouped_gemm\n")
    assert check(b"from fla.ops import chunk\n") and check(b"import fla.ops as ops\n")
    assert check(b"from shims import (\n    fla,\n    other,\n)\nfla.ops.chunk()\n")  # a shim re-exports it
    assert check(b"from . import fla, grouped_gemm\n")  # the project's own modules named alike
    assert check(b"try:\n    from grouped_gemm.interface import gmm\nexcept ImportError:\n    gmm = None\n")


def test_unconditional_token_covers_longer_anchors():
    check = Prefilter(["nvidia"], [("nvidia_dali", "nvidia_dali.ops")])
    assert check.anchors == (b"nvidia",) and check(b"# nvidia")


def test_conditional_anchor_inside_a_longer_one_keeps_both_rows():
    check = Prefilter([], [("flash_attn", "flash_attn"), ("flash_attn_3", "flash_attn_3.ops")])
    assert check.anchors == (b"flash_attn",)
    assert check(b"import flash_attn_3.ops\n") and check(b"import flash_attn\n")
    assert not check(b"use_flash_attn_3 = True\n")


def test_wrapped_library_needs_an_identifier_starting_with_its_name():
    check = Prefilter([], [], word_starts=["flash_attn"])
    assert check(b"from flash_attn import flash_attn_func\n")
    assert check(b"from vllm.utils import flash_attn as fa\n")
    assert check(b"torch.ops.vllm.flash_attn_varlen(q, k, v)\n")
    assert not check(b"class M(PreTrainedModel):\n    _supports_flash_attn = True\n")
    assert not check(b"if is_flash_attn_2_available():\n    pass\n")


def test_imports_of_modules_named_for_gpu_code_below_a_top_package():
    """A GPU library's own GPU modules (`from torchao.kernel import`, `from ..triton_utils.kernels
    import`): the project's name anchors nothing, so the module's words do."""
    check = Prefilter([], [], import_words=["triton", "exllama", "_c"])
    assert check(b"from ..triton_utils.kernels import silu\n")
    assert check(b"from .utils.exllama_utils import set_length\n")
    assert check(b"import pkg.triton\n")
    assert not check(b"from triton_helpers import x\n")  # a top package of that name is a catalogue row's job
    assert not check(b"from .tritonic import x\n") and not check(b"x = '.triton'\n")
    assert not check(b"from .my_cache import c\n")  # `_c` only as a whole part
    assert Prefilter.from_data(check.to_data()).import_words == ("_c", "exllama", "triton")
    # a cache written before this capability still loads
    assert not Prefilter.from_data(check.to_data()[:2])(b"from ..triton_utils.kernels import silu\n")


def test_relative_imports_in_a_folder_named_for_gpu_code():
    """`from . import utils` in liger_kernel/ops/backends/_cutedsl/_cute_lib/ imports one of the
    package's GPU modules (its folder says so): an inventory line the file's text alone cannot show."""
    check = Prefilter([], [], import_words=["cute", "triton"])
    code = b"from . import utils\nfrom .reduce import row_reduce\n"
    assert check(code, "src/pkg/ops/_cutedsl/_cute_lib/__init__.py")
    assert check(code, "pkg/triton_utils/__init__.py")
    assert not check(code, "src/pkg/models/__init__.py")  # an ordinary folder
    assert not check(b"import utils\n", "pkg/_cute_lib/__init__.py")  # no relative import
    assert not check(code, "")


def test_the_full_prefilter_ignores_near_misses():
    """Spellings that contain a token without being lock-in: `.cu` inside `.cumsum`, `gencode`
    inside `ConditioningEncoder`, a wrapped library's name inside an attribute."""
    runtime = Runtime(all_rules(), full_catalogue())
    assert not runtime.may_match(b"y = x.cumsum(0)\nz = self.current\n")
    assert not runtime.may_match(b"class ClvpConditioningEncoder(nn.Module):\n    pass\n")
    assert not runtime.may_match(b"class M(PreTrainedModel):\n    _supports_flash_attn = True\n")
    assert runtime.may_match(b"SRC = ['csrc/k.cu']\n")
    assert runtime.may_match(b'FLAGS = ["-gencode=arch=compute_80,code=sm_80"]\n')


def test_anchors_are_grouped_under_a_shorter_anchor_they_contain():
    check = Prefilter(["nvidia-smi", "nccl"], [("nvidia", "nvidia.ops")], word_starts=["nvidia_dali"])
    # the unconditional member leads its group; groups with an unconditional member come first
    assert check.groups == ((b"nccl", (b"nccl",)), (b"nvidia", (b"nvidia-smi", b"nvidia", b"nvidia_dali")))
    assert check(b"subprocess.run(['nvidia-smi'])") and check(b"import nvidia.ops") and check(b"nvidia_dali_x()")
    assert not check(b"import nvidia\n") and not check(b"# nvidia_ smi")

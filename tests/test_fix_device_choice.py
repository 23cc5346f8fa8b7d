"""The device-selection, backend and AMP rewrites of issue 19 (LK203, LK301, LK106, LK210): the
meaning on NVIDIA is kept (same index, NCCL on CUDA, the same AMP device), the CPU no longer
raises where the replacement would (torch.accelerator's index calls raise without an
accelerator), and the torch floor is the one where the replacement first exists."""

from __future__ import annotations

from auditor.config.settings import Settings
from auditor.fix.apply import fix_paths
from auditor.pipeline.scan import scan


def fixed(tmp_path, source: str, torch_version: str = "2.13", unsafe: bool = True) -> tuple[str, list]:
    path = tmp_path / "train.py"
    path.write_text(source, encoding="utf-8")
    settings = Settings(cache=False, jobs=1, torch_version=torch_version)
    fix_paths(scan([str(path)], settings), unsafe=unsafe, write=True, max_bytes=settings.max_bytes)
    return path.read_text(encoding="utf-8"), scan([str(path)], settings).findings


def test_set_device_goes_under_the_accelerator_check_and_current_device_is_zero_without_one(tmp_path):
    text, _ = fixed(tmp_path, "import os\nimport torch\n\nrank = int(os.environ['LOCAL_RANK'])\n"
                              "torch.cuda.set_device(rank)\nnext_rank = torch.cuda.current_device() + 1\n")
    assert text == ("import os\nimport torch\n\nrank = int(os.environ['LOCAL_RANK'])\n"
                    "if torch.accelerator.is_available():\n    torch.accelerator.set_device_index(rank)\n"
                    "next_rank = (torch.accelerator.current_device_index() if torch.accelerator.is_available() else 0) + 1\n")


def test_set_device_inside_an_expression_is_swapped_as_it_is(tmp_path):
    # a lambda cannot hold a guard; the CUDA call raised on the CPU too, so nothing gets worse there
    text, _ = fixed(tmp_path, "import torch\nselect = lambda r: torch.cuda.set_device(r)\n")
    assert text == "import torch\nselect = lambda r: torch.accelerator.set_device_index(r)\n"


def test_a_2_6_floor_keeps_the_index_calls_as_suggestions_naming_2_7(tmp_path):
    # torch 2.6 has only set_device_idx / current_device_idx: set_device_index would raise AttributeError
    source = "import torch\ntorch.cuda.set_device(0)\nidx = torch.cuda.current_device()\n"
    text, findings = fixed(tmp_path, source, torch_version="2.6")
    assert text == source
    reasons = {f.fix.reason for f in findings if f.rule == "LK203"}
    assert len(reasons) == 1 and reasons.pop().startswith("needs torch >= 2.7;"), reasons

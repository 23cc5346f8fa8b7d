"""Huawei Ascend (`npu`, torch_npu) as one registry block plus its exception rows: its guards,
backend siblings, images, environment variables and effects, with the traps (HCCL is not NCCL,
an "npu" device string is no lock-in)."""

from __future__ import annotations

import pytest

from auditor import targets


def by_rule(result, code: str) -> list:
    return [f for f in result.findings if f.rule == code]


def test_npu_is_a_registry_target_with_its_roles():
    npu = targets.get("npu")
    assert npu.display == "NPU" and npu.device == "npu" and npu.backend == "hccl"
    assert npu.roles == {"torch-accelerator", "chosen-by-torch-accelerator", "native-privateuse1"}
    assert "ASCEND_RT_VISIBLE_DEVICES" in npu.visibility
    assert "npu" not in targets.overall_set().members  # a new target moves no `overall` gate


@pytest.mark.parametrize("test", ["torch.npu.is_available()", "is_torch_npu_available()", "is_npu_available()",
                                  "x.is_npu", 'device.type == "npu"'])
def test_an_npu_branch_before_the_cuda_one_serves_the_npu(scan_source, test):
    code = (f"import torch\nif {test}:\n    torch.npu.synchronize()\n"
            "elif torch.cuda.is_available():\n    torch.cuda.synchronize()\n")
    (sync,) = by_rule(scan_source({"a.py": code}), "LK204")
    assert sync.context == "guarded" and sync.targets["npu"] == "works"
    assert sync.targets["xpu"] == "degrades"  # no branch of its own: it skips the CUDA work


def test_a_cuda_check_alone_skips_the_npu(scan_source):
    (sync,) = by_rule(scan_source({"a.py": "import torch\nif torch.cuda.is_available():\n    torch.cuda.synchronize()\n"}),
                      "LK204")
    assert sync.targets["npu"] == "degrades" and "npu" in sync.message  # "tpu, trainium, mps, xpu and npu skip it"


def test_npu_devices_and_hccl_are_no_lock_in(scan_source):
    code = ('import torch\nimport torch.distributed as dist\nx = torch.zeros(2, device="npu:0")\n'
            'model.to(torch.device("npu"))\ndist.init_process_group("hccl")\n'
            'import os\nos.environ["ASCEND_RT_VISIBLE_DEVICES"] = "0,1"\n')
    assert scan_source({"a.py": code}).findings == []


def test_cuda_code_raises_on_the_npu(scan_source):
    code = "import torch\nimport torch.distributed as dist\nm = M().cuda()\ndist.init_process_group('nccl')\n"
    result = scan_source({"a.py": code})
    assert {f.rule: f.targets["npu"] for f in result.findings} == {"LK102": "raises", "LK301": "raises"}
    assert all("NPU" in f.message for f in result.findings)  # the raising targets are rendered, NPU among them


def test_the_visibility_variable_suggests_the_npus_own(scan_source):
    (found,) = by_rule(scan_source({"a.py": 'import os\nos.environ["CUDA_VISIBLE_DEVICES"] = "0"\n'}), "LK601")
    assert found.targets["npu"] == "degrades" and "npu: ASCEND_RT_VISIBLE_DEVICES" in found.suggestion


def test_a_sibling_npu_module_serves_the_npu(scan_source):
    files = {"platforms/__init__.py": "", "platforms/npu.py": "import torch_npu\n",
             "platforms/cuda.py": "import torch\ntorch.cuda.synchronize()\n"}
    (sync,) = by_rule(scan_source(files), "LK204")
    assert sync.context == "backend-module" and sync.targets["npu"] == "works"
    assert "NPU" not in sync.message.split(":")[-1] or "npu has sibling" in sync.message


def test_an_ascend_image_in_the_repository_serves_the_npu(scan_source):
    files = {"Dockerfile": "FROM nvidia/cuda:12.4.1-runtime-ubuntu22.04\n",
             "docker/Dockerfile.npu": "FROM ubuntu:22.04\n",
             "docker/ascend.dockerfile": "FROM quay.io/ascend/cann:8.2.rc1-910b-ubuntu22.04-py3.11\n"}
    (image,) = by_rule(scan_source(files), "LK509")
    assert image.targets["npu"] == "works" and image.targets["mps"] == "raises"


def test_an_nvidia_image_alone_fails_on_the_npu_and_suggests_the_ascend_image(scan_source):
    (image,) = by_rule(scan_source({"Dockerfile": "FROM nvidia/cuda:12.4.1-runtime-ubuntu22.04\n"}), "LK509")
    assert image.targets["npu"] == "raises" and "npu: quay.io/ascend/cann" in image.suggestion


@pytest.mark.parametrize(("choice", "npu"), [("flash_attention_2", "works"), ("flash_attention_3", "raises")])
def test_flash_attention_2_runs_on_the_npu_through_torch_npu(scan_source, choice, npu):
    code = f"model = AutoModel.from_pretrained(name, attn_implementation='{choice}')\n"
    (found,) = by_rule(scan_source({"a.py": code}), "LK413")
    assert found.targets["npu"] == npu


def test_data_parallel_is_not_supported_on_the_npu(scan_source):
    from auditor.portability.verdict import verdicts

    result = scan_source({"a.py": "import torch\nmodel = torch.nn.DataParallel(model)\n"})
    (found,) = by_rule(result, "LK303")
    assert found.targets["npu"] == "raises" and found.targets["mps"] == "degrades"
    verdict = verdicts(result.findings)["npu"]  # minor: it degrades the verdict, naming what fails
    assert verdict.verdict == "runs-degraded" and "DataParallel, which this target does not support" in verdict.reasons[0].why


def test_the_cuda_clean_gate_protects_the_npu(scan_source):
    """Turning the CUDA check into an accelerator check would send the NPU into the DataParallel branch."""
    code = ("import torch\nif torch.cuda.is_available():\n    model = torch.nn.DataParallel(model)\n")
    (check,) = by_rule(scan_source({"a.py": code}, torch_version="2.13"), "LK201")
    assert check.fix is not None and check.fix.applicability == "display" and "CUDA-clean" in check.fix.reason

"""Cross-rule cases for the distributed (LK3xx), env (LK6xx) and torch_xla (LK104) rules: which rule
owns a line when several could, what each reports once, and what none of them reports."""

from __future__ import annotations

import pytest

from auditor import targets

SELECT = ["LK3", "LK6", "LK104"]


def _scan(scan_source, code: str, path: str = "train.py") -> list[tuple[str, int]]:
    result = scan_source({path: code}, select=SELECT)
    assert not result.errors, result.errors
    return sorted((f.rule, f.line) for f in result.findings)


def test_launcher_script_reports_each_rule_once(scan_source):
    code = (
        "import os\n"
        "import subprocess\n"
        "import torch.distributed as dist\n"
        "import pynvml\n"
        "os.environ['CUDA_VISIBLE_DEVICES'] = '0,1'\n"
        "os.environ.setdefault('NCCL_DEBUG', 'INFO')\n"
        "os.environ['CUDA_LAUNCH_BLOCKING'] = '1'\n"
        "subprocess.run(['nvidia-smi', '-L'])\n"
        "dist.init_process_group('nccl')\n"
    )
    assert _scan(scan_source, code) == [
        ("LK301", 9), ("LK304", 6), ("LK601", 5), ("LK602", 7), ("LK603", 8), ("LK604", 4),
    ]


def test_env_names_go_to_exactly_one_rule(scan_source):
    code = (
        "import os\n"
        "env = {'NCCL_SOCKET_IFNAME': 'eth0', 'TORCH_NCCL_BLOCKING_WAIT': '1',\n"
        "       'CUDA_DEVICE_ORDER': 'PCI_BUS_ID', 'PYTORCH_CUDA_ALLOC_CONF': 'expandable_segments:True',\n"
        "       'TORCH_CUDA_ARCH_LIST': '8.0'}\n"
    )
    found = _scan(scan_source, code)
    assert found == [("LK304", 2), ("LK304", 2), ("LK601", 3), ("LK602", 3), ("LK602", 4)]


def test_portable_distributed_code_is_clean(scan_source):
    code = (
        "import os\n"
        "import torch\n"
        "import torch.distributed as dist\n"
        "DEVICE = torch.accelerator.current_accelerator() or torch.device('cpu')\n"
        "dist.init_process_group(backend=dist.get_default_backend_for_device(DEVICE))\n"
        "dist.init_process_group(device_id=torch.device(DEVICE.type, int(os.environ['LOCAL_RANK'])))\n"
        "model = torch.nn.parallel.DistributedDataParallel(model)\n"
        "if dist.get_backend() == 'nccl':\n"
        "    logger.info('NCCL_DEBUG=%s', os.environ.get('GLOO_SOCKET_IFNAME'))\n"
        "os.environ['PYTORCH_ALLOC_CONF'] = 'expandable_segments:True'\n"
    )
    assert _scan(scan_source, code) == []


def test_text_mentions_are_not_findings(scan_source):
    code = (
        '"""Set CUDA_VISIBLE_DEVICES and NCCL_DEBUG, run nvidia-smi, use backend="nccl"."""\n'
        "# os.environ['CUDA_VISIBLE_DEVICES'] = '0'  import pynvml  torch_xla.sync()\n"
        "print('CUDA_VISIBLE_DEVICES=0 NCCL_DEBUG=INFO nvidia-smi nccl torch.nn.DataParallel')\n"
        "parser.add_argument('--backend', default='gloo', help='nccl or gloo; see nvidia-smi')\n"
        "warnings.warn('export PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True')\n"
    )
    assert _scan(scan_source, code) == []


def test_locals_named_like_modules_are_not_lock_in(scan_source):
    code = (
        "def run(pynvml, xm, comm, dist):\n"
        "    pynvml.nvmlInit()\n"
        "    xm.mark_step()\n"
        "    comm.broadcast(t, devices)\n"
        "    dist.init_process_group(backend)\n"
    )
    assert _scan(scan_source, code) == []


def test_cuda_collectives_beat_the_generic_cuda_row(scan_source):
    code = "import torch\nouts = torch.cuda.comm.broadcast(t, [0, 1])\ntorch.cuda.nccl.all_reduce(ts)\n"
    result = scan_source({"m.py": code})
    rules = {(f.rule, f.line) for f in result.findings if f.line in (2, 3)}
    assert ("LK302", 2) in rules and ("LK302", 3) in rules
    assert not any(rule.startswith("LK2") for rule, _ in rules), rules


def test_data_parallel_unwrapping_is_not_a_use(scan_source):
    code = (
        "import torch\n"
        "from torch.nn import DataParallel\n"
        "if isinstance(model, (torch.nn.DataParallel, torch.nn.parallel.DistributedDataParallel)):\n"
        "    model = model.module\n"
        "model = DataParallel(model)\n"
    )
    assert _scan(scan_source, code) == [("LK303", 5)]


def test_nvml_guards_are_not_reported(scan_source):
    code = (
        "try:\n"
        "    import pynvml\n"
        "except ImportError:\n"
        "    pynvml = None\n"
        "if pynvml:\n"
        "    try:\n"
        "        pynvml.nvmlInit()\n"
        "    except pynvml.NVMLError:\n"
        "        pass\n"
    )
    assert _scan(scan_source, code) == [("LK604", 2), ("LK604", 7)]


def test_xla_every_use_is_reported_with_targets(scan_source):
    code = "import torch_xla.core.xla_model as xm\ndevice = xm.xla_device()\nxm.mark_step()\n"
    result = scan_source({"m.py": code}, select=SELECT)
    xla = [f for f in result.findings if f.rule == "LK104"]
    assert [f.line for f in xla] == [1, 2, 3]
    assert "TPU" in xla[0].message and "Trainium" in xla[0].message
    assert "torch.accelerator" in xla[0].suggestion
    assert xla[0].targets["tpu"] == "works" and xla[0].targets["mps"] == "raises"


@pytest.mark.parametrize("code", [
    "import torch.distributed as dist\nbackend = 'nccl'\ndist.init_process_group(backend=backend)\n",
    "from torch import distributed as d\nd.init_process_group(d.Backend.NCCL)\n",
    "import torch\nif torch.cuda.is_available():\n    pass\nelse:\n    pass\ncfg = {'backend': 'nccl'}\n",
])
def test_nccl_backend_variants(scan_source, code):
    assert [rule for rule, _ in _scan(scan_source, code)] == ["LK301"]


def test_nccl_only_in_cuda_branch_is_a_per_device_choice(scan_source):
    code = (
        "import torch\n"
        "if is_xpu_available():\n"
        "    backend = 'xccl'\n"
        "elif torch.cuda.is_available():\n"
        "    backend = 'nccl'\n"
        "else:\n"
        "    backend = 'gloo'\n"
        "fallback_backend = 'nccl'\n"
    )
    found = {f.line: f for f in scan_source({"train.py": code}, select=SELECT).findings if f.rule == "LK301"}
    assert sorted(found) == [5, 8]
    # the CUDA branch of a per-device choice: xpu takes its own branch, the CPU and the rest fall to gloo
    assert found[5].context == "guarded" and found[5].severity == "minor"
    assert found[5].targets == {t: "works" if t == "xpu" or targets.has_role(t, "accepts-cuda-calls")
                                or targets.has_role(t, "host") else "degrades" for t in targets.names()}
    assert "raises" not in found[5].message and "xpu has its own branch" in found[5].message
    assert found[8].context is None and found[8].targets["xpu"] == "raises"


def test_nvidia_smi_through_a_variable_and_messages(scan_source):
    code = (
        "import subprocess\n"
        "smi = 'nvidia-smi'\n"
        "note = 'nvidia-smi missing'\n"
        "logger.warning(note)\n"
        "out = subprocess.check_output([smi, '-L'])\n"
        "out = subprocess.check_output(smi)\n"
    )
    assert _scan(scan_source, code) == [("LK603", 2)]


def test_findings_carry_per_target_effects(scan_source):
    code = "import os\nimport torch.distributed as dist\nos.environ['NCCL_DEBUG'] = 'INFO'\ndist.init_process_group('nccl')\n"
    result = scan_source({"m.py": code}, select=SELECT)
    by_rule = {f.rule: f for f in result.findings}
    assert by_rule["LK301"].targets == {t: "works" if targets.has_role(t, "accepts-cuda-calls") else "raises"
                                        for t in targets.names()}
    assert by_rule["LK304"].targets["rocm"] == "works" and by_rule["LK304"].targets["cpu"] == "degrades"
    assert "GLOO" in by_rule["LK304"].suggestion


def test_which_nvidia_smi_is_a_probe_that_degrades_while_running_it_raises(scan_source):
    code = ("import shutil, subprocess\n"
            "smi = shutil.which('nvidia-smi')\n"
            "subprocess.run(['nvidia-smi', '-L'])\n")
    result = scan_source({"train.py": code}, select=["LK603"])
    probe, run = sorted(result.findings, key=lambda f: f.line)
    assert probe.message.startswith("Looks for `nvidia-smi`") and "finds nothing" in probe.message
    assert set(probe.targets.values()) <= {"degrades", "works"} and probe.targets["cpu"] == "degrades"
    assert run.message.startswith("Runs `nvidia-smi`") and run.targets["cpu"] == "raises"

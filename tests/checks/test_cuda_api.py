"""Cross-rule behaviour of the cuda-api family (LK201-LK299) that per-rule examples cannot express."""

from __future__ import annotations

import tomllib

import pytest

from auditor import targets
from auditor.catalogue import catalogue_dir, load_catalogue
from auditor.checks.base import ApiRule
from auditor.checks.registry import all_rules


def codes(result, prefix: str = "LK2") -> list[tuple[int, str]]:
    return sorted((f.line, f.rule) for f in result.findings if f.rule.startswith(prefix))


MANY = '''\
import torch
import torch.cuda
import torch.backends.cudnn as cudnn
from torch.cuda.amp import autocast

n = torch.cuda.device_count()
torch.cuda.set_device(0)
torch.cuda.synchronize()
torch.cuda.empty_cache()
free, total = torch.cuda.mem_get_info()
torch.cuda.manual_seed_all(0)
state = torch.cuda.get_rng_state()
with autocast():
    pass
scaler = torch.amp.GradScaler()
s = torch.cuda.Stream()
g = torch.cuda.CUDAGraph()
torch.cuda.nvtx.range_push("x")
name = torch.cuda.get_device_name()
ok = torch.cuda.is_bf16_supported()
cudnn.benchmark = True
cudnn.deterministic = True
torch.backends.cuda.matmul.allow_tf32 = True
x = torch.cuda.FloatTensor(2)
u = torch.cuda.utilization()
torch.cuda.ipc_collect()
'''


def test_one_file_many_apis_gives_exactly_the_expected_codes(scan_source):
    result = scan_source({"train.py": MANY})
    assert codes(result) == [
        (4, "LK209"), (6, "LK202"), (7, "LK203"), (8, "LK204"), (9, "LK205"), (10, "LK206"), (11, "LK207"),
        (12, "LK208"), (13, "LK209"), (15, "LK210"), (16, "LK211"), (17, "LK212"), (18, "LK213"),
        (19, "LK214"), (20, "LK215"), (21, "LK216"), (22, "LK217"), (23, "LK218"), (24, "LK219"),
        (25, "LK220"), (26, "LK299"),
    ]


def test_specific_rows_beat_the_catch_all(scan_source):
    src = ("import torch\nwith torch.cuda.amp.autocast():\n    pass\n"
           "torch.cuda.Stream.priority_range()\ntorch.cuda.memory._snapshot()\n"
           "torch.cuda.random.get_rng_state()\ntorch.cuda.graphs.graph_pool_handle()\n")
    assert codes(scan_source({"a.py": src})) == [(2, "LK209"), (4, "LK211"), (5, "LK206"), (6, "LK208"),
                                                 (7, "LK212")]


def test_namespaces_of_other_families_are_not_lk299(scan_source):
    src = ("import torch\nimport torch.cuda.comm\nimport torch.cuda.nccl\n"
           "torch.cuda.comm.broadcast(t, devices)\nv = torch.cuda.nccl.version()\n"
           "fn = torch.cuda.jiterator._create_jit_fn(code)\n"
           "try:\n    pass\nexcept torch.cuda.OutOfMemoryError:\n    pass\n")
    assert not [f for f in scan_source({"a.py": src}).findings if f.rule == "LK299"]


def test_plain_module_import_and_dispatch_tables_are_not_findings(scan_source):
    src = ("import torch\nimport torch.cuda\nimport torch.cuda.nvtx as nvtx\nfrom torch.backends import cudnn\n"
           "MODULES = {'cuda': torch.cuda, 'xpu': torch.xpu}\n"
           "SYNC = {'cuda': torch.cuda.synchronize, 'xpu': torch.xpu.synchronize}\n"
           "EMPTY = {}\nEMPTY['cuda'] = torch.cuda.empty_cache\n")
    assert codes(scan_source({"a.py": src})) == []


def test_shadowing_parameters_and_locals(scan_source):
    src = ("from torch import cuda\nimport torch\n\n"
           "def f(torch):\n    torch.cuda.synchronize()\n\n"
           "def g(cuda):\n    cuda.empty_cache()\n\n"
           "def h():\n    cuda = get_backend()\n    cuda.synchronize()\n\n"
           "cuda.synchronize()\n")
    assert codes(scan_source({"a.py": src})) == [(14, "LK204")]


def test_aliases_report_their_uses_not_the_alias(scan_source):
    src = ("import torch\nsync = torch.cuda.synchronize\nsync()\n"
           "cuda_version = torch.version.cuda\nif cuda_version:\n    pass\n")
    assert codes(scan_source({"a.py": src})) == [(3, "LK204"), (5, "LK215")]


def test_annotations_and_monkeypatching_are_not_lock_in(scan_source):
    src = ("import torch\n\n"
           "def run(stream: torch.cuda.Stream | None = None) -> torch.cuda.Event:\n    pass\n\n"
           "class Worker:\n    graph: torch.cuda.CUDAGraph | None = None\n\n"
           "torch.cuda.Stream = torch.xpu.Stream\ntorch.cuda.Event = torch.xpu.Event\n")
    assert codes(scan_source({"a.py": src})) == []


def test_per_backend_dispatch_chains_are_portable(scan_source):
    src = ("import torch\n"
           "def sync(dev):\n"
           "    if dev.type == 'xpu':\n        torch.xpu.synchronize()\n"
           "    elif dev.type == 'cuda':\n        torch.cuda.synchronize()\n"
           "    else:\n        pass\n"
           "def fallback():\n"
           "    if hasattr(torch, 'accelerator'):\n        torch.accelerator.synchronize()\n"
           "    else:\n        torch.cuda.synchronize()\n"
           "def cuda_only():\n"
           "    if torch.cuda.is_available():\n        torch.cuda.synchronize()\n"
           "    else:\n        time.sleep(1)\n"
           "def same_branch(x):\n"
           "    if x:\n        torch.cuda.synchronize()\n        d = torch.accelerator.current_accelerator()\n"
           "    else:\n        pass\n")
    found = {f.line: f for f in scan_source({"a.py": src}).findings if f.rule == "LK204"}
    assert sorted(found) == [6, 13, 16, 21]  # every tie is reported; its context says what it does
    # the CUDA branch after an XPU branch, tested on the tensor's device: nothing raises anywhere
    assert found[6].context == "guarded" and set(found[6].targets.values()) == {"works"}
    assert found[6].severity == "info"
    # the else after a torch.accelerator branch: the accelerators take that branch first
    assert found[13].context == "guarded"
    assert {t for t, e in found[13].targets.items() if e == "works"} == set(targets.with_role("torch-accelerator"))
    # only where CUDA is available: other accelerators skip it, the CPU does not need it
    assert found[16].context == "guarded" and found[16].severity == "minor"
    assert found[16].targets == {t: "works" if targets.has_role(t, "accepts-cuda-calls") or targets.has_role(t, "host")
                                 else "degrades" for t in targets.names()}
    assert "raises" not in found[16].message
    # an unrelated test: the main path
    assert found[21].context is None and found[21].targets["cpu"] == "raises"


def test_setting_a_flag_is_the_use(scan_source):
    src = ("import torch\nprev = torch.backends.cudnn.benchmark\ntorch.backends.cudnn.benchmark = prev\n"
           "torch.backends.cuda.matmul.allow_tf32 = False\n")
    assert codes(scan_source({"a.py": src})) == [(3, "LK216"), (4, "LK218")]


def test_cpu_amp_and_portable_amp_are_not_reported(scan_source):
    src = ("import torch\nwith torch.cpu.amp.autocast():\n    pass\n"
           "with torch.amp.autocast(device_type=dev.type):\n    pass\n"
           "scaler = torch.amp.GradScaler(dev.type)\nfrom torch.amp import GradScaler\n")
    assert codes(scan_source({"a.py": src})) == []


def test_cuda_amp_gradscaler_is_lk209_only(scan_source):
    src = "import torch\nscaler = torch.cuda.amp.GradScaler()\n"
    assert codes(scan_source({"a.py": src})) == [(2, "LK209")]


def test_capability_values_in_reports_are_not_gates(scan_source):
    src = ("import torch\nprint(f'cuda {torch.version.cuda}')\nmeta = {'cuda': torch.version.cuda}\n"
           "self.cuda_runtime = torch.version.cuda\n"
           "if torch.version.cuda is not None:\n    pass\n"
           "ok = torch.cuda.is_bf16_supported()\n")
    assert codes(scan_source({"a.py": src})) == [(5, "LK215"), (7, "LK215")]


def test_text_that_mentions_the_api_is_never_reported(scan_source):
    src = ('"""torch.cuda.synchronize() and torch.backends.cudnn.benchmark."""\n'
           "import torch\n# torch.cuda.empty_cache()\n"
           'logger.info("call torch.cuda.manual_seed_all(0)")\n'
           'parser.add_argument("--sync", help="uses torch.cuda.synchronize()")\n')
    assert codes(scan_source({"a.py": src})) == []


def _cuda_api_table() -> dict:
    with (catalogue_dir() / "cuda_api.toml").open("rb") as handle:
        return tomllib.load(handle)


def test_every_row_names_a_family_rule_and_every_rule_has_rows_and_effects():
    family = {r.name: r for r in all_rules() if r.code.startswith("LK2") and isinstance(r, ApiRule)}
    table = _cuda_api_table()
    rows = table["api"]
    assert {row["rule"] for row in rows} == set(family)
    for row in rows:
        assert row["replacement"], row["name"]
        assert row.get("scope", "all") in {"all", "import", "ref"}
    for name in family:  # a row each (sparse: only what differs from the family default), resolved everywhere
        assert name in table["effects"], name
        assert set(load_catalogue().effects[name]) == set(targets.names()), name


@pytest.mark.parametrize("name", ["torch.cuda.nccl", "torch.cuda.comm", "torch.cuda.jiterator"])
def test_other_families_namespaces_are_not_claimed(name):
    names = {row["name"] for row in _cuda_api_table()["api"]}
    assert name + ".*" not in names and name not in names

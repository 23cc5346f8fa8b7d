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
    fix_paths(scan([str(tmp_path)], settings), unsafe=unsafe, write=True, max_bytes=settings.max_bytes)
    return path.read_text(encoding="utf-8"), [f for f in scan([str(tmp_path)], settings).findings if f.path == "train.py"]


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


def test_autocast_and_the_scaler_take_the_project_device_type_keeping_dtype_and_flags(tmp_path):
    source = ("import torch\nmodel = torch.nn.Linear(2, 2).cuda()\nscaler = torch.amp.GradScaler('cuda', enabled=use_amp)\n"
              "with torch.autocast(device_type='cuda', dtype=torch.bfloat16):\n    pass\n"
              "with torch.amp.autocast('cuda', enabled=False):\n    pass\n")
    text, findings = fixed(tmp_path, source)
    assert text == ("import torch\nfrom device_choice import get_device\nmodel = torch.nn.Linear(2, 2).to(get_device())\n"
                    "scaler = torch.amp.GradScaler(get_device().type, enabled=use_amp)\n"
                    "with torch.autocast(device_type=get_device().type, dtype=torch.bfloat16):\n    pass\n"
                    "with torch.amp.autocast(get_device().type, enabled=False):\n    pass\n")
    assert findings == []


def test_amp_on_the_device_is_unsafe_so_the_default_fix_leaves_it(tmp_path):
    # elsewhere AMP would start running (bf16 on the CPU): a change of numerics the user opts into
    text, findings = fixed(tmp_path, "import torch\nwith torch.autocast('cuda'):\n    pass\n", unsafe=False)
    assert text == "import torch\nwith torch.autocast('cuda'):\n    pass\n" and [f.rule for f in findings] == ["LK106"]
    assert "get_device().type" in fixed(tmp_path, text)[0]  # with --unsafe-fixes


def test_amp_left_alone_where_cuda_is_chosen_on_purpose_or_on_import(tmp_path):
    source = ("import torch\nif torch.cuda.is_available():\n    with torch.autocast('cuda'):\n        pass\n\n"
              "@torch.amp.custom_fwd(device_type='cuda')\ndef forward(ctx, x):\n    return x\n"
              "with torch.autocast(device_type='cuda:0' if fast else 'cpu'):\n    pass\n")
    text, findings = fixed(tmp_path, source)
    assert "autocast('cuda')" in text and "custom_fwd(device_type='cuda')" in text and "'cuda:0' if fast" in text
    assert text == source and len([f for f in findings if f.rule == "LK106"]) == 2  # the IfExp is not reported
    reasons = [f.fix.reason for f in findings if f.rule == "LK106" and f.fix is not None]
    assert reasons == ["not rewritten: a custom_fwd/custom_bwd decorator runs on import, before the program "
                       "chooses its device"], reasons


def test_nccl_becomes_the_backend_for_the_project_device_once_the_file_is_cuda_clean(tmp_path):
    source = ("import os\nimport torch\nimport torch.distributed as dist\n\n"
              "torch.cuda.set_device(int(os.environ['LOCAL_RANK']))\ndist.init_process_group(backend='nccl')\n"
              "model = torch.nn.Linear(2, 2).cuda()\n")
    text, findings = fixed(tmp_path, source)
    assert "dist.init_process_group(backend=dist.get_default_backend_for_device(get_device()))" in text, text
    assert "    torch.accelerator.set_device_index(int(os.environ['LOCAL_RANK']))" in text and findings == []


def test_nccl_stays_while_a_raising_tie_remains(tmp_path):
    # a stated CUDA requirement is not rewritten: the file would still stop on the CPU, so nccl stays too
    source = "import torch.distributed as dist\ndist.init_process_group('nccl')\nassert x.device.type == 'cuda'\n"
    text, findings = fixed(tmp_path, source)
    assert "init_process_group('nccl')" in text
    held = [f.fix.reason for f in findings if f.rule == "LK301"]
    assert held and held[0].startswith("held back until this file is CUDA-clean"), held


def test_a_printed_current_device_does_not_leave_a_raise_behind(tmp_path):
    # the same int on NVIDIA (display_same): the message reads the same there, and 0 on the CPU
    text, findings = fixed(tmp_path, "import torch\nmodel = torch.nn.Linear(2, 2).cuda()\n"
                                     "print('running on', torch.cuda.current_device())\n")
    assert "torch.cuda.current_device()" not in text, text
    assert "print('running on', (torch.accelerator.current_device_index() if torch.accelerator.is_available() " \
           "else 0))" in text, text
    assert not [f for f in findings if f.rule == "LK203"], findings


def test_a_printed_current_device_inside_an_f_string_keeps_its_quotes(tmp_path):
    text, _ = fixed(tmp_path, 'import torch\nprint(f"GPU {torch.cuda.current_device()}: \'ok\'")\n')
    assert text == ('import torch\nprint(f"GPU {(torch.accelerator.current_device_index() if '
                    'torch.accelerator.is_available() else 0)}: \'ok\'")\n'), text


def test_other_printed_cuda_calls_stay_as_they_are(tmp_path):
    # traps: a printed availability check would print True on MPS where the message means CUDA (and it
    # raised nowhere); "torch.cuda.current_device()" in a string or a comment is no call at all
    source = ("import torch as th\nprint('available:', th.cuda.is_available())\n"
              "print('torch.cuda.current_device() is the index')  # th.cuda.current_device()\n")
    text, findings = fixed(tmp_path, source)
    assert text == source, text
    held = [f.fix.reason for f in findings if f.rule == "LK201" and f.fix is not None]
    assert held and "display context" in held[0], [(f.rule, f.fix) for f in findings]


def cuda_clean_after_fixing(tmp_path, source: str) -> tuple[str, list]:
    """The fixed text and the raising ties the gate names for it: the reason the swap of
    `torch.cuda.synchronize()` stays held, or nothing when it applied."""
    text, findings = fixed(tmp_path, source)
    reasons = [f.fix.reason for f in findings if f.rule == "LK204" and f.fix is not None and f.fix.reason]
    return text, [r for r in reasons if r.startswith("held back until this file is CUDA-clean")]


SWAPPABLE = "import torch\nif torch.cuda.is_available():\n    torch.cuda.synchronize()\n"


def test_a_printed_call_that_raises_on_the_cpu_holds_the_gated_swaps(tmp_path):
    # get_device_name has no rewrite: the print still raises on the CPU, and the file is not CUDA-clean
    text, blockers = cuda_clean_after_fixing(tmp_path, SWAPPABLE + "print('on', torch.cuda.get_device_name(0))\n")
    assert text.startswith(SWAPPABLE) and "print('on', torch.cuda.get_device_name(0))" in text, text
    assert blockers and "LK214 at 4:" in blockers[0], blockers  # named as what keeps it from being CUDA-clean


def test_a_printed_current_device_no_longer_holds_the_gated_swaps(tmp_path):
    text, blockers = cuda_clean_after_fixing(tmp_path, SWAPPABLE + "print('on', torch.cuda.current_device())\n")
    assert "torch.accelerator.synchronize()" in text and "torch.cuda" not in text and blockers == [], (text, blockers)


def test_a_printed_cuda_fact_that_raises_nowhere_does_not_hold_the_gate(tmp_path):
    text, blockers = cuda_clean_after_fixing(tmp_path, SWAPPABLE + "print('built for', torch.version.cuda)\n")
    assert "torch.accelerator.synchronize()" in text and blockers == [], (text, blockers)


def test_a_printed_call_under_a_device_check_no_swap_touches_does_not_hold_the_gate(tmp_path):
    # `x.is_cuda` stays as it is: the print still runs only on CUDA
    text, blockers = cuda_clean_after_fixing(tmp_path, SWAPPABLE + "x = torch.ones(1)\nif x.is_cuda:\n"
                                                                   "    print('on', torch.cuda.current_device())\n")
    assert "torch.accelerator.synchronize()" in text and blockers == [], (text, blockers)


def test_a_printed_call_under_an_availability_check_holds_the_gate(tmp_path):
    # the swap would turn this check into an accelerator check too, and the print would raise on MPS/XPU
    source = SWAPPABLE + "if torch.cuda.is_available():\n    print('on', torch.cuda.get_device_name(0))\n"
    text, blockers = cuda_clean_after_fixing(tmp_path, source)
    assert text == source and blockers and "LK214 at 5:" in blockers[0], (text, blockers)


def test_one_fix_run_reaches_the_device_type_from_an_implicit_scaler(tmp_path):
    source = "import torch\nscaler = torch.amp.GradScaler()\n"
    first, _ = fixed(tmp_path, source)
    assert "torch.amp.GradScaler(get_device().type)" in first, first
    assert (tmp_path / "device_choice.py").is_file()  # the module the rewrite imports was created in the same run
    second, _ = fixed(tmp_path, first)
    assert first == second, (first, second)  # a second run changes nothing


def test_an_implicit_scaler_under_a_default_fix_stays_cuda_and_needs_no_owner(tmp_path):
    # the device-type rewrite is unsafe: a default --fix writes "cuda" (what the scaler meant) and stops there
    first, _ = fixed(tmp_path, "import torch\nscaler = torch.amp.GradScaler()\n", unsafe=False)
    assert "GradScaler(\"cuda\")" in first or "GradScaler('cuda')" in first, first
    assert not (tmp_path / "device_choice.py").exists()
    assert fixed(tmp_path, first, unsafe=False)[0] == first


def test_a_default_fix_does_not_switch_the_backend_while_set_device_stays(tmp_path):
    # the gate counts the unsafe set_device swap as done; a default --fix does not apply it
    source = "import torch\nimport torch.distributed as dist\ntorch.cuda.set_device(0)\ndist.init_process_group('nccl')\n"
    text, _ = fixed(tmp_path, source, unsafe=False)
    assert text == source


def test_a_cuda_device_block_keeps_its_index_on_nvidia_and_runs_without_an_accelerator(tmp_path):
    # device_index(i) raises without an accelerator, device_index(None) switches nothing (torch/accelerator)
    text, _ = fixed(tmp_path, "import torch as th\nwith th.cuda.device(local_rank):\n    pass\n"
                              "with th.cuda.device(None):\n    pass\n")
    assert text == ("import torch as th\nwith th.accelerator.device_index(local_rank if th.accelerator.is_available() "
                    "else None):\n    pass\nwith th.accelerator.device_index(None):\n    pass\n"), text


def test_a_cuda_device_block_over_a_device_object_or_a_string_is_left_with_its_reason(tmp_path):
    # traps (pattern 6): device_index takes an int or None, `gpu` here is a torch.device (TypeError),
    # and "with torch.cuda.device(1)" in a string is no call
    source = ('import torch\ngpu = torch.device("cuda", 1)\nwith torch.cuda.device(gpu):\n    pass\n'
              'note = "with torch.cuda.device(1):"\n')
    text, findings = fixed(tmp_path, source)
    assert "with torch.cuda.device(gpu):" in text and "note = \"with torch.cuda.device(1):\"" in text, text
    held = [f.fix.reason for f in findings if f.rule == "LK203" and f.fix is not None]
    assert held and "not known to be one" in held[0], held

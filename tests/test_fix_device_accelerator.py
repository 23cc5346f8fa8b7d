"""A project whose device an Accelerator (accelerate) or a Fabric (lightning) owns (issue 19): no
device module is created, and a device tie is rewritten to `accelerator.device` / `fabric.device`
only where that object certainly exists when the tie runs (auditor/fix/accelerator_scope.py);
elsewhere it keeps the owner's reason. The rewrite is unsafe: on NVIDIA the object's device is the
one `.cuda()` chose unless the project configured accelerate otherwise (`cpu=True`, a launch config)."""

from __future__ import annotations

from auditor.config.settings import Settings
from auditor.fix.apply import fix_paths
from auditor.pipeline.scan import scan


def fixed(tmp_path, code: str, unsafe: bool = True) -> tuple[str, list]:
    path = tmp_path / "train.py"
    path.write_text(code, encoding="utf-8")
    options = Settings(cache=False, torch_version="2.13", jobs=1)
    run = fix_paths(scan([str(tmp_path)], options), unsafe, True, options.max_bytes)
    assert not run.errors, run.errors
    remaining = [f for file in run.files for f in (file.remaining or [])]
    after = path.read_text(encoding="utf-8")
    compile(after, str(path), "exec", dont_inherit=True)
    again = fix_paths(scan([str(tmp_path)], options), unsafe, True, options.max_bytes)
    assert again.changed == [] and again.created == [], "a second --fix run changed something"
    assert not (tmp_path / "device_choice.py").exists()
    return after, remaining or scan([str(tmp_path)], options).findings


def test_ties_after_the_accelerator_in_the_same_function_take_its_device(tmp_path):
    source = ("import torch\nfrom accelerate import Accelerator as Acc\n\n\ndef main():\n    accelerator = Acc()\n"
              "    model = torch.nn.Linear(2, 2).cuda()\n    batch = torch.randn(3, 2, device=\"cuda\")\n"
              "    other = batch.to(\"cuda:1\")\n    print(\"cuda\")  # x.cuda()\n")
    after, _ = fixed(tmp_path, source)
    assert after == ("import torch\nfrom accelerate import Accelerator as Acc\n\n\ndef main():\n    accelerator = Acc()\n"
                     "    model = torch.nn.Linear(2, 2).to(accelerator.device)\n"
                     "    batch = torch.randn(3, 2, device=accelerator.device)\n"
                     "    other = batch.to(torch.device(accelerator.device.type, 1))\n    print(\"cuda\")  # x.cuda()\n")


def test_the_rewrite_is_unsafe_so_the_default_fix_leaves_it(tmp_path):
    source = "from accelerate import Accelerator\n\naccelerator = Accelerator()\nx = t.cuda()\n"
    after, findings = fixed(tmp_path, source, unsafe=False)
    assert after == source
    assert [f.fix.applicability for f in findings if f.rule == "LK102"] == ["unsafe"]


def test_a_fabric_at_module_level_reaches_functions_defined_after_it(tmp_path):
    source = ("import lightning as L\nfabric = L.Fabric(accelerator=\"auto\")\n\n\ndef step(x):\n"
              "    return x.cuda()\n")
    after, _ = fixed(tmp_path, source)
    assert after == ("import lightning as L\nfabric = L.Fabric(accelerator=\"auto\")\n\n\ndef step(x):\n"
                     "    return x.to(fabric.device)\n")


def test_self_accelerator_built_in_init_reaches_the_other_methods(tmp_path):
    source = ("from accelerate import Accelerator\n\n\nclass Trainer:\n    def __init__(self, model):\n"
              "        self.model = model.cuda()\n        self.accelerator = Accelerator()\n"
              "        self.head = model.head.cuda()\n\n    def step(self, x):\n        return self.model(x.cuda())\n\n"
              "    @staticmethod\n    def helper(x):\n        return x.cuda()\n")
    after, _ = fixed(tmp_path, source)
    assert "        self.head = model.head.to(self.accelerator.device)\n" in after
    assert "        return self.model(x.to(self.accelerator.device))\n" in after
    # before the object exists, and in a static method (no self): the accelerator swap, as out of reach
    assert "        self.model = model.to(torch.accelerator.current_accelerator())\n" in after
    assert "        return x.to(torch.accelerator.current_accelerator())\n" in after


def test_where_the_object_may_not_exist_the_ties_keep_the_owners_reason(tmp_path):
    # traps: built after the tie, under a condition, rebound, in another function, or only annotated
    source = ("import torch\nfrom accelerate import Accelerator\n\n\ndef before():\n    x = torch.ones(1).to(\"cuda\")\n"
              "    accelerator = Accelerator()\n\n\ndef conditional(flag):\n    if flag:\n"
              "        accelerator = Accelerator()\n    return torch.ones(1).to(\"cuda\")\n\n\n"
              "def other(acc: Accelerator):\n    return torch.ones(1).to(\"cuda\")\n\n\n"
              "def rebound():\n    accelerator = Accelerator()\n    accelerator = None\n"
              "    return torch.ones(1).to(\"cuda\")\n")
    after, findings = fixed(tmp_path, source)
    assert after.count('.to("cuda")') == 4, after
    reasons = [f.fix.reason for f in findings if f.rule == "LK101" and f.fix is not None]
    assert len(reasons) == 4 and all("Accelerator/Fabric" in r for r in reasons), reasons

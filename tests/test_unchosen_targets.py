"""A per-device dispatch's CUDA branch on a target no dispatch of the project chooses
(auditor.analysis.crossfile.link_unchosen_targets): the project never picks that device, so its
value there is the host's and the branch degrades instead of raising (Lightning on XPU)."""

from __future__ import annotations

CONNECTOR = ("class Connector:\n"
             "    def precision(self):\n"
             "        if self.flag == 'tpu':\n"
             "            return 'xla'\n"
             "        device = self.flag if self.flag in ('cpu', 'mps') else 'cuda'\n"
             "        return device\n")


def _dispatch(result) -> object:
    (finding,) = [f for f in result.findings if f.rule == "LK101" and f.line == 5]
    return finding


def test_the_cuda_branch_degrades_on_targets_no_dispatch_chooses(scan_source):
    finding = _dispatch(scan_source({"lib/__init__.py": "", "lib/connector.py": CONNECTOR}))
    assert finding.targets["xpu"] == "degrades" and finding.targets["npu"] == "degrades"
    assert finding.targets["cpu"] == "works" and finding.targets["mps"] == "works"
    assert finding.severity == "minor"
    assert "no dispatch in the project gives" in finding.message and "XPU" in finding.message


def test_trap_a_target_another_file_dispatches_to_keeps_raising(scan_source):
    # another module gives xpu its own branch: the project does choose it, so the value may be xpu
    other = ("import torch\n\ndef pick(flag):\n    if flag == 'xpu':\n        return torch.device('xpu')\n"
             "    return torch.device('cuda')\n")
    finding = _dispatch(scan_source({"lib/__init__.py": "", "lib/connector.py": CONNECTOR, "lib/pick.py": other}))
    assert finding.targets["xpu"] == "raises" and finding.targets["npu"] == "degrades"
    assert finding.severity == "major"


def test_trap_a_dispatch_without_a_host_branch_keeps_raising(scan_source):
    no_host = CONNECTOR.replace("('cpu', 'mps')", "('mps',)")
    finding = _dispatch(scan_source({"lib/__init__.py": "", "lib/connector.py": no_host}))
    assert finding.targets["xpu"] == "raises" and finding.targets["cpu"] == "raises"

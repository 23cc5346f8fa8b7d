"""Name resolution traps, checked through LK201 (torch.cuda.is_available) and LK102 (.cuda())."""

from __future__ import annotations

import pytest


def lines_of(result, code="LK201"):
    return sorted(f.line for f in result.findings if f.rule == code)


CASES = {
    "alias import": ("import torch as th\nth.cuda.is_available()\n", [2]),
    "from-import module alias": ("from torch import cuda as tc\ntc.is_available()\n", [2]),
    "submodule import": ("import torch.cuda\ntorch.cuda.is_available()\n", [2]),
    "from-import function": ("from torch.cuda import is_available as ok\nok()\n", [1, 2]),
    "assignment alias": ("import torch\nc = torch.cuda\nc.is_available()\n", [3]),
    "parameter shadows module": ("from torch import cuda\ndef f(cuda):\n    return cuda.is_available()\n", []),
    "local assignment shadows": ("from torch import cuda\ndef f():\n    cuda = Thing()\n    return cuda.is_available()\n", []),
    "no import at all": ("cuda.is_available()\ntorch.cuda.is_available()\n", []),
    "import in function": ("def f():\n    import torch\n    return torch.cuda.is_available()\n", [3]),
    "function import does not leak": ("def f():\n    import torch\ntorch.cuda.is_available()\n", []),
    "try/except fallback keeps import": (
        "try:\n    import torch\nexcept ImportError:\n    torch = None\ntorch.cuda.is_available()\n", [5]),
    "class attribute invisible in method": (
        "import torch\nclass A:\n    torch = None\n    def m(self):\n        return torch.cuda.is_available()\n", [5]),
    "global statement": ("import torch\ndef f():\n    global torch\n    torch.cuda.is_available()\n", [4]),
    "comprehension variable shadows": ("from torch import cuda\nxs = [cuda.is_available() for cuda in devices]\n", []),
    "lambda parameter shadows": ("from torch import cuda\nf = lambda cuda: cuda.is_available()\n", []),
    "relative import is local": ("from . import cuda\ncuda.is_available()\n", []),
    "string and comment": ('import torch\n# torch.cuda.is_available()\nx = "torch.cuda.is_available()"\n', []),
    "docstring": ('import torch\ndef f():\n    """Uses torch.cuda.is_available()."""\n', []),
    "decorated function body": ("import torch\n@decorator\ndef f(x=torch.cuda.is_available()):\n    pass\n", [3]),
    "with-as shadows": ("from torch import cuda\nwith open(p) as cuda:\n    cuda.is_available()\n", []),
    "keyword argument name is not a reference": ("import torch\nf(cuda=1)\n", []),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_resolution(name, scan_source):
    code, expected = CASES[name]
    result = scan_source({"m.py": code}, select=["LK201"])
    assert not result.errors
    assert lines_of(result) == expected


def test_cuda_method_on_any_expression(scan_source):
    result = scan_source({"m.py": "a = f(x).cuda()\nb = xs[0].cuda()\nc = (y + z).cuda(1)\n"}, select=["LK102"])
    assert lines_of(result, "LK102") == [1, 2, 3]


def test_positions_are_one_based_and_exclusive(scan_source):
    result = scan_source({"m.py": "import torch\nok = torch.cuda.is_available()\n"}, select=["LK201"])
    (finding,) = result.findings
    assert (finding.line, finding.column, finding.end_line, finding.end_column) == (2, 6, 2, 31)


def test_positions_count_code_points(scan_source):
    result = scan_source({"m.py": "import torch\ns = 'é'; ok = torch.cuda.is_available()\n"}, select=["LK201"])
    (finding,) = result.findings
    assert finding.column == len("s = 'é'; ok = ") + 1


def test_findings_in_multiline_call(scan_source):
    code = "import torch\nx = foo(\n    1,\n    torch.cuda.is_available(),\n)\n"
    result = scan_source({"m.py": code}, select=["LK201"])
    assert [(f.line, f.column) for f in result.findings] == [(4, 5)]

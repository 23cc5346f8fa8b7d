"""positions.node_ranges must agree with libcst's PositionProvider, however few nodes are asked."""

from __future__ import annotations

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider

from auditor.python.positions import node_ranges

SOURCE = '''\
import torch  # é

@decorator(torch.cuda.is_available())
def f(x, device="cuda"):
    """Doc."""
    y = (
        x.to(device)
        .cuda()
    )
    return [torch.zeros(3, device="cuda:0") for _ in range(2)]


class A:
    z = f(1) if torch.cuda.is_available() else None
'''


def _calls(module: cst.Module) -> list[cst.CSTNode]:
    found: list[cst.CSTNode] = []

    class Collect(cst.CSTVisitor):
        def visit_Call(self, node: cst.Call) -> None:
            found.append(node)

        def visit_SimpleString(self, node: cst.SimpleString) -> None:
            found.append(node)

    module.visit(Collect())
    return found


def test_ranges_match_position_provider_for_any_subset():
    module = cst.parse_module(SOURCE)
    wrapper = MetadataWrapper(module, unsafe_skip_copy=True)
    expected = wrapper.resolve(PositionProvider)
    nodes = _calls(module)
    assert len(nodes) > 8
    for subset in (nodes, nodes[:1], nodes[2:4], nodes[-1:], nodes[::3]):
        ranges = node_ranges(module, SOURCE, subset)
        for node in subset:
            want = expected[node]
            assert ranges[id(node)] == (want.start.line, want.start.column + 1, want.end.line, want.end.column + 1)

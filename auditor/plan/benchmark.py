"""Step 6 of the plan: the generated benchmark, `DIR/bench_T.py`.

A script that measures throughput the same way on the reference device and on the target under
conditions held equal (batch size, sequence length, dtype, mode, warm-up and measured steps,
written at its top, overridable by flags) and prints one line per device to paste next to
hourly prices. Its entry is resolved like the parity test's, when it runs."""

from __future__ import annotations

from collections.abc import Mapping

from auditor.plan.devices import NVIDIA, TargetDevice
from auditor.plan.generated import fill, subject_for


def benchmark_filename(target: str) -> str:
    return f"bench_{target.lower().replace('-', '_')}.py"


def render_benchmark(target: str, *, project: str, device: str | TargetDevice | None = None,
                     entry: str | None = None, reference: str | TargetDevice = NVIDIA,
                     devices: Mapping[str, TargetDevice] | None = None) -> str:
    """The benchmark script for `target` (its device from `device`, else from `devices`)."""
    subject = subject_for(target, project=project, device=device, entry=entry, reference=reference,
                          devices=devices)
    return fill("bench.py.tmpl", subject, benchmark_filename(target), "Measures")

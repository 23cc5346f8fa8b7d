"""Step 5 of the plan: the generated numerical-parity test, `DIR/test_parity_T.py`.

A pytest file that builds one model and its inputs under a seed, runs them on the reference
device and on the target, and compares the outputs on the CPU with tolerances per dtype written
at its top. It resolves the user's `--entry` by import when it runs, never here."""

from __future__ import annotations

from collections.abc import Mapping

from auditor.plan.devices import NVIDIA, TargetDevice
from auditor.plan.generated import fill, subject_for


def parity_filename(target: str) -> str:
    return f"test_parity_{target.lower().replace('-', '_')}.py"


def render_parity_test(target: str, *, project: str, device: str | TargetDevice | None = None,
                       entry: str | None = None, reference: str | TargetDevice = NVIDIA,
                       devices: Mapping[str, TargetDevice] | None = None) -> str:
    """The parity test for `target` (its device from `device`, else from `devices`)."""
    subject = subject_for(target, project=project, device=device, entry=entry, reference=reference,
                          devices=devices)
    return fill("parity.py.tmpl", subject, parity_filename(target), "Runs")

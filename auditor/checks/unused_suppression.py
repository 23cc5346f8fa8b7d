from __future__ import annotations

from auditor.checks.base import Invalid, Rule, Valid
from auditor.discover.kinds import KINDS
from auditor.model import Category, Severity

COMMENTED_KINDS = frozenset(kind.name for kind in KINDS if kind.comment is not None)


class UnusedSuppression(Rule):
    """Reported by the suppression pass (auditor/gates/suppress.py, auditor.pipeline.postprocess.apply_suppressions), not by a
    visitor: it needs every other rule's findings for the file first."""
    subject = "{problem}"
    fields = frozenset({"problem"})

    code = "LK001"
    name = "unused-suppression"
    category = Category.SUPPRESSION
    severity = Severity.MINOR
    message = "{problem}."
    suggestion = "Delete it (the finding carries the edit that does): a stale suppression would hide the next lock-in here."
    file_kinds = COMMENTED_KINDS  # every kind with comments (auditor.discover.kinds)
    targets = {"others": "works"}  # costs no portability points
    what = ("Finds suppression comments (`# lockin: ignore[...]`, `# noqa: LK...`, `# lockin: ignore-file[...]`) "
            "that silence nothing: the rule they name reports nothing there any more, or the code names no rule "
            "(a typo such as `LK1O2`). Codes of other linters in a `# noqa:` list are left alone; a code for a rule "
            "that was not selected in this run is not judged.")
    why = ("A suppression outlives the lock-in it was written for: when the line changes again, new lock-in on it "
           "is silenced without anyone seeing it. A misspelt code silences nothing and only looks like it does.")
    instead = ("Delete the comment, or just the stale code in its list (the finding's fix does exactly that). "
               "ruff users: add `lint.external = [\"LK\"]` so ruff's RUF100 keeps `# noqa: LK...` comments.")

    VALID = [
        Valid("import torch\nx = m.cuda()  # noqa: LK102\n"),
        Valid("import torch\nx = m.cuda()  # lockin: ignore[cuda-method-call]\n"),
        Valid("import os  # noqa: F401\n"),
        Valid('import torch\ns = "# lockin: ignore[LK102]"\n'),
        Valid("# lockin: ignore-file[LK102]\nimport torch\nx = m.cuda()\n"),
        Valid("flash-attn  # lockin: ignore[LK504]\n", path="requirements.txt"),
    ]
    INVALID = [
        Invalid("import torch\nx = 1  # lockin: ignore[LK102]\n", line=2),
        Invalid("import torch\nx = m.cuda()  # noqa: LK102, LK999\n", line=2),
        Invalid("import torch\nx = m.cuda()  # lockin: ignore[LK1O2]\n", line=2),
        Invalid("import os\n\n# lockin: ignore-file\n", line=3),
        Invalid("numpy  # lockin: ignore[LK504]\n", path="requirements.txt", line=1),
    ]

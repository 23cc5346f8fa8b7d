"""A progress bar on stderr for long scans (rich is imported only when one is shown)."""

from __future__ import annotations

from typing import Any

# Scans with less candidate work than this finish before a bar would be worth drawing.
MIN_BYTES = 512 * 1024


class Progress:
    """Counts candidate bytes checked; draws nothing unless `enabled` and the work is long."""

    def __init__(self, enabled: bool, total_bytes: int, files: int) -> None:
        self._bar: Any = None
        self._task: Any = None
        self._enabled = enabled and total_bytes >= MIN_BYTES
        self._total = total_bytes
        self._files = files

    def start(self) -> None:
        if not self._enabled or self._bar is not None:
            return
        from rich.console import Console
        from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

        self._bar = Progress(
            TextColumn(f"checking {self._files} files"), BarColumn(), TextColumn("{task.percentage:>3.0f}%"),
            TimeElapsedColumn(), TimeRemainingColumn(), console=Console(stderr=True), transient=True)
        self._task = self._bar.add_task("scan", total=self._total)
        self._bar.start()

    def advance(self, amount: int) -> None:
        if self._bar is not None:
            self._bar.advance(self._task, amount)

    def stop(self) -> None:
        if self._bar is not None:
            self._bar.stop()
            self._bar = None

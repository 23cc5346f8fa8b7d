"""Imported by the pool's forkserver when it starts (parallel.WORKER_MODULES), never by the main
process: the forkserver, and with it the workers it forks, dies with the run that started it."""

from auditor.sandbox.lifetime import die_with_parent

die_with_parent()

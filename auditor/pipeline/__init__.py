"""The run's orchestration: every file through the stages, over processes and the cache.

- `scan.py`: `scan()`: discover, reuse cached results, prefilter, check the rest, post-process;
- `runtime.py`: the per-process `Runtime` (rules, walker, prefilter) that checks one file: read,
  rule out, decode, check by kind, suppressions; only a run that checks files builds one;
- `kind_checks.py`: each file kind's check (the `check` entry points of auditor.discover.kinds);
- `postprocess.py`: a file's suppression comments (LK001 for those silencing nothing), then,
  across the scan: duplicates, cross-file links, alternatives, per-file-ignores, severities;
- `parallel.py`: the candidate files over a pool of processes;
- `progress.py`: a progress bar on stderr for long scans.
"""

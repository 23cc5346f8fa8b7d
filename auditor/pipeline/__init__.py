"""The run's orchestration: every file through the stages, over processes and the cache.

- `scan.py`: `scan()`: discover, reuse cached results, prefilter, check the rest, collect;
- `parallel.py`: the candidate files over a pool of processes;
- `progress.py`: a progress bar on stderr for long scans.
"""

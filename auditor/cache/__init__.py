"""Beside the pipeline: what a run keeps for the next one (`.lockin_auditor_cache/`).

- `results.py`: the per-file results cache.
"""

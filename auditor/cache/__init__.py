"""Beside the pipeline: what a run keeps for the next one (`.lockin_auditor_cache/`, or --cache-dir).

- `results.py`: the per-file results cache (`open_cache`, `Cache`): each file's findings, errors
  and suppressed findings, with its size, mtime and content digest; `meta` for the rest;
- `keys.py`: what the results depend on (the settings key) and the content digest;
- `folder.py`: where the cache lives and how its folder is handled (hostile ground: no links,
  exclusive creation, only our own files touched);
- `reuse.py`: the discovered file list and the project facts a warm run reuses.
"""

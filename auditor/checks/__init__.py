"""Rule code: the built-in rules, one module each, and `registry.py` (finding them, and plugins).

Rule data (API mappings, packages, per-target effects) is the catalogue, `rules/*.toml`, loaded by
`auditor.catalogue`. Shared matchers live in `auditor/python/syntax.py`."""

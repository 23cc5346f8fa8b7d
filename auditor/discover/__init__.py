"""Stage 1: which files a run reads, and as what kind.

- `kinds.py`: the file-kind registry (names, comment syntax, byte gate, reader, check) that
  discovery, the runtime, the prefilter, the cache and suppressions all dispatch on;
- `walk.py`: the directory walk (`discover`), as ruff walks: skipped folders, .gitignore,
  excludes, links that stay inside the scanned folder.
"""

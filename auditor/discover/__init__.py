"""Stage 1: which files a run reads, and as what kind.

- `kinds.py`: the file-kind registry (names, comment syntax, byte gate, reader, check) that
  discovery, the runtime, the prefilter, the cache and suppressions all dispatch on;
- `walk.py`: the directory walk (`discover`), as ruff walks: links that stay inside the scanned
  folder, an error entry for what cannot be listed or followed;
- `files.py`: what it finds (`SourceFile`, `Discovery`), the kind of a named file, display paths;
- `ignore.py`: what a run leaves out: folders never scanned, .gitignore files as git reads them
  (and the repository root), exclude globs, --force-exclude for named files;
- `patterns.py`: .gitignore patterns matched in bounded time whatever they hold.
"""

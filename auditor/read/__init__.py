"""Stage 2: bytes to text, and whether a file is worth parsing at all.

- `text.py`: reading a file (regular files only, never through a link, size-capped), decoding it
  (BOM, PEP 263) and what a line is; every later stage counts lines its way;
- `source.py`: a discovered file read for checking: its bytes or its error entry, and whether it
  can hold a finding at all (the Python prefilter, or its kind's byte gate);
- `prefilter.py`: the byte-level Python prefilter, built from the rules and the catalogue;
- `toml_guard.py`: tomllib, after refusing the key shapes it reads in quadratic time.
"""

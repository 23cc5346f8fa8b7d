"""Stage 2: bytes to text, and whether a file is worth parsing at all.

- `text.py`: reading a file (regular files only, never through a link, size-capped), decoding it
  (BOM, PEP 263) and what a line is; every later stage counts lines its way;
- `prefilter.py`: the byte-level prefilter that rules a Python file out before it is decoded.
"""

"""Stage 3 for Python files: parse once with libcst, walk once, place what the rules reported.

- `scan.py`: one Python file end to end (guard, parse, walk, positions, contexts, fixes);
- `walker.py`: the single walk that dispatches nodes to the rules;
- `names.py`: import/alias/shadowing tracking instead of libcst's scope metadata;
- `tree.py`: the children of a node, cheaply; `positions.py`: positions of the reported nodes only;
- `syntax.py`: what rules, readers and the context analysis read off nodes (string literals,
  call arguments, callee names, assignment targets). It holds no rule: readers and
  `auditor.analysis` use it without importing rule code.
"""

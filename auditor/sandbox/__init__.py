"""Containing what a hostile file can do to a run (README: Security).

- `parse_guard.py`: whether libcst may parse a Python source at all (size, a byte screen, then
  CPython's own parse for suspicious files);
- `deep.py`: every parse and walk on one large-stack thread;
- `isolate.py`: what nothing can vouch for, in a forked child with a memory limit and a deadline;
- `lifetime.py`: child processes die with the run that started them.
"""

"""Containing what a hostile file can do to a run (README: Security).

- `parse_guard.py`: whether libcst may parse a Python source at all (size, a byte screen, then
  CPython's own parse for suspicious files);
- `deep.py`: every parse and walk on one large-stack thread;
- `isolate.py`: what nothing can vouch for, in a forked child with a memory limit and a deadline;
- `lifetime.py`: child processes die with the run that started them;
- `interpreter.py`: every Python interpreter the run starts is isolated from the working directory;
- `safe_files.py`: every write outside the cache folder, never through a link the checkout holds;
- `safe_git.py`: git over a stand-in repository that reads none of the checkout's configuration.
"""

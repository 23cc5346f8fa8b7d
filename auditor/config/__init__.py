"""What a run was asked to do: the configuration file and the command line, as one frozen
`Settings`.

- `settings.py`: `Settings` (and the in-house catalogue entries it carries);
- `files.py`: finding and reading the configuration file (never through a link out of the
  repository);
- `load.py`: the file's table and the command line turned into Settings, key by key, each one
  typed and validated;
- `errors.py`: `ConfigError` (exit 2 with one line) and the nearest-spelling hint.
"""

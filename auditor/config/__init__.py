"""What a run was asked to do: the configuration file and the command line, as one frozen
`Settings`.

- `keys.py`: the table of every key and option (what it sets, its type and default, its file key,
  its command-line option and help, how a value is read and checked): Settings, the file's reading
  and `audit scan`'s options all come from it, so a new key is one row;
- `settings.py`: `Settings`, its fields taken from the table;
- `files.py`: finding and reading the configuration file (never through a link out of the
  repository);
- `load.py`: the file's table and the command line turned into Settings, key by key;
- `entries.py`: the in-house packages and modules a configuration adds to the catalogue;
- `errors.py`: `ConfigError` (exit 2 with one line) and the nearest-spelling hint.
"""

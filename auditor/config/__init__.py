"""What a run was asked to do: the configuration file and the command line, as one frozen
`Settings`.

- `load.py`: finding and reading the configuration, and turning it into Settings.
"""

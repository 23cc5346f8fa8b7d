"""`audit server`: a language server over stdio (pygls). An editor's open file is checked in
memory as that file, exactly as `audit - --stdin-filename PATH` checks it (auditor.pipeline.stdin),
and its findings are published as diagnostics, with their safe fixes as code actions.

- check.py: the auditor's side (configuration, scan, fixes), no LSP types;
- positions.py: our 1-based code-point positions as LSP's 0-based UTF-16 ones;
- convert.py: findings and fixes as lsprotocol diagnostics and code actions;
- server.py: the pygls server (documents, debounce, publishing).

pygls is an optional dependency (the `server` extra): only `audit server` imports this package's
server, so an ordinary `audit PATH` run never loads it."""

SOURCE = "lockin-auditor"  # the diagnostics' `source`, and the fix-all code action kind's suffix

"""Check that no finding sits on text that is not code: a comment, a docstring, or a string
passed to a log / print / warning call.

    python bench/text_traps.py DIR [DIR ...]

Scans with audit, then looks at every Python finding's start position with the stdlib tokenizer
(comments) and ast (docstrings, the text of message-call strings; an f-string's {expressions}
run, so a CUDA call inside one is code). Prints the offending findings and a count;
exit 1 when there is any."""

from __future__ import annotations

import ast
import io
import os
import sys
import tokenize
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from auditor.config.settings import Settings  # noqa: E402
from auditor.pipeline.scan import scan  # noqa: E402

MESSAGE_CALLS = {"print", "debug", "info", "warning", "warn", "error", "exception", "critical", "log",
                 "echo", "secho", "fail", "skip", "xfail"}


def comment_lines(text: str) -> set[int]:
    found = set()
    try:
        for token in tokenize.generate_tokens(io.StringIO(text).readline):
            if token.type == tokenize.COMMENT:
                found.add(token.start[0])
    except (tokenize.TokenError, SyntaxError):
        pass
    return found


def text_spans(tree: ast.AST) -> list[tuple[int, int, int, int, str]]:
    """(line, col, end_line, end_col, why) of docstrings and message-call string arguments."""
    spans = []
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.Expr) \
                and isinstance(body[0].value, ast.Constant) and isinstance(body[0].value.value, str):
            d = body[0].value
            spans.append((d.lineno, d.col_offset, d.end_lineno, d.end_col_offset, "docstring"))
        if isinstance(node, ast.Call):
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            if name in MESSAGE_CALLS or name.endswith("Error") or name.endswith("Warning"):
                for arg in node.args:
                    if isinstance(arg, (ast.Constant, ast.JoinedStr)):
                        spans.append((arg.lineno, arg.col_offset, arg.end_lineno, arg.end_col_offset, f"{name}() message"))
                    if isinstance(arg, ast.JoinedStr):  # its {expressions} are code that runs
                        for part in arg.values:
                            if isinstance(part, ast.FormattedValue):
                                v = part.value
                                spans.append((v.lineno, v.col_offset, v.end_lineno, v.end_col_offset, "code"))
    return spans


def inside(line: int, col: int, span: tuple[int, int, int, int, str]) -> bool:
    return (span[0], span[1]) <= (line, col) < (span[2], span[3])


def main() -> int:
    dirs = sys.argv[1:] or ["."]
    bad = total = 0
    for directory in dirs:
        result = scan([directory], Settings(cache=False))
        by_path: dict[str, list] = {}
        for f in result.findings:
            if f.path.endswith((".py", ".pyi")):
                by_path.setdefault(f.path, []).append(f)
        for rel, findings in by_path.items():
            text = Path(result.root, rel).read_text(encoding="utf-8", errors="replace")
            comments = comment_lines(text)
            try:
                spans = text_spans(ast.parse(text))
            except (SyntaxError, ValueError, RecursionError):
                spans = []
            lines = text.splitlines()
            for f in findings:
                total += 1
                line_text = lines[f.line - 1] if f.line <= len(lines) else ""
                why = "comment" if f.line in comments and line_text.lstrip().startswith("#") else None
                around = [span for span in spans if inside(f.line, f.column - 1, span)]
                if why is None and around and not any(span[4] == "code" for span in around):
                    why = around[0][4]
                if why:
                    bad += 1
                    print(f"{os.path.join(directory, rel)}:{f.line}:{f.column}: {f.rule} on a {why}: {f.snippet[:90]}")
    print(f"{bad} of {total} Python findings on comments, docstrings or messages")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())

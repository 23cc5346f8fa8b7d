"""The parse guard: whether libcst may parse a decoded Python source at all.

libcst's native parser recurses once per level of nesting and, for some shapes, costs the square
(memory) or the cube (time) of the depth: on a 2-core machine, 1,000 nested `lambda:` take 210 MB,
2,000 take 770 MB; a chain of 1,000 `.b()` calls takes 3.4 s, 2,000 `[0]` subscripts 13 s, and
`a and a and ...` with 7,500 terms overflows an 8 MB stack (a segfault). Chains of `and`, `or`,
`elif` and adjacent strings cost linear time. Every parse runs on a thread with a large stack
(auditor/sandbox/deep.py), so depth alone no longer crashes; what is left is the cost of deep chains and
of sheer size, which the guard bounds before libcst sees the file.

Memory grows with the number of syntax units (punctuation, line ends, keywords; `parse_units`),
measured on libcst 1.9: 2.5-5.1 kB each on real code (200-550 bytes of memory per byte of
source), up to 8.9 kB for crafted files of one-token lines or subscripts. MAX_PARSE_UNITS keeps a
file of real code under ~300 MB and a crafted one under ~530 MB, so a run with two workers stays
near 1 GB. The largest real file in the corpus (452 kB of generated code, cutlass_library's
generator.py) has 51,609 units and takes 263 MB; a 9 MB file (3 GB and 40 s before) is refused."""

from __future__ import annotations

import ast
import re
import sys
from functools import lru_cache

from auditor.read.text import SourceError, brackets_too_deep

MAX_PARSE_UNITS = 60_000
# Cheap counts decide which files get CPython's exact check (a tenth of a libcst parse, plus a walk
# of the tree): below them, the deepest chain a crafted file can build costs libcst a few seconds.
# Ordinary code is dense in attributes and calls, so those are judged by their joints (see _JOINTS)
# and by runs of attributes rather than by their number.
GUARD_FILE_SIZE = 500_000
GUARD_COUNTS = {"additive": 800, "multiplicative": 1500, "bitwise": 1500, "nesting keywords": 600,
                "operators": 1500, "joints": 300}
# Attributes, calls and subscripts (subscripts weigh 3: libcst's cost per level is highest there):
# a chain of this weight costs libcst about a second on a busy 2-core machine.
GUARD_TRAILERS = 1000
# Above this depth of nested expressions of the kinds whose cost grows faster than linearly,
# libcst needs seconds or hundreds of MB for a few kB of source: the file is not checked.
MAX_CHAIN_DEPTH = 1000
_DEFAULT_RECURSION_LIMIT = 1000

_STRUCTURE = b"\n()[]{}.,:;=+-*/%@&|^~<>"
_NOT_STRUCTURE = bytes(b for b in range(256) if b not in _STRUCTURE)
_NESTING_KEYWORDS = (b"lambda", b"else", b"not ", b"await")  # nest like unary operators
_OTHER_KEYWORDS = (b" for ", b" and ", b" or ", b" if ", b"'", b'"')
_GAP = rb"(?:[ \t\f\r\n\\]|#[^\r\n]*+)*+"  # what may stand between two tokens of one expression
# A closing bracket followed by a call, a subscript or an attribute: the joints of a `.b().c[0]`
# chain, rare in ordinary code (a literal first character keeps the scan at C speed).
_JOINTS = (re.compile(rb"\)" + _GAP + rb"[.(\[]"), re.compile(rb"\]" + _GAP + rb"[.(\[]"))
_DEPTH_ERRORS = ("too many nested", "too complex", "too many levels of indentation", "parser stack overflow")
# Node types whose nesting costs libcst superlinear time or memory, with their weight.
_CHAIN_WEIGHT: dict[type, int] = {
    ast.BinOp: 1, ast.UnaryOp: 1, ast.Lambda: 1, ast.IfExp: 1, ast.Call: 1, ast.Attribute: 1,
    ast.Subscript: 2, ast.Await: 1, ast.Starred: 1, ast.NamedExpr: 1, ast.comprehension: 1,
}


# libcst's parser backtracks on the patterns of `case` clauses (CPython 3.11 accepts them): about
# twice the time per level of `(` or `[` and four times per `{` (issue 20, D6: `case [[[...40...]]]:`,
# 150 bytes, never finished; a 24-level one took 32 s). A pattern's cost is that product over its
# nesting, summed over siblings and clauses; this many units take libcst about a second.
MAX_PATTERN_COST = 1 << 17
_CASE = re.compile(rb"(?m)^[ \t]*case\b")
_PATTERN_FACTOR = {ord("("): 2, ord("["): 2, ord("{"): 4}
_CLOSING = frozenset(b")]}")
_QUOTES = frozenset(b"'\"")
_HEADER_END = frozenset(b":\n")
_TRIPLE = (b"'''", b'"""')


def pattern_cost(data: bytes) -> tuple[int, int]:
    """(estimated libcst cost of every `case` pattern, line of the costliest), by one linear scan
    of the `case` headers: brackets counted outside strings and comments, up to the `:` that ends
    each header. A line that starts with `case` but is no pattern costs little."""
    if b"case" not in data:
        return 0, 0
    total, worst, worst_line, resume = 0, 0, 0, 0
    for found in _CASE.finditer(data):
        if found.start() < resume:
            continue  # inside the previous header (an unclosed bracket): scanned already
        cost, resume = _header_cost(data, found.end())
        total += cost
        if cost > worst:
            worst, worst_line = cost, data.count(b"\n", 0, found.start()) + 1
        if total > MAX_PATTERN_COST:
            break
    return total, worst_line


def _header_cost(data: bytes, at: int) -> tuple[int, int]:
    """(cost, where the scan stopped) of the pattern from `at` to its header's end."""
    frames: list[list[int]] = []  # per open bracket: [factor, cost of what it holds]
    cost, end = 0, len(data)
    while at < end:
        byte = data[at]
        if byte in _PATTERN_FACTOR:
            frames.append([_PATTERN_FACTOR[byte], 0])
        elif byte in _CLOSING and frames:
            factor, inner = frames.pop()
            node = factor * max(1, inner)
            if frames:
                frames[-1][1] += node
            else:
                cost += node
        elif byte in _QUOTES:
            at = _string_end(data, at)
            continue
        elif byte == 35:  # `#`: a comment to the line's end
            newline = data.find(b"\n", at)
            at = end if newline < 0 else newline
            continue
        elif byte == 92:  # a backslash: the next byte is escaped (a line continuation)
            at += 2
            continue
        elif not frames and byte in _HEADER_END:
            return max(cost, 1), at
        at += 1
    return max(cost, 1), at


def _string_end(data: bytes, at: int) -> int:
    """Past the string literal opening at `at` (single or triple quoted, backslash escapes)."""
    quote = data[at:at + 3] if data[at:at + 3] in _TRIPLE else data[at:at + 1]
    at += len(quote)
    while at < len(data):
        if data[at] == 92:
            at += 2
        elif data.startswith(quote, at):
            return at + len(quote)
        elif len(quote) == 1 and data[at] == 10:
            return at
        else:
            at += 1
    return at


@lru_cache(maxsize=64)
def _attribute_run(links: int) -> re.Pattern[bytes]:
    """`links` attribute accesses in a row (`.a.b.c`), blanks and comments allowed between."""
    return re.compile(rb"\." + _GAP + rb"[A-Za-z_]\w*+" + _GAP + rb"(?:\." + _GAP + rb"[A-Za-z_]\w*+" + _GAP
                      + rb"){%d}" % (links - 1))


class _Counts:
    """The byte counts the guard needs, each taken at most once per file."""

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.marks = data.translate(None, _NOT_STRUCTURE)
        self.nesting = sum(map(data.count, _NESTING_KEYWORDS))

    @property
    def units(self) -> int:
        """An upper estimate of the syntax units libcst allocates nodes for (see MAX_PARSE_UNITS).
        Every unit takes a byte, so small files need no count."""
        if len(self.data) <= MAX_PARSE_UNITS:
            return len(self.data)
        return len(self.marks) + self.nesting + sum(map(self.data.count, _OTHER_KEYWORDS))

    def screen(self) -> str | None:
        """Why the file needs CPython's exact check, or None when the counts rule out any chain
        deep enough to matter."""
        data, c = self.data, self.marks.count
        if len(data) > GUARD_FILE_SIZE:
            return "size"
        if brackets_too_deep(self.marks):
            return "brackets"
        groups = {
            "additive": c(b"+") + c(b"-"),
            "multiplicative": c(b"*") + c(b"/") + c(b"%") + c(b"@"),
            # comparisons (`<`, `>`) chain flat: only shifts nest
            "bitwise": c(b"|") + c(b"&") + c(b"^") + c(b"~") + data.count(b"<<") + data.count(b">>"),
            "nesting keywords": self.nesting,
        }
        groups["operators"] = sum(groups.values())
        reason = next((name for name, value in groups.items() if value > GUARD_COUNTS[name]), None)
        if reason is not None:
            return reason
        dots = c(b".")
        if dots + c(b"(") + 3 * c(b"[") > GUARD_TRAILERS:
            joints = sum(len(pattern.findall(data)) for pattern in _JOINTS)
            if joints > GUARD_COUNTS["joints"]:
                return "joints"
            # A chain is runs of attributes between joints: with no run of `links`, it stays under
            # GUARD_TRAILERS levels.
            if dots > GUARD_TRAILERS // (joints + 1) and _attribute_run(max(4, GUARD_TRAILERS // (joints + 1))).search(data):
                return "attributes"
        return None


def parse_units(data: bytes) -> int:
    """An upper estimate of the syntax units libcst allocates nodes for (see MAX_PARSE_UNITS)."""
    return _Counts(data).units


def guard_python(text: str) -> bool:
    """Whether libcst may parse `text`: raises SourceError when it must not, returns True when the
    parse should run isolated (auditor/sandbox/isolate.py) because CPython could not vouch for the file.

    Every file pays two cheap scans (the unit count and the screen). A file the screen flags
    (under 10% of real code by size) gets CPython's own parse and a walk of its tree: a file
    CPython refuses as too deep, or whose deepest chain of costly expressions is over
    MAX_CHAIN_DEPTH, becomes a `parse` error; one CPython rejects for another reason (newer
    grammar than this interpreter's, or invalid) is parsed by libcst in an isolated process with
    memory and time limits. Must run on the large-stack thread (auditor/sandbox/deep.py)."""
    counts = _Counts(text.encode("utf-8", "surrogatepass"))
    units = counts.units
    if units > MAX_PARSE_UNITS:
        raise SourceError("too-large", f"about {units:,} syntax units, over the {MAX_PARSE_UNITS:,} that can be "
                                       "parsed in bounded memory; not scanned")
    cost, line = pattern_cost(counts.data)
    if cost > MAX_PATTERN_COST:
        raise SourceError("parse", f"`case` patterns nested too deeply (line {line}): libcst would take minutes "
                                   "to parse them; not scanned")
    if counts.screen() is None:
        return False
    try:
        if _bounded_depth_parses(text):
            return False  # no node nests deeper than MAX_CHAIN_DEPTH, so no chain does either
        tree = _compile(text, _DEFAULT_RECURSION_LIMIT)
    except (RecursionError, MemoryError):
        raise SourceError("parse", "nested too deeply for Python itself to parse; not scanned") from None
    except SyntaxError as exc:
        message = str(exc.msg)
        if any(marker in message for marker in _DEPTH_ERRORS):
            raise SourceError("parse", f"nested too deeply for Python itself to parse (line {exc.lineno}: "
                                       f"{message}); not scanned") from None
        return _unvetted(text, f"line {exc.lineno}: {message}")
    except (ValueError, TypeError) as exc:
        return _unvetted(text, str(exc))
    depth, line = deepest_chain(tree)
    if depth > MAX_CHAIN_DEPTH:
        raise SourceError("parse", f"expressions nested {depth} deep at line {line} (calls, operators, lambdas, "
                                   f"conditionals); over {MAX_CHAIN_DEPTH}, parsing would take minutes or GBs; "
                                   "not scanned")
    return False


def _unvetted(text: str, problem: str) -> bool:
    """A flagged file CPython rejects: newer grammar than this interpreter's (libcst may know it)
    or broken. Tokens still show how long its statements are: a short one goes to libcst in an
    isolated child; one with a statement too long to parse safely is refused with CPython's
    reason (a crafted broken file would otherwise cost the child's whole deadline)."""
    longest, line = longest_statement(text)
    if longest > MAX_CHAIN_DEPTH:
        raise SourceError("parse", f"syntax error ({problem}), and a statement at line {line} with {longest:,} "
                                   f"operators, calls or attributes, too many to parse safely; not scanned")
    return True


_CHAIN_TOKENS = frozenset({".", "(", "[", "+", "-", "*", "/", "//", "%", "@", "|", "&", "^", "~", "<<", ">>", "**",
                           ":=", "lambda", "not", "if", "else", "await"})


def longest_statement(text: str) -> tuple[int, int]:
    """(most chain tokens in one logical line, its first line), by Python's own tokenizer, up to
    the first point it cannot read past (an unclosed bracket makes the rest one statement)."""
    import io
    import tokenize

    best, best_line, current, start = 0, 1, 0, 1
    newline = (tokenize.NEWLINE, tokenize.ENDMARKER)
    try:
        for token in tokenize.generate_tokens(io.StringIO(text, newline=None).readline):
            if token.type in newline:
                current, start = 0, token.start[0] + 1
            elif token.string in _CHAIN_TOKENS and token.type in (tokenize.OP, tokenize.NAME):
                current += 1
                if current > best:
                    best, best_line = current, start
    except (tokenize.TokenError, SyntaxError, ValueError):
        pass
    return best, best_line


def _frames() -> int:
    frame, depth = sys._getframe(1), 0
    while frame is not None:
        frame, depth = frame.f_back, depth + 1
    return depth


def _compile(text: str, limit: int) -> ast.AST:
    """CPython's own parse under a recursion limit `limit` frames above the current depth
    (CPython 3.11 allows an AST about three times that deep), even on the large-stack thread."""
    previous = sys.getrecursionlimit()
    sys.setrecursionlimit(_frames() + limit)
    try:
        return compile(text, "<source>", "exec", ast.PyCF_ONLY_AST, dont_inherit=True)
    finally:
        sys.setrecursionlimit(previous)


_BOUNDED_LIMIT = MAX_CHAIN_DEPTH // 3 + 8


@lru_cache(maxsize=1)
def _depth_bound_works() -> bool:
    """Whether this interpreter's AST depth limit follows the recursion limit (3.11 does; later
    versions may count C stack instead): probed once on a chain just over and just under."""
    def parses(depth: int) -> bool:
        try:
            _compile("x = " + "-" * depth + "1\n", _BOUNDED_LIMIT)
        except RecursionError:
            return False
        return True

    return parses(MAX_CHAIN_DEPTH - 100) and not parses(MAX_CHAIN_DEPTH + 100)


def _bounded_depth_parses(text: str) -> bool:
    """True when CPython parses `text` with its AST depth held to about MAX_CHAIN_DEPTH: the one
    parse most flagged files need (a walk of the tree costs half as much again)."""
    if not _depth_bound_works():
        return False
    try:
        _compile(text, _BOUNDED_LIMIT)
    except (RecursionError, MemoryError):
        return False
    return True


def deepest_chain(tree: ast.AST) -> tuple[int, int]:
    """(weighted depth, line) of the deepest nesting of costly expressions (_CHAIN_WEIGHT)."""
    weights = _CHAIN_WEIGHT
    best, best_line = 0, 1
    stack: list[tuple[ast.AST, int]] = [(tree, 0)]
    pop, push = stack.pop, stack.append
    while stack:
        node, depth = pop()
        depth += weights.get(type(node), 0)
        if depth > best:
            best, best_line = depth, getattr(node, "lineno", best_line)
        for child in ast.iter_child_nodes(node):
            push((child, depth))
    return best, best_line

#!/usr/bin/env python3
"""Fails on any function longer than the limit (default 80 lines, signature to closing brace) in harness/src,
scoring/, harness/python/*.py and scripts/*.py: a function that long does several jobs, and its parts want names
and tests of their own.

C++ is read with a small scanner (comments, strings and raw strings skipped; a brace block at namespace or class
level whose header has a parameter list is a function; lambdas and local classes count toward their function).
Python is read with its own parser. Usage: scripts/check_function_length.py [--limit N] [--list] [paths...]
"""
import argparse
import ast
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
CPP_SUFFIXES = {".cpp", ".h", ".cu", ".cuh", ".hpp", ".cc"}
SCOPE_WORDS = re.compile(r"^\s*(template\s*<.*>\s*)?(namespace|class|struct|union|enum)\b|^\s*extern\b", re.S)


def blank_literals(text):
    """The text with comments, string and character literals replaced by spaces (newlines kept), so that braces
    and parentheses inside them are not counted."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif c == "R" and text.startswith('R"', i) and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
            m = re.match(r'R"([^()\\ ]{0,16})\(', text[i:])
            if not m:
                out.append(c)
                i += 1
                continue
            end = text.find(")" + m.group(1) + '"', i)
            j = n if end < 0 else end + len(m.group(1)) + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif c in "\"'":
            if c == "'" and i > 0 and text[i - 1].isalnum():  # a digit separator (1'000)
                out.append(" ")
                i += 1
                continue
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            j = min(j + 1, n)
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        else:
            out.append(c)
            i += 1
    # Preprocessor lines (with their continuations) are not code the scanner should see.
    return re.sub(r"^[ \t]*#(?:[^\n]*\\\n)*[^\n]*", lambda m: re.sub(r"[^\n]", " ", m.group(0)), "".join(out),
                  flags=re.M)


def cpp_functions(path):
    """(name, first line, line count) of every function body at namespace or class level."""
    text = blank_literals(path.read_text(errors="replace"))
    found, stack = [], []  # stack: per open brace, (is a scope that may hold functions, start offset, header)
    header_start = 0
    for i, c in enumerate(text):
        if c in ";":
            if not stack or stack[-1][0]:
                header_start = i + 1
        elif c == "{":
            header = text[header_start:i]
            in_scope = not stack or stack[-1][0]
            if not in_scope:
                stack.append((False, None, None))
                continue
            is_scope = bool(SCOPE_WORDS.search(header.strip())) and "(" not in header.split("{")[0].split("=")[0]
            is_function = not is_scope and "(" in header and not re.search(r"=\s*$", header.strip())
            if is_function:
                stack.append((False, header_start, header))
            else:
                stack.append((is_scope, None, None))
            header_start = i + 1
        elif c == "}":
            if not stack:
                continue
            _, start, header = stack.pop()
            if start is not None:
                first = text.count("\n", 0, start + len(header) - len(header.lstrip())) + 1
                last = text.count("\n", 0, i) + 1
                name = re.sub(r"\s+", " ", header.strip().split("(")[0])[-60:]
                found.append((name, first, last - first + 1))
            if not stack or stack[-1][0]:
                header_start = i + 1
    return found


def py_functions(path):
    try:
        tree = ast.parse(path.read_text(errors="replace"))
    except SyntaxError:
        return []
    return [(node.name, node.lineno, node.end_lineno - node.lineno + 1) for node in ast.walk(tree)
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))]


def default_paths():
    files = [p for d in ("harness/src", "scoring") for p in (ROOT / d).rglob("*") if p.suffix in CPP_SUFFIXES]
    return sorted(files) + sorted((ROOT / "harness/python").glob("*.py")) + sorted((ROOT / "scripts").glob("*.py"))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--limit", type=int, default=80)
    ap.add_argument("--list", action="store_true", help="print every function over the limit's half too")
    ap.add_argument("paths", nargs="*", type=pathlib.Path)
    a = ap.parse_args()
    long = []
    for path in a.paths or default_paths():
        for name, line, count in (py_functions if path.suffix == ".py" else cpp_functions)(path):
            if count > a.limit or (a.list and count > a.limit // 2):
                long.append((count, f"{path.relative_to(ROOT) if path.is_absolute() else path}:{line}", name))
    for count, where, name in sorted(long, reverse=True):
        print(f"{count:5d} lines  {where}  {name}")
    over = [x for x in long if x[0] > a.limit]
    if over:
        print(f"check_function_length: {len(over)} function(s) over {a.limit} lines", file=sys.stderr)
    return 1 if over else 0


if __name__ == "__main__":
    sys.exit(main())

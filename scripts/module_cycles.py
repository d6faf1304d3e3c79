#!/usr/bin/env python3
"""Import cycles between the files (modules) of each crate.

For every crate (a directory with a Cargo.toml and a src/ under the given roots; default: the
repository's crates/ and fuzz/), each .rs file under src/ is one module: src/lib.rs or src/main.rs
is the crate root, src/a.rs and src/a/mod.rs are `a`, src/a/b.rs is `a::b`. A file depends on
another when it names an item through it: `use crate::…`, `use super::…`, `use self::…` (use
trees with braces expanded) and the same paths written inline in code. A path is resolved to the
longest module prefix that is a file; a name a module re-exports (`pub use x::Item`) is followed
to the module it comes from, so `crate::Item` re-exported by lib.rs depends on the defining file,
not on lib.rs. Paths through a file's own child modules
(`child::Item` in its parent) count too. `mod x;` declarations are not dependencies. Comments and string literals are
skipped; `super::` inside an inline module (`mod tests { … }`) means the file's own module.

Prints each cycle (the files of every strongly connected component of the dependency graph with
more than one file, and one cycle through them with the line that makes each edge) and exits 1
if there is any; exits 0 and prints a one-line count otherwise.

    python3 scripts/module_cycles.py [ROOT ...]
"""

import os
import re
import sys

IDENT = r"[A-Za-z_][A-Za-z0-9_]*"
PATH_RE = re.compile(r"(?<![A-Za-z0-9_:])((?:crate|super|self)(?:::(?:" + IDENT + r"))+)")
USE_RE = re.compile(r"\buse\s+([^;]*);", re.S)
REEXPORT_RE = re.compile(r"\bpub(?:\([^)]*\))?\s+use\s+([^;]*);", re.S)


def strip(text):
    """Blank out comments, string and char literals (keeping line breaks and offsets)."""
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif text.startswith("/*", i):
            depth, j = 1, i + 2
            while j < n and depth:
                if text.startswith("/*", j):
                    depth, j = depth + 1, j + 2
                elif text.startswith("*/", j):
                    depth, j = depth - 1, j + 2
                else:
                    j += 1
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif c == "r" and re.match(r'r#*"', text[i:i + 10]) and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
            m = re.match(r'r(#*)"', text[i:])
            end = '"' + m.group(1)
            j = text.find(end, i + len(m.group(0)))
            j = n if j < 0 else j + len(end)
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif c == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            j = min(j + 1, n)
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif c == "'":
            # A char literal ('x', '\n', '\u{..}'), not a lifetime ('a).
            m = re.match(r"'(?:\\u\{[0-9a-fA-F]+\}|\\.|[^\\'])'", text[i:])
            if m:
                out.append(" " * len(m.group(0)))
                i += len(m.group(0))
            else:
                out.append(c)
                i += 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def expand_use(tree):
    """`a::{b, c::{d, e}}` -> ['a::b', 'a::c::d', 'a::c::e'] (aliases and globs dropped)."""
    tree = re.sub(r"\s+", "", re.sub(r"\s+as\s+" + IDENT, "", tree))
    depth = 0
    for k, ch in enumerate(tree):
        if ch == "{":
            if depth == 0:
                prefix = tree[:k]
                inner = tree[k + 1:tree.rindex("}")]
                parts, d, start = [], 0, 0
                for m, ch2 in enumerate(inner):
                    if ch2 == "{":
                        d += 1
                    elif ch2 == "}":
                        d -= 1
                    elif ch2 == "," and d == 0:
                        parts.append(inner[start:m])
                        start = m + 1
                parts.append(inner[start:])
                res = []
                for p in parts:
                    if not p:
                        continue
                    if p == "self":
                        res.append(prefix.rstrip(":"))
                    else:
                        res.extend(expand_use(prefix + p))
                return res
            depth += 1
    return [tree.rstrip("*").rstrip(":")]


def inline_mod_spans(code):
    """(start, end) offsets of inline `mod name { … }` blocks (outermost first)."""
    spans = []
    for m in re.finditer(r"\bmod\s+" + IDENT + r"\s*\{", code):
        depth, j = 0, m.end() - 1
        while j < len(code):
            if code[j] == "{":
                depth += 1
            elif code[j] == "}":
                depth -= 1
                if depth == 0:
                    break
            j += 1
        spans.append((m.start(), j))
    return spans


def module_of(src, path):
    rel = os.path.relpath(path, src)[:-3].split(os.sep)
    if rel in (["lib"], ["main"]):
        return ()
    if rel[-1] == "mod":
        rel = rel[:-1]
    return tuple(rel)


def crate_graph(src):
    files = {}
    for d, _, fs in os.walk(src):
        for f in fs:
            if f.endswith(".rs"):
                p = os.path.join(d, f)
                files[module_of(src, p)] = p
    # A binary crate's extra roots (src/bin/*.rs) are roots of their own; keep them as modules.
    codes = {m: strip(open(p, encoding="utf-8").read()) for m, p in files.items()}

    def absolute(mod, path, in_inline):
        segs = path.split("::")
        if segs[0] == "crate":
            base, rest = (), segs[1:]
        elif segs[0] == "self":
            base, rest = mod, segs[1:]
        else:
            base = mod if in_inline else mod[:-1]
            rest = segs[1:]
            while rest and rest[0] == "super":
                base, rest = base[:-1], rest[1:]
        return tuple(base) + tuple(rest)

    def reexports(mod):
        out = {}
        for m in REEXPORT_RE.finditer(codes[mod]):
            for p in expand_use(m.group(1)):
                if not p:
                    continue
                segs = p.split("::")
                if segs[0] in ("crate", "super", "self"):
                    full = absolute(mod, p, False)
                else:
                    full = tuple(mod) + tuple(segs)  # `pub use child::Item`
                out[segs[-1]] = full
        return out

    rex = {m: reexports(m) for m in files}

    def resolve(full, seen=0):
        """The file module that defines what `full` (a crate-absolute path) names."""
        for k in range(len(full), -1, -1):
            if full[:k] in files:
                mod, rest = full[:k], full[k:]
                if rest and rest[0] in rex[mod] and seen < 8 and rex[mod][rest[0]] != full:
                    return resolve(rex[mod][rest[0]] + tuple(rest[1:]), seen + 1)
                return mod
        return None

    edges = {}
    for mod, code in codes.items():
        spans = inline_mod_spans(code)
        line_of = lambda off: code.count("\n", 0, off) + 1
        found = []
        # A re-export (`pub use`) is the module's face, not its code's dependency: the paths that
        # name the re-exported items resolve to where they are defined (`resolve`).
        reexp = [(m.start(), m.end()) for m in REEXPORT_RE.finditer(code)]
        in_reexport = lambda off: any(a <= off < b for a, b in reexp)
        for m in USE_RE.finditer(code):
            if in_reexport(m.start(1)):
                continue
            inl = any(a <= m.start() < b for a, b in spans)
            for p in expand_use(m.group(1)):
                if p.split("::")[0] in ("crate", "super", "self"):
                    found.append((p, inl, m.start()))
        for m in PATH_RE.finditer(code):
            if in_reexport(m.start()):
                continue
            inl = any(a <= m.start() < b for a, b in spans)
            found.append((m.group(1), inl, m.start()))
        # Paths relative to this module through its child modules (`live_cmd::run` in main.rs,
        # `use child::Item`): written as `self::child::…`.
        children = [f[-1] for f in files if len(f) == len(mod) + 1 and f[: len(mod)] == mod]
        if children:
            rel_re = re.compile(r"(?<![A-Za-z0-9_:])((?:" + "|".join(map(re.escape, children)) + r")(?:::" + IDENT + r")+)")
            for m in rel_re.finditer(code):
                if any(a <= m.start() < b for a, b in spans) or in_reexport(m.start()):
                    continue
                found.append(("self::" + m.group(1), False, m.start()))
            for m in USE_RE.finditer(code):
                if in_reexport(m.start(1)):
                    continue
                for p in expand_use(m.group(1)):
                    if p.split("::")[0] in children:
                        found.append(("self::" + p, False, m.start()))
        for p, inl, off in found:
            full = absolute(mod, p, inl)
            target = resolve(full)
            if target is None or target == mod:
                continue
            # A file naming its own submodule's items is not a cycle-maker unless the child names
            # it back; both directions are kept, the cycle search decides.
            edges.setdefault(mod, {}).setdefault(target, line_of(off))
    return files, edges


def sccs(nodes, edges):
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in edges.get(v, {}):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            out.append(comp)

    sys.setrecursionlimit(10000)
    for v in sorted(nodes):
        if v not in index:
            visit(v)
    return [c for c in out if len(c) > 1]


def one_cycle(comp, edges):
    """A shortest cycle through the component's first node (breadth-first)."""
    comp = set(comp)
    start = min(comp)
    prev, queue = {start: None}, [start]
    while queue:
        v = queue.pop(0)
        for w in sorted(edges.get(v, {})):
            if w not in comp:
                continue
            if w == start:
                path = [v]
                while prev[path[-1]] is not None:
                    path.append(prev[path[-1]])
                return list(reversed(path)) + [start]
            if w not in prev:
                prev[w] = v
                queue.append(w)
    return [start]


def crates(roots):
    for root in roots:
        for d, dirs, fs in os.walk(root):
            dirs[:] = [x for x in dirs if x not in ("target", "node_modules", ".git")]
            if "Cargo.toml" in fs and os.path.isdir(os.path.join(d, "src")):
                yield d


def main(argv):
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    roots = argv[1:] or [os.path.join(here, "crates"), os.path.join(here, "fuzz")]
    roots = [r for r in roots if os.path.isdir(r)]
    if not roots:
        print("module_cycles: no crate directory given or found", file=sys.stderr)
        return 2
    total_files, bad = 0, 0
    for c in sorted(set(crates(roots))):
        src = os.path.join(c, "src")
        files, edges = crate_graph(src)
        total_files += len(files)
        for comp in sccs(files, edges):
            bad += 1
            rel = lambda m: os.path.relpath(files[m], os.path.dirname(c))
            print(f"cycle in {os.path.basename(c)}: {', '.join(sorted(rel(m) for m in comp))}")
            cyc = one_cycle(comp, edges)
            for a, b in zip(cyc, cyc[1:]):
                print(f"  {rel(a)}:{edges[a][b]} uses {rel(b)}")
    if bad:
        print(f"{bad} import cycle(s) between files")
        return 1
    print(f"no import cycles between the files of a crate ({total_files} files)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

#!/usr/bin/env python3
"""--help against the flag tables of docs/usage.md and docs/server.md, both ways (issue 51).

For `moss-infer-hip --help`, `self-test --help` and `bench --help`: every flag the text names in
its option lines has a row in its table (| flag |, | self-test flag |, | bench flag |), and every
flag of a row is named by the text. For `serve --help`: every flag it names is in the serve
table or the generation table (serve takes the generation flags as request defaults), and every
flag of the serve table is named by serve --help. Usage: help_tables_test.py BINARY REPO_ROOT
"""
import os
import re
import subprocess
import sys

FLAG = re.compile(r"(?<![\w-])(--[a-z][a-z0-9-]*|-[oh])(?![\w-])")


def table_flags(path, header):
    """The flags in the first column of the table whose header row starts with `| header |`."""
    rows, inside = [], False
    for line in open(path, encoding="utf-8"):
        if line.startswith("| " + header + " |"):
            inside = True
            continue
        if inside:
            if not line.startswith("|"):
                break
            if line.startswith("| ---"):
                continue
            rows.append(line.split("|")[1])
    if not rows:
        raise SystemExit(f"{path}: no table headed '| {header} |'")
    return {f for r in rows for f in FLAG.findall(r)}


def help_flags(binary, *sub):
    """The flags named in the option lines of the help text (indented lines after the usage)."""
    text = subprocess.run([binary, *sub, "--help"], capture_output=True, text=True, check=True).stdout
    body = text.split("\n\n", 1)[1] if "\n\n" in text else text
    lines = [l for l in body.splitlines() if l.startswith("  ")]
    return {f for l in lines for f in FLAG.findall(l)}


def server_built(binary):
    """False for a build without `serve`, which says so (ctest server_unavailable_message)."""
    r = subprocess.run([binary, "serve", "--help"], capture_output=True, text=True)
    if r.returncode == 2 and "this build has no server" in r.stderr:
        return False
    return True


def main():
    binary, root = sys.argv[1], sys.argv[2]
    usage, server = os.path.join(root, "docs/usage.md"), os.path.join(root, "docs/server.md")
    failures = []

    def compare(what, in_help, in_table, table_name, help_may_name=frozenset()):
        for f in sorted(in_help - in_table - help_may_name):
            failures.append(f"{what}: {f} is in --help but has no row in {table_name}")
        for f in sorted(in_table - in_help):
            failures.append(f"{what}: {f} has a row in {table_name} but is not in --help")
        print(f"{what}: {len(in_help)} flags in --help, {len(in_table)} in {table_name}")

    main_table = table_flags(usage, "flag")
    compare("moss-infer-hip", help_flags(binary), main_table, "docs/usage.md's flag table")
    compare("self-test", help_flags(binary, "self-test"), table_flags(usage, "self-test flag"),
            "docs/usage.md's self-test table")
    compare("bench", help_flags(binary, "bench"), table_flags(usage, "bench flag"), "docs/usage.md's bench table")
    # serve names the generation flags it takes as request defaults; those rows are usage.md's. A
    # build without the server (no cpp-httplib: the AMD build's root) has no serve --help.
    if server_built(binary):
        serve_help = help_flags(binary, "serve")
        compare("serve", serve_help, table_flags(server, "serve flag"), "docs/server.md's serve table", main_table)
    else:
        print("serve: this build has no server; its table is not compared")
    for f in failures:
        print("FAIL " + f)
    print("ok" if not failures else f"{len(failures)} differences")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

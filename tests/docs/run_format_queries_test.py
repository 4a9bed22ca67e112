#!/usr/bin/env python3
"""Runs every query of docs/run-format.md ("Querying with sqlite3") against a run file.

Each statement must run; unless the comment above it says "may be empty", it must return
rows. Usage: run_format_queries_test.py DOC RUN_FILE
"""
import re
import sqlite3
import sys


def statements(doc):
    block = re.search(r"## Querying with sqlite3\s+```sql\n(.*?)```", doc, re.S)
    if not block:
        raise SystemExit("FAIL: no ```sql block under 'Querying with sqlite3'")
    comment, current = "", []
    for line in block.group(1).splitlines():
        if line.startswith("--"):
            if not current:
                comment += line + "\n"
            continue
        if line.strip():
            current.append(line)
        if line.rstrip().endswith(";"):
            yield comment, "\n".join(current)
            comment, current = "", []
    if current:
        raise SystemExit("FAIL: a statement without its ';': " + "\n".join(current))


def main():
    doc = open(sys.argv[1], encoding="utf-8").read()
    db = sqlite3.connect(f"file:{sys.argv[2]}?mode=ro", uri=True)
    count, failures, comment = 0, [], ""
    for comment_here, sql in statements(doc):
        comment = comment_here or comment  # a comment covers the statements below it
        count += 1
        try:
            rows = db.execute(sql).fetchall()
        except sqlite3.Error as e:
            failures.append(f"{sql}\n  error: {e}")
            continue
        if not rows and "may be empty" not in comment:
            failures.append(f"{sql}\n  returned no rows")
        print(f"{len(rows):5d} rows  {sql.splitlines()[0]}")
    if count < 8:
        failures.append(f"only {count} statements found")
    for f in failures:
        print("FAIL:", f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

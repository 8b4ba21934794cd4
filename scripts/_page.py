"""The generated regions of a Markdown page, shared by the benchmark scripts and
scripts/gen_readme_tables.py. A region is

    <!-- BEGIN GENERATED name (scripts/script.py) -->
    ...
    <!-- END GENERATED name -->

and is rewritten whole by its script, never edited by hand.

Every benchmark script takes the same three page options (add_arguments):
--page FILE (default docs/benchmarks.md), --no-page (do not touch the page;
print the section instead) and --from-json FILE (rewrite the section and the
plots from a saved run, without measuring). A run whose output directory lies
outside docs/ leaves the page alone unless --page is given: the page links the
plots by their place under docs/.
"""
import pathlib
import re

ROOT = pathlib.Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
PAGE = DOCS / "benchmarks.md"


def markers(name, script):
    return (f"<!-- BEGIN GENERATED {name} (scripts/{script}) -->",
            f"<!-- END GENERATED {name} -->")


def render(text, name, script, body, blank=True):
    """text with the region `name` replaced by body (with blank lines around it, or none)."""
    begin, end = markers(name, script)
    pattern = re.compile(re.escape(begin) + r".*?" + re.escape(end), re.S)
    if not pattern.search(text):
        raise SystemExit(f"no region {begin} ... {end}")
    gap = "\n\n" if blank else "\n"
    return pattern.sub(lambda _: f"{begin}{gap}{body.strip()}{gap}{end}", text, count=1)


def write(page, name, script, body):
    """Rewrite the region `name` of the file `page`; True if it changed."""
    page = pathlib.Path(page)
    old = page.read_text()
    new = render(old, name, script, body)
    if new != old:
        page.write_text(new)
    return new != old


def add_arguments(parser):
    parser.add_argument("--page", default=None,
                        help="the page holding this script's generated region "
                             "(default docs/benchmarks.md when the output is under docs/)")
    parser.add_argument("--no-page", "--no-readme", dest="no_page", action="store_true",
                        help="do not rewrite the page; print the section instead")
    parser.add_argument("--from-json", metavar="FILE",
                        help="regenerate the section and the plots from this saved run "
                             "(no measuring)")


def under_docs(path):
    try:
        pathlib.Path(path).resolve().relative_to(DOCS.resolve())
        return True
    except ValueError:
        return False


def link(path):
    """path as a link from docs/benchmarks.md (relative to docs/)."""
    return pathlib.Path(path).resolve().relative_to(DOCS.resolve()).as_posix()


def link_dir(args, out_dir):
    """The directory the section's links point into: the saved run's (--from-json) when it
    lies under docs/, else out_dir; relative to docs/, or None."""
    for d in ([pathlib.Path(args.from_json).parent] if getattr(args, "from_json", None) else []) + [out_dir]:
        if under_docs(d):
            return link(d)
    return None


def publish(args, out_dir, name, script, body):
    """Write the section per the page options: to --page, or to docs/benchmarks.md when
    out_dir lies under docs/; else (or with --no-page) print it."""
    page = args.page or (PAGE if link_dir(args, out_dir) else None)
    if args.no_page or page is None:
        print(body)
        return
    changed = write(page, name, script, body)
    print(f"{'updated' if changed else 'unchanged'}: {page} ({name})")


def median(values):
    v = sorted(values)
    n = len(v)
    return v[n // 2] if n % 2 else 0.5 * (v[n // 2 - 1] + v[n // 2])

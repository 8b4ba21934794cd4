"""The code blocks of README.md and docs/*.md, and the test that executes each one.

Every block is fenced and carries a language tag. ```text marks what is not a command or a
program (a synopsis, an output sample, pseudo-code or math, a diagram); every other block is
executed by one test of the suite, named in RUNNERS, which takes its input from here (so the
test runs exactly what the page prints). Shell blocks are assigned line by line: each command
line of a ```bash block belongs to one runner. tests/python/test_docs.py checks that every
block and command line has its runner and that each runner exists; the runners are in
tests/python/test_docs.py and tests/packaging/.
"""
import pathlib
import re
from dataclasses import dataclass

ROOT = pathlib.Path(__file__).resolve().parents[1]
LANGUAGES = {"text", "python", "bash", "c", "cpp", "cmake", "xml"}


@dataclass(frozen=True)
class Block:
    path: str       # relative to the repository root
    line: int       # of the opening fence, 1-based
    tag: str
    code: str
    section: str    # the nearest heading above, without its #'s

    @property
    def where(self):
        return f"{self.path}:{self.line}"


def pages(root=ROOT):
    return [root / "README.md"] + sorted((root / "docs").glob("*.md"))


def blocks(root=ROOT):
    """Every fenced block of the README and docs/*.md, in page order."""
    out = []
    for page in pages(root):
        lines = page.read_text(encoding="utf-8").splitlines()
        section, i = "", 0
        while i < len(lines):
            m = re.match(r"^(`{3,}|~{3,})\s*(\S*)", lines[i])
            if m:
                fence, j = m.group(1), i + 1
                while j < len(lines) and not lines[j].startswith(fence):
                    j += 1
                out.append(Block(str(page.relative_to(root)), i + 1, m.group(2),
                                 "\n".join(lines[i + 1:j]) + "\n", section))
                i = j + 1
                continue
            if re.match(r"^#{1,6}\s", lines[i]):
                section = re.sub(r"^#+\s*", "", lines[i]).strip()
            i += 1
    return out


def indented_blocks(root=ROOT):
    """Indented code blocks (four spaces after a blank line, outside a list): refused, a
    fenced block says what it holds."""
    out = []
    for page in pages(root):
        fenced, in_list = False, False
        lines = page.read_text(encoding="utf-8").splitlines()
        for i, line in enumerate(lines):
            if re.match(r"^(`{3,}|~{3,})", line):
                fenced = not fenced
                continue
            if fenced:
                continue
            if re.match(r"^\s*([-*+]|[0-9]+\.)\s", line):
                in_list = True
            elif line.strip() and not line.startswith(" "):
                in_list = False
            if (line.startswith("    ") and line.strip() and i > 0 and not lines[i - 1].strip()
                    and not in_list):
                out.append(f"{page.relative_to(root)}:{i + 1}")
    return out


def command_lines(block):
    """The command lines of a shell block: comments stripped, continuation lines joined."""
    out, pending = [], ""
    for raw in block.code.splitlines():
        line = re.sub(r"(^|\s)#.*$", "", raw).rstrip()
        if line.endswith("\\"):
            pending += line[:-1].rstrip() + " "
            continue
        line = (pending + line.strip()).strip()
        pending = ""
        if line:
            out.append(line)
    return out


# --------------------------------------------------------------------- who runs what

def _first(line):
    return line.split()[0]


def _is(path, *sections):
    return lambda b: b.path == path and (not sections or b.section in sections)


# (runner, block predicate, command-line predicate or None for a whole block). A runner is
# "file::test_function"; the test calls blocks_for / lines_for with its own name.
RUNNERS = [
    ("tests/python/test_docs.py::test_python_block_runs",
     lambda b: b.tag == "python", None),
    ("tests/python/test_docs.py::test_mjcf_block_configures_a_stepper",
     lambda b: b.tag == "xml", None),
    ("tests/python/test_docs.py::test_command_line_synopsis_names_real_flags",
     lambda b: b.tag == "text" and b.path == "docs/command-line.md", None),
    ("tests/python/test_docs.py::test_clone_commands",
     lambda b: b.tag == "bash", lambda line: _first(line) == "make"),
    ("tests/python/test_docs.py::test_debian_packages_line",
     lambda b: b.tag == "bash", lambda line: re.match(r"(sudo )?apt-get install ", line)),
    ("tests/python/test_docs.py::test_readme_command_lines_run",
     _is("README.md", "Command line"), lambda line: _first(line) == "mjcenic"),
    ("tests/python/test_docs.py::test_benchmark_command_lines",
     _is("docs/benchmarks.md"), lambda line: True),
    ("tests/packaging/test_wheel.py::test_installs_and_runs_as_the_docs_say_in_a_fresh_venv",
     lambda b: b.tag == "bash" and (b.path, b.section) in (("README.md", "Install"),
                                                         ("docs/install.md", "Python (pip)")),
     lambda line: _first(line) in ("pip", "python", "mjcenic")),
    ("tests/packaging/test_cmake_package.py::test_readme_consumer_builds_verbatim_and_outlives_its_build_tree",
     lambda b: b.path == "README.md" and b.section == "C and C++", None),
    ("tests/packaging/test_cmake_package.py::test_docs_consumer_project_c_and_cxx_and_installed_runner",
     lambda b: b.path == "docs/c-api.md" and b.tag in ("cmake", "cpp", "c", "bash"), None),
]


def runners_of(block, line=None):
    """The runners that take this block (line None) or this command line of it."""
    out = []
    for name, on_block, on_line in RUNNERS:
        if not on_block(block):
            continue
        if on_line is None or (line is not None and on_line(line)):
            out.append(name)
    return out


def _runner(name):
    (match,) = [r for r in RUNNERS if r[0].endswith("::" + name)]
    return match


def blocks_for(name, root=ROOT):
    """The blocks (taken whole) that the runner test `name` executes."""
    _, on_block, on_line = _runner(name)
    assert on_line is None, name
    return [b for b in blocks(root) if on_block(b)]


def lines_for(name, root=ROOT):
    """(block, command line) pairs that the runner test `name` executes, in page order."""
    _, on_block, on_line = _runner(name)
    assert on_line is not None, name
    return [(b, line) for b in blocks(root) if on_block(b) and b.tag == "bash"
            for line in command_lines(b) if on_line(line)]

"""The documentation: citations resolve, the README stays a user's page, examples run, and
nothing describes how the work was organized.

Every document a source comment cites lives in this repository's docs/. Scans mjcenic/, plugin/, python/, tests/, scripts/, README.md and docs/*.md for citations such as
"cenic-math §4.6", "cenic-math.md §3–7, §6", "mapping §5.7", "§4.4 of the MuJoCo mapping",
"§13 items 3, 20–24" and "paper §V-C", and checks that the cited document exists in docs/ and
that each cited section is a heading there (an item N of section S resolves to heading S.N or to
a numbered list item N inside section S; a paper section must be listed in cenic-math §0).
A bare "§N" means cenic-math (inside docs/mujoco-mapping.md: that document). No source may point at ../shared/docs.
"""
import json
import os
import pathlib
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass, field

import pytest

from conftest import BUILD, PYTHON_PKG, ROOT

sys.path.insert(0, str(ROOT / "tests"))
import doc_blocks  # noqa: E402

DOCS = ROOT / "docs"
DOC_FILES = {"cenic-math": "cenic-math.md", "mujoco-mapping": "mujoco-mapping.md",
             "architecture": "architecture.md"}
SCAN_DIRS = ["mjcenic", "plugin", "python", "tests", "scripts"]
SCAN_EXTS = {".h", ".cc", ".c", ".py", ".md", ".txt", ".cmake", ".in", ".sh"}

NUM = r"[0-9]+(?:\.[0-9]+)*"
ROMAN = r"[IVX]+(?:-[A-F][0-9]?)?"
DOC_RE = re.compile(r"(?:\.\./shared/)?(?:docs/)?(cenic-math|mujoco-mapping|architecture)(?:\.md)?"
                    r"|\b(mapping|paper)\b")
SEC_RE = re.compile(
    rf"§\s?(?P<sec>{NUM}|{ROMAN})"
    rf"(?:\s?[–-]\s?§?(?P<end>{NUM}))?"
    r"(?P<items>\s+items?\s+[0-9]+(?:\s?[–-]\s?[0-9]+)?(?:,\s?[0-9]+(?:\s?[–-]\s?[0-9]+)?)*)?")
CHAIN_GAP = re.compile(r"^[\s,;/()&]*(?:(?:and|or)\s*)?$")
OF_MAPPING = re.compile(r"^\s+of\s+the\s+(?:MuJoCo\s+)?mapping")
HEADING = re.compile(rf"^(#+)\s+(?P<num>{NUM})(?:\s?[–-]\s?(?P<end>{NUM}))?\.?(?:\s|$)")


@dataclass
class Citation:
    where: str
    doc: str          # "cenic-math", "mujoco-mapping", "architecture" or "paper"
    sec: str
    end: str = ""
    items: list = field(default_factory=list)


def _expand_items(text):
    out = []
    for a, b in re.findall(r"([0-9]+)(?:\s?[–-]\s?([0-9]+))?", text):
        out.extend(range(int(a), int(b) + 1) if b else [int(a)])
    return out


def parse_line(line, default_doc="cenic-math", where="", next_line=""):
    """Citations on one line, each attributed to a document (next_line: for a phrase such as
    "§4.4 of the MuJoCo" + "// mapping" that wraps)."""
    after_wrap = re.sub(r"^\s*(?://+|#+|\*)?\s*", " ", next_line)
    docs = [(m.start(), m.end(), m.group(1) or ("mujoco-mapping" if m.group(2) == "mapping"
                                                 else "paper")) for m in DOC_RE.finditer(line)]
    out, current, last_end = [], None, 0
    events = sorted([(s, e, "doc", d) for s, e, d in docs] +
                    [(m.start(), m.end(), "sec", m) for m in SEC_RE.finditer(line)],
                    key=lambda x: x[0])
    for start, end, kind, val in events:
        if kind == "doc":
            current, last_end = val, end
            continue
        m = val
        if current and CHAIN_GAP.match(line[last_end:start]):
            doc = current
        else:
            doc, current = None, None
        if OF_MAPPING.match(line[end:]) or OF_MAPPING.match(line[end:].rstrip() + after_wrap):
            doc = "mujoco-mapping"
        if re.fullmatch(ROMAN, m.group("sec")):
            doc = "paper"
        elif doc == "paper":  # paper sections are roman; "(paper §V-B, §11.8)": ours
            doc = None
        doc = doc or default_doc
        current, last_end = doc, end
        out.append(Citation(where, doc, m.group("sec"), m.group("end") or "",
                            _expand_items(m.group("items")) if m.group("items") else []))
    return out


@dataclass
class Doc:
    headings: set
    bodies: dict      # section number -> text under its heading (until the next heading)
    text: str


def load_doc(path):
    text = path.read_text(encoding="utf-8")
    headings, bodies, current = set(), {}, None
    for line in text.splitlines():
        m = HEADING.match(line)
        if m:
            num, end = m.group("num"), m.group("end")
            nums = [num]
            if end and num.rsplit(".", 1)[0] == end.rsplit(".", 1)[0] and "." in num:
                prefix = num.rsplit(".", 1)[0]
                nums = [f"{prefix}.{k}" for k in range(int(num.rsplit(".", 1)[1]),
                                                      int(end.rsplit(".", 1)[1]) + 1)]
            headings.update(nums)
            current = nums[0]
            bodies[current] = ""
        elif line.startswith("#"):
            current = None
        elif current:
            bodies[current] += line + "\n"
    return Doc(headings, bodies, text)


def problems(citations, docs):
    """Human-readable list of citations that do not resolve."""
    bad = []
    paper_table = docs["cenic-math"].bodies.get("0", "") if "cenic-math" in docs else ""
    for c in citations:
        if c.doc == "paper":
            if not re.fullmatch(ROMAN, c.sec) or f"| §{c.sec} |" not in paper_table:
                bad.append(f"{c.where}: paper §{c.sec} is not listed in cenic-math §0")
            continue
        if c.doc not in docs:
            bad.append(f"{c.where}: docs/{DOC_FILES.get(c.doc, c.doc)} does not exist")
            continue
        d = docs[c.doc]
        for s in [c.sec] + ([c.end] if c.end else []):
            if s not in d.headings:
                bad.append(f"{c.where}: {c.doc} §{s} is not a heading of docs/{DOC_FILES[c.doc]}")
        for n in c.items:
            in_list = re.search(rf"(?m)^\s*{n}\.\s", d.bodies.get(c.sec, ""))
            if f"{c.sec}.{n}" not in d.headings and not in_list:
                bad.append(f"{c.where}: {c.doc} §{c.sec} has no item {n}")
    return bad


def source_files():
    files = [ROOT / "README.md"] + sorted(DOCS.glob("*.md"))
    for d in SCAN_DIRS:
        files += sorted(p for p in (ROOT / d).rglob("*")
                        if p.is_file() and p.suffix in SCAN_EXTS and "__pycache__" not in p.parts)
    return [p for p in files if p.resolve() != pathlib.Path(__file__).resolve()]


def all_citations():
    out = []
    for path in source_files():
        rel = path.relative_to(ROOT)
        # Inside the two numbered documents a bare § means the document itself.
        own = path.parent == DOCS and path.stem in ("cenic-math", "mujoco-mapping")
        default = path.stem if own else "cenic-math"
        lines = path.read_text(encoding="utf-8").splitlines() + [""]
        for i, line in enumerate(lines[:-1]):
            out += parse_line(line, default, f"{rel}:{i + 1}", lines[i + 1])
    return out


@pytest.fixture(scope="module")
def docs():
    return {name: load_doc(DOCS / f) for name, f in DOC_FILES.items() if (DOCS / f).exists()}


def test_documents_exist():
    for f in DOC_FILES.values():
        assert (DOCS / f).is_file(), f"docs/{f} missing"


def test_every_citation_resolves(docs):
    cites = all_citations()
    # The scan must actually see the tree's citations (guards against a broken parser).
    assert len(cites) >= 100, len(cites)
    assert {"cenic-math", "mujoco-mapping", "paper"} <= {c.doc for c in cites}
    bad = problems(cites, docs)
    assert not bad, "unresolved citations:\n" + "\n".join(bad)


def test_no_reference_outside_the_repo():
    bad = []
    for path in source_files():
        for i, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if "shared/docs" in line:
                bad.append(f"{path.relative_to(ROOT)}:{i}")
            for m in re.finditer(r"(?<![\w./])docs/[\w.-]+\.(?:md|png|json)", line):
                if not (ROOT / m.group(0)).exists():
                    bad.append(f"{path.relative_to(ROOT)}:{i}: {m.group(0)} does not exist")
    assert not bad, "references that do not resolve in this repository:\n" + "\n".join(bad)


def test_parser_attributes_and_expands():
    c = parse_line("// (cenic-math.md §4–7, §6); see mapping §7.3–7.4 and §4.4 of the MuJoCo "
                   "mapping; paper §VII-D2 (§11.8, §13 items 3, 20–22)")
    got = [(x.doc, x.sec, x.end, x.items) for x in c]
    assert got == [("cenic-math", "4", "7", []), ("cenic-math", "6", "", []),
                   ("mujoco-mapping", "7.3", "7.4", []), ("mujoco-mapping", "4.4", "", []),
                   ("paper", "VII-D2", "", []), ("cenic-math", "11.8", "", []),
                   ("cenic-math", "13", "", [3, 20, 21, 22])]
    # Inside docs/mujoco-mapping.md a bare § means that document.
    assert parse_line("see §5.7.", "mujoco-mapping")[0].doc == "mujoco-mapping"
    # A citation whose document name wraps onto the next comment line.
    assert parse_line("// update, §4.4 of the MuJoCo", next_line="// mapping).")[0].doc == \
        "mujoco-mapping"


def test_a_missing_section_is_reported(docs):
    fake = (parse_line("cenic-math §99.9, mapping §5.7", where="x:1") +
            parse_line("§13 item 99 and §8.3 item 4", where="x:2") +
            parse_line("paper §IX-Z and architecture.md §1", where="x:3"))
    bad = problems(fake, docs)
    assert any("cenic-math §99.9" in b for b in bad)
    assert any("§13 has no item 99" in b for b in bad)
    assert any("paper §IX" in b for b in bad)
    assert any("architecture §1 " in b for b in bad)
    assert not any("mapping §5.7" in b or "§8.3 has no item 4" in b for b in bad), bad


FEATURES_PAGE = DOCS / "how-it-works.md"


def _feature_rows():
    page = FEATURES_PAGE.read_text()
    start = page.index("## Supported MJCF features")
    table = page[start:].split("\n\n", 2)[1]
    rows = [r for r in table.splitlines() if r.startswith("|")]
    assert rows[0].replace(" ", "") == "|feature|status|checkedby|", rows[0]
    return [[c.strip() for c in r.strip("|").split("|")] for r in rows[2:]]


def _cpp_tests():
    names = set()
    for f in (ROOT / "tests" / "cpp").rglob("*.cc"):
        for suite, name in re.findall(r"^TEST(?:_P|_F)?\(\s*(\w+)\s*,\s*(\w+)\s*\)",
                                      f.read_text(), re.M):
            names.add(f"{suite}.{name}")
    return names


def test_every_feature_row_names_existing_tests():
    """The supported-features table (docs/how-it-works.md): every row names at least one test, and every
    named test exists (C++ Suite.Name in tests/cpp, Python path::function)."""
    rows = _feature_rows()
    assert len(rows) >= 15
    cpp = _cpp_tests()
    missing = []
    for feature, _status, checked in rows:
        names = re.findall(r"`([^`]+)`", checked)
        if not names:
            missing.append(f"{feature}: no test named")
        for n in names:
            if "::" in n:
                path, func = n.split("::")
                p = ROOT / path
                if not p.is_file() or not re.search(rf"^def {func}\(", p.read_text(), re.M):
                    missing.append(f"{feature}: {n} does not exist")
            elif n not in cpp:
                missing.append(f"{feature}: {n} is not a C++ test")
    assert not missing, "\n".join(missing)


# ----------------------------------------------------------------------------- the README

def test_readme_is_a_users_page():
    """Short, with the two commands for a clone, the supported MuJoCo range as declared in
    MUJOCO_VERSION, the generated options table, and links to every reference page."""
    text = (ROOT / "README.md").read_text()
    assert len(text.splitlines()) <= 250, len(text.splitlines())
    assert "make demo" in text and "make test" in text
    version = dict(line.split("=", 1) for line in (ROOT / "MUJOCO_VERSION").read_text().splitlines()
                   if "=" in line and not line.startswith("#"))
    assert f"**Supported MuJoCo: {version['minimum']} through" in text
    below = version["below"].split(".")
    assert f"{below[0]}.{int(below[1]) - 1}.x**" in text, "the range's upper end is MUJOCO_VERSION's"
    assert text.count("<!-- BEGIN GENERATED options") == 1
    assert text.count("<!-- END GENERATED options -->") == 1
    for page in ("python.md", "command-line.md", "c-api.md", "how-it-works.md", "benchmarks.md",
                 "development.md", "install.md", "limitations.md", "statistics.md"):
        assert f"(docs/{page}" in text, f"README does not link docs/{page}"
        assert (DOCS / page).is_file(), page


def _slug(heading):
    """GitHub's anchor of a heading."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def test_markdown_links_resolve():
    """Every relative link of README.md and docs/*.md names an existing file, and its #anchor
    a heading of that file."""
    bad = []
    for path in [ROOT / "README.md"] + sorted(DOCS.glob("*.md")):
        text = path.read_text(encoding="utf-8")
        for m in re.finditer(r"\]\((?P<target>[^)\s]+)\)", text):
            target = m.group("target")
            if re.match(r"[a-z]+:", target):
                continue  # http:, https:, mailto:
            file, _, anchor = target.partition("#")
            dest = (path.parent / file).resolve() if file else path
            if not dest.exists():
                bad.append(f"{path.relative_to(ROOT)}: {target}: no such file")
            elif anchor and dest.suffix == ".md":
                lines = dest.read_text(encoding="utf-8").splitlines()
                slugs = {_slug(re.sub(r"^#+\s*", "", line)) for line in lines
                         if re.match(r"^#{1,6}\s", line)}
                if anchor not in slugs:
                    bad.append(f"{path.relative_to(ROOT)}: {target}: no such heading")
    assert not bad, "\n".join(bad)


# ----------------------------------------------------------------------------- code blocks
# Which test executes which block: tests/doc_blocks.py. The runners below take their input from
# there; tests/packaging runs the install, CMake and C/C++ blocks.

def _env(**extra):
    return dict(os.environ, PYTHONPATH=os.pathsep.join([str(PYTHON_PKG),
                                                         os.environ.get("PYTHONPATH", "")]),
                MPLBACKEND="Agg", MJCENIC_BUILD=str(BUILD), **extra)


def _runner_exists(name):
    path, func = name.split("::")
    return bool(re.search(rf"^def {func}\(", (ROOT / path).read_text(), re.M))


def test_every_code_block_is_tagged_and_executed():
    """Every block of README.md and docs/*.md is fenced with a language; a ```text block is not a
    command or a program; every other block, and every command line of a shell block, is
    executed by exactly one test (tests/doc_blocks.py), and that test exists."""
    all_blocks = doc_blocks.blocks()
    assert len(all_blocks) >= 25 and {b.tag for b in all_blocks} >= {"python", "bash", "cpp", "text"}
    bad = [f"{where}: an indented code block (fence it, ```text if it is not run)"
           for where in doc_blocks.indented_blocks()]
    for b in all_blocks:
        if b.tag not in doc_blocks.LANGUAGES:
            bad.append(f"{b.where}: fence tagged {b.tag!r}; use one of "
                       f"{sorted(doc_blocks.LANGUAGES)} (```text: not run)")
            continue
        if b.tag == "text":
            continue
        whole = doc_blocks.runners_of(b)
        if b.tag == "bash":
            lines = doc_blocks.command_lines(b)
            if not lines:
                bad.append(f"{b.where}: an empty shell block")
            for line in lines:
                runners = whole + [r for r in doc_blocks.runners_of(b, line) if r not in whole]
                if len(runners) != 1:
                    bad.append(f"{b.where}: `{line}` is run by {runners or 'no test'}")
        elif len(whole) != 1:
            bad.append(f"{b.where}: ```{b.tag} block run by {whole or 'no test'}")
    for name, _, _ in doc_blocks.RUNNERS:
        if not _runner_exists(name):
            bad.append(f"tests/doc_blocks.py names {name}, which does not exist")
    assert not bad, "code blocks that no test executes:\n" + "\n".join(bad)


def test_block_rules_catch_what_they_should(tmp_path):
    (tmp_path / "docs").mkdir()
    (tmp_path / "README.md").write_text(
        "# T\n\n```\nuntagged\n```\n\n## Install\n\n```bash\npip install .  # x\n"
        "mjcenic view a.xml \\\n    --slowdown 2\n```\n\ntext\n\n    indented code\n\n"
        "- a list\n\n    continued list item\n")
    got = doc_blocks.blocks(tmp_path)
    assert [(b.line, b.tag, b.section) for b in got] == [(3, "", "T"), (9, "bash", "Install")]
    assert doc_blocks.command_lines(got[1]) == ["pip install .", "mjcenic view a.xml --slowdown 2"]
    assert doc_blocks.indented_blocks(tmp_path) == ["README.md:17"]
    assert doc_blocks.runners_of(got[1], "pip install .") == [
        "tests/packaging/test_wheel.py::test_installs_and_runs_as_the_docs_say_in_a_fresh_venv"]
    assert doc_blocks.runners_of(got[1], "mjcenic view a.xml --slowdown 2") == [
        "tests/packaging/test_wheel.py::test_installs_and_runs_as_the_docs_say_in_a_fresh_venv"]
    assert doc_blocks.runners_of(got[0]) == []


PY_BLOCKS = doc_blocks.blocks_for("test_python_block_runs")


def test_readme_has_a_python_example():
    assert any(b.path == "README.md" for b in PY_BLOCKS)


@pytest.mark.parametrize("block", PY_BLOCKS, ids=[b.where for b in PY_BLOCKS])
def test_python_block_runs(block, tmp_path):
    """Each ```python block runs as written, from the repository root."""
    script = tmp_path / "block.py"
    script.write_text(block.code)
    p = subprocess.run([sys.executable, str(script)], cwd=ROOT, env=_env(), capture_output=True,
                       text=True, timeout=600)
    assert p.returncode == 0, f"{block.where} failed:\n{p.stdout}\n{p.stderr}"


def test_mjcf_block_configures_a_stepper():
    """The plugin configuration of docs/python.md, pasted into a model, configures its stepper."""
    import mujoco
    import mjcenic
    (block,) = doc_blocks.blocks_for("test_mjcf_block_configures_a_stepper")
    xml = (ROOT / "models/sphere_plane.xml").read_text()
    xml = re.sub(r"(<mujoco[^>]*>)", lambda m: m.group(1) + "\n" + block.code, xml, count=1)
    model = mujoco.MjModel.from_xml_string(xml)
    assert model.nplugin == 1
    options = {k: str(v) for k, v in mjcenic.Stepper(model).options.items()}
    configs = re.findall(r'<config key="(\w+)" value="([^"]*)"/>', block.code)
    assert configs
    for key, value in configs:
        assert options[key] == value or float(options[key]) == float(value), (key, options[key])
    defaults = mjcenic.Stepper(mujoco.MjModel.from_xml_path(str(ROOT / "models/sphere_plane.xml")))
    assert any(options[k] != str(defaults.options[k]) for k, _ in configs), "only defaults shown"


def _synopsis_commands(block):
    """(command, its synopsis text) of a synopsis: a line that starts at column 0 starts a
    command, indented lines continue it, comments stripped."""
    out = []
    for line in block.code.splitlines():
        text = re.sub(r"\s#\s.*$", "", line).rstrip()
        if not text:
            continue
        if line[0].isspace():
            out[-1][1] += " " + text.strip()
        else:
            out.append([text.split()[0] if text.startswith("build/") else
                        " ".join(text.split()[:2]), text])
    return out


def test_command_line_synopsis_names_real_flags():
    """Every flag of docs/command-line.md's synopsis is one its command's --help names, every
    command is one `mjcenic --help` lists, and mjcenic-run's synopsis lists all its flags."""
    (block,) = doc_blocks.blocks_for("test_command_line_synopsis_names_real_flags")
    flags = re.compile(r"--[a-z][a-z-]*")

    def help_of(argv):
        p = subprocess.run(argv + ["--help"], env=_env(), capture_output=True, text=True,
                           timeout=120)
        assert p.returncode == 0, (argv, p.stderr)
        return p.stdout + p.stderr  # mjcenic-run prints its usage on stderr
    top = help_of([sys.executable, "-m", "mjcenic"])
    bad, commands = [], _synopsis_commands(block)
    assert len(commands) >= 7, commands
    runner_help = help_of([str(BUILD / "mjcenic-run")])
    listed = {f for command, text in commands if command.startswith("build/")
              for f in flags.findall(text)}
    bad += [f"mjcenic-run {f} is missing from the synopsis"
            for f in sorted(set(flags.findall(runner_help)) - listed - {"--help"})]
    for command, text in commands:
        if command.startswith("build/"):
            helptext = runner_help
        elif command.split()[1].startswith("--"):
            helptext = top
        else:
            sub = command.split()[1]
            assert re.search(rf"\b{sub}\b", top), f"`mjcenic --help` does not list {sub}"
            helptext = help_of([sys.executable, "-m", "mjcenic", sub])
        bad += [f"{command}: {f} is not in its --help" for f in flags.findall(text)
                if f not in helptext]
    assert not bad, "\n".join(bad)


def test_clone_commands(tmp_path):
    """The README's two commands for a clone: `make demo` runs (against this build tree, and
    never installs anything: no terminal, CI unset), and `make test` is the ctest and pytest
    runs this suite is part of (`make -n`: printed, not run again from inside itself)."""
    lines = [line for _, line in doc_blocks.lines_for("test_clone_commands")]
    assert lines == ["make demo", "make test"], lines
    if not shutil.which("make"):
        pytest.skip("no make")
    env = _env(CI="false", MJCENIC_INSTALL_DEPS="0")
    for k in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL"):  # not the jobserver of a `make test` around us
        env.pop(k, None)
    make = ["make", f"BUILD={BUILD}", f"PYTHON={sys.executable}", "JOBS=2"]
    p = subprocess.run(make + ["demo"], cwd=ROOT, env=env, capture_output=True, text=True,
                       timeout=900, stdin=subprocess.DEVNULL)
    assert p.returncode == 0, f"make demo:\n{p.stdout[-4000:]}\n{p.stderr[-4000:]}"
    assert "mj_step:" in p.stdout and "max penetration" in p.stdout, p.stdout
    report = json.loads((BUILD / "demo.json").read_text())
    assert report["model"] == "models/clutter.xml" and report["sim_time"] == 2
    assert report["finite"] and "mjstep_wall_time" in report
    p = subprocess.run(make + ["-n", "test"], cwd=ROOT, env=env, capture_output=True, text=True,
                       timeout=120)
    assert p.returncode == 0, p.stderr
    assert "ctest" in p.stdout and re.search(r"-m pytest -q .*tests/python$", p.stdout, re.M) and \
        "tests/packaging" in p.stdout, p.stdout


def test_debian_packages_line():
    """The README's `sudo apt-get install ...` names packages apt can install (simulated:
    `apt-get install -s`, no root needed, nothing changes)."""
    (( _, line),) = doc_blocks.lines_for("test_debian_packages_line")
    if not shutil.which("apt-get"):
        pytest.skip("no apt-get (not a Debian system)")
    argv = line.split()[line.split().index("install") + 1:]
    p = subprocess.run(["apt-get", "install", "-s", *argv], capture_output=True, text=True,
                       timeout=300, env=dict(os.environ, LC_ALL="C"))
    assert p.returncode == 0, f"{line}:\n{p.stdout[-3000:]}\n{p.stderr[-3000:]}"


def readme_command_lines():
    return [line for _, line in doc_blocks.lines_for("test_readme_command_lines_run")]


def test_readme_command_lines_run(tmp_path):
    """Every `mjcenic` command line of the README runs as written, with its placeholders
    filled: scene.xml is a bundled scene, the models folder a folder holding it, output
    paths are in a scratch folder and the viewer is headless (no display)."""
    lines = readme_command_lines()
    assert {ln.split()[1] for ln in lines} >= {"view", "run", "compare", "--help"}, lines
    (tmp_path / "models").mkdir()
    scene = tmp_path / "scene.xml"
    scene.write_text((ROOT / "models/sphere_plane.xml").read_text())
    (tmp_path / "models/scene.xml").write_text(scene.read_text())
    for line in lines:
        argv = line.split()[1:]
        if argv[0] == "view":
            argv += ["--headless", "view.png", "--seconds", "0.2"]
        if argv[0] == "compare":
            argv += ["--duration", "0.2"]
        if argv[0] == "compare" and "--plots" in argv:
            pytest.importorskip("matplotlib")  # the `plots` extra
        p = subprocess.run([sys.executable, "-m", "mjcenic", *argv], cwd=tmp_path, env=_env(),
                           capture_output=True, text=True, timeout=600)
        assert p.returncode == 0, f"README: {line}\n{p.stdout}\n{p.stderr}"
    assert (tmp_path / "view.png").stat().st_size > 0
    assert (tmp_path / "traj.npz").stat().st_size > 0
    assert (tmp_path / "out.json").stat().st_size > 0 and (tmp_path / "out.md").stat().st_size > 0


# Parses its arguments as the script would, then stops: the benchmarks take minutes to an
# hour and rewrite docs/.
PARSE_ONLY = """
import argparse, runpy, sys
parse = argparse.ArgumentParser.parse_args
def parse_and_stop(self, args=None, namespace=None):
    parse(self, args, namespace)
    print("arguments accepted")
    sys.exit(0)
argparse.ArgumentParser.parse_args = parse_and_stop
sys.argv = sys.argv[1:]
runpy.run_path(sys.argv[0], run_name="__main__")
"""


def benchmark_argv(line):
    """A benchmark page's command line as argv: `nice` dropped, an optional flag `[--x V]`
    given, an optional value `[ADDRESS]` and `...` left out."""
    line = re.sub(r"^nice\s+", "", line)
    line = re.sub(r"\[(-[^\]]*)\]", r"\1", line)
    line = re.sub(r"\s\[[^\]]*\]|\s\.\.\.(?=\s|$)", "", line)
    return line.split()


def test_benchmark_command_lines(tmp_path):
    """docs/benchmarks.md's command lines: each benchmark script accepts its arguments as
    printed (run up to its argument parsing: the runs take minutes and rewrite docs/), and the
    `mjcenic compare` line runs as written on a folder holding one bundled scene, its outputs
    in a scratch folder."""
    lines = [line for _, line in doc_blocks.lines_for("test_benchmark_command_lines")]
    assert len(lines) >= 8, lines
    scripts = 0
    for line in lines:
        argv = benchmark_argv(line)
        if argv[0] == "python3" and argv[1].startswith("scripts/"):
            assert (ROOT / argv[1]).is_file(), line
            p = subprocess.run([sys.executable, "-c", PARSE_ONLY, str(ROOT / argv[1]), *argv[2:]],
                               cwd=ROOT, env=_env(), capture_output=True, text=True, timeout=300)
            assert p.returncode == 0 and "arguments accepted" in p.stdout, \
                f"docs/benchmarks.md: {line}\n{p.stdout[-2000:]}\n{p.stderr[-3000:]}"
            scripts += 1
            continue
        m = re.match(r"PYTHONPATH=build/python python3 -m mjcenic (compare .*)$", " ".join(argv))
        assert m, f"docs/benchmarks.md: no runner for `{line}`"
        if "--plots" in argv:
            pytest.importorskip("matplotlib")  # the `plots` extra
        models = tmp_path / "models"
        models.mkdir()
        (models / "scene.xml").write_text((ROOT / "models/sphere_plane.xml").read_text())
        args = m.group(1).replace("../shared/models", str(models)).split()
        p = subprocess.run([sys.executable, "-m", "mjcenic", *args], cwd=tmp_path, env=_env(),
                           capture_output=True, text=True, timeout=600)
        assert p.returncode == 0, f"docs/benchmarks.md: {line}\n{p.stdout}\n{p.stderr}"
        assert (tmp_path / "out/compare/compare.json").stat().st_size > 0
    assert scripts >= 7


# ----------------------------------------------------------------------------- wording

# Work-organization labels: work-branch names (h, two digits, a letter), an issue, session or
# round with its number, and the branch a change was made on or started from. Written with \s
# (and the examples below split) so that this file does not match itself.
LABEL = re.compile(r"\bh[12][0-9][a-f]\b|\bissue\s[0-9]+|\bsession\s[0-9]+|\bround\s[0-9]"
                   r"|this\sbranch|branch\spoint", re.I)


def tracked_text_files():
    try:
        names = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True,
                               check=True).stdout.splitlines()
    except (OSError, subprocess.CalledProcessError):
        names = [str(p.relative_to(ROOT)) for p in ROOT.rglob("*")
                 if p.is_file() and ".git" not in p.parts]
    out = []
    for n in names:
        p = ROOT / n
        if p.suffix in {".json", ".png", ".npz", ".stl", ".obj", ".msh"} or not p.is_file():
            continue
        try:
            out.append((n, p.read_text(encoding="utf-8")))
        except UnicodeDecodeError:
            continue  # binary
    return out


def test_no_work_organization_labels():
    """Code, docs, tests and scripts describe the code as it is, not how the work was
    organized."""
    files = tracked_text_files()
    assert any(n == "README.md" for n, _ in files) and len(files) > 50
    hits = [f"{n}:{i}: {line.strip()[:120]}" for n, text in files
            for i, line in enumerate(text.splitlines(), 1) if LABEL.search(line)]
    assert not hits, f"{len(hits)} lines with work-organization labels:\n" + "\n".join(hits)


def test_label_pattern():
    for bad in ("see h" "24c", "issue" " 18's bound", "Session" " 12", "round" " 3", "this" " branch",
                "branch" " point"):
        assert LABEL.search(bad), bad
    for good in ("h = 0.1", "the h^1.5 rule", "MuJoCo issue #3328", "around 3", "h24"):
        assert not LABEL.search(good), good


# ----------------------------------------------------------------------------- named sections

# A citation of a page's section by name: `docs/how-it-works.md, "Errors and progress"`,
# `docs/python.md "Outputs inside a step"`, `README, "Options"` (further names may follow:
# `, "A", "B"`). A quoted name that wraps onto the next comment line is joined with it.
NAMED = re.compile(r"(?:(?:\.\./)?docs/(?P<page>[\w-]+)\.md|(?P<readme>README)(?:\.md)?)"
                   r",?\s+\"(?P<names>[^\"]+\"(?:,\s*\"[^\"]+\")*)")


def named_citations(text):
    """(page, name) of every named-section citation in text (page None: the README)."""
    out = []
    lines = text.splitlines() + [""]
    for i, line in enumerate(lines[:-1]):
        joined = line
        if line.count('"') % 2:  # a quoted name wrapped onto the next comment line
            joined += re.sub(r"^\s*(?://+|#+|\*)?\s*", " ", lines[i + 1])
        for m in NAMED.finditer(joined):
            if m.start() >= len(line):
                continue
            for name in re.findall(r"([^\"]+)\"(?:,\s*\"|$)", m.group("names")):
                out.append((i + 1, m.group("page"), name.strip()))
    return out


def section_names(path):
    """A page's headings (without their numbers) and bold paragraph labels, lower-case."""
    text = path.read_text(encoding="utf-8")
    names = {re.sub(r"^[0-9.]+\s+", "", re.sub(r"^#+\s*", "", line)).strip().lower()
             for line in text.splitlines() if re.match(r"^#{1,6}\s", line)}
    names |= {b.strip().lower() for b in re.findall(r"\*\*([^*]+)\*\*", text)}
    return {n.replace("`", "") for n in names}


def test_named_section_citations_resolve():
    """Every citation of a docs page's (or the README's) section by name names a heading or a
    bold paragraph label of that page."""
    bad, seen = [], 0
    for path in source_files():
        for line, page, name in named_citations(path.read_text(encoding="utf-8")):
            seen += 1
            target = ROOT / "README.md" if page is None else DOCS / f"{page}.md"
            if not target.is_file():
                bad.append(f"{path.relative_to(ROOT)}:{line}: {target.name} does not exist")
            elif re.sub(r"\s+", " ", name).replace("`", "").lower() not in section_names(target):
                bad.append(f"{path.relative_to(ROOT)}:{line}: {target.name} has no section "
                           f"\"{name}\"")
    assert seen >= 10, seen
    assert not bad, "named citations that do not resolve:\n" + "\n".join(bad)


def test_named_citation_parser():
    text = ('// (docs/how-it-works.md, "Errors and\n// progress"), docs/python.md "A", "B";\n'
            '# README, "Options"\n')
    assert named_citations(text) == [(1, "how-it-works", "Errors and progress"),
                                     (2, "python", "A"), (2, "python", "B"),
                                     (3, None, "Options")]

"""The docs' pip lines, run as a MuJoCo user would (run by `make test-wheel`; compiles for
minutes, once).

A copy of this checkout (a fresh clone) and a fresh venv that already has `mujoco==4.0.0`
(MJCENIC_WHEEL_MUJOCO picks another release): the install lines of the README ("Install") and
docs/install.md ("Python (pip)") run there as printed, from the clone: `pip install .` (which must
keep the venv's MuJoCo and pull no plotting package), `pip wheel . -w dist/` (a second compile:
pip builds each time in a fresh isolated environment), the extras `'.[plots]'` and `'.[ray]'`
(`.` given as that wheel, which is what pip builds from `.`: a third compile would test nothing
more), `mjcenic --version`
and the `python -c` line. Then, with the clone's build tree deleted: the README's Python snippet,
`mjcenic view --headless` and `mjcenic install-plugin`. The wheel: its extension and plugin
library load, from outside the wheel, only libmujoco (from the installed `mujoco` package,
through an $ORIGIN-relative RUNPATH) and system libraries; abseil and SuiteSparse are bundled,
each with its licence notice. The lines come from tests/doc_blocks.py."""
import os
import pathlib
import re
import shlex
import shutil
import subprocess
import sys
import zipfile

import pytest

from pkg_helpers import FALLING_SPHERE_XML, GRAVITY, ROOT, readelf_dynamic, run

sys.path.insert(0, str(ROOT / "tests"))
import doc_blocks  # noqa: E402

MUJOCO = os.environ.get("MJCENIC_WHEEL_MUJOCO", "4.0.0")
RUNNER = "test_installs_and_runs_as_the_docs_say_in_a_fresh_venv"

# Libraries every manylinux platform provides (PEP 600 / auditwheel policy).
SYSTEM_LIBS = {"libc.so.6", "libm.so.6", "libdl.so.2", "libpthread.so.0", "librt.so.1",
               "libstdc++.so.6", "libgcc_s.so.1", "ld-linux-x86-64.so.2"}
FOREIGN = ("absl", "cholmod", "suitesparse", "amd", "colamd", "camd", "blas", "lapack",
           "metis", "gfortran", "gomp")


def _clean_env():
    return {k: v for k, v in os.environ.items()
            if k not in ("PYTHONPATH", "MJCENIC_BUILD", "LD_LIBRARY_PATH", "MJCENIC_MUJOCO",
                         "VIRTUAL_ENV")}


def install_lines():
    """The pip, mjcenic and python lines of the docs' install blocks, each once, in page order."""
    out = []
    for _, line in doc_blocks.lines_for(RUNNER):
        if line not in out:
            out.append(line)
    return out


def _clone(dest):
    """The checkout's files as git tracks them (with uncommitted edits): a fresh clone."""
    try:
        names = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True,
                               check=True).stdout.decode().split("\0")
    except (OSError, subprocess.CalledProcessError):
        names = [str(p.relative_to(ROOT)) for p in ROOT.rglob("*") if p.is_file()
                 and not {".git", "build"} & set(p.relative_to(ROOT).parts)]
    for name in filter(None, names):
        if (ROOT / name).is_file():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, dest / name)
    return dest


class User:
    """A venv with mujoco==MUJOCO, activated (its bin/ first on PATH), and a clone."""

    def __init__(self, tmp):
        self.tmp, self.venv, self.clone = tmp, tmp / "venv", _clone(tmp / "mjcenic")
        run([sys.executable, "-m", "venv", self.venv])
        self.py, self.mj = self.venv / "bin" / "python", self.venv / "bin" / "mjcenic"
        self.env = _clean_env()
        self.env.update(PATH=f"{self.venv / 'bin'}{os.pathsep}{self.env['PATH']}",
                        VIRTUAL_ENV=str(self.venv))
        self.env.setdefault("MUJOCO_GL", "osmesa")
        self.shell(f"pip install -q mujoco=={MUJOCO}")
        self.seen = {}

    def shell(self, line, **kw):
        kw.setdefault("cwd", self.clone)
        return run(["bash", "-c", line], env=self.env, **kw)

    def has(self, module):
        probe = f"import importlib.util as u; print(u.find_spec({module!r}) is not None)"
        return run([self.py, "-c", probe], env=self.env, cwd=self.tmp).stdout.strip() == "True"

    def mujoco_version(self):
        return run([self.py, "-c", "import mujoco; print(mujoco.__version__)"], env=self.env,
                   cwd=self.tmp).stdout.strip()


@pytest.fixture(scope="module")
def user(tmp_path_factory):
    """The docs' pip lines in order; what each showed is in user.seen."""
    u = User(tmp_path_factory.mktemp("user"))
    lines = install_lines()
    assert lines[0] == "pip install ." and "pip wheel . -w dist/" in lines, lines
    u.shell(lines[0])
    u.seen["mujoco after pip install ."] = u.mujoco_version()
    u.seen["matplotlib after pip install ."] = u.has("matplotlib")
    u.seen["tqdm after pip install ."] = u.has("tqdm")
    u.shell("pip wheel . -w dist/")
    (u.wheel,) = (u.clone / "dist").glob("mjcenic-*.whl")
    print(f"\nbuilt {u.wheel.name} ({u.wheel.stat().st_size / 1e6:.1f} MB):")
    for n in sorted(n for n in zipfile.ZipFile(u.wheel).namelist()
                    if ".so" in n or "/licenses/" in n):
        print("   ", n)
    for line in lines:
        m = re.fullmatch(r"pip install '\.\[(\w+)\]'", line)
        if m:  # an extra: `.` is the wheel pip builds from it
            u.shell(f"pip install -q {shlex.quote(f'{u.wheel}[{m.group(1)}]')}")
            u.seen[f"extra {m.group(1)}"] = True
        elif line.startswith("pip "):
            assert line in ("pip install .", "pip wheel . -w dist/"), f"no runner for `{line}`"
    assert u.seen.get("extra plots") and u.seen.get("extra ray"), u.seen
    shutil.rmtree(u.clone / "build")  # the installed package must not need its build tree
    u.rest = [ln for ln in lines if not ln.startswith("pip ")]
    return u


@pytest.fixture(scope="module")
def wheel(user):
    return user.wheel


@pytest.fixture(scope="module")
def unpacked(wheel, tmp_path_factory):
    root = tmp_path_factory.mktemp("unpacked")
    zipfile.ZipFile(wheel).extractall(root)
    return root


def test_wheel_is_tagged_manylinux_and_pins_the_built_mujoco(wheel, unpacked):
    assert "manylinux" in wheel.name, wheel.name
    (meta,) = unpacked.glob("mjcenic-*.dist-info/METADATA")
    requires = [l.split(":", 1)[1].strip() for l in meta.read_text().splitlines()
                if l.startswith("Requires-Dist:")]
    # Built against the venv's mujoco; requiring exactly it keeps pip from changing it.
    assert f"mujoco=={MUJOCO}" in requires, requires
    # Plotting and progress bars are the `plots` extra, not dependencies of the stepper.
    for extra in ("matplotlib", "tqdm", "pillow"):
        for r in requires:
            if r.lower().startswith(extra):
                assert 'extra == "plots"' in r, r
    # No path of the build machine is recorded (the ABI guard's advice must not name one).
    version_py = (unpacked / "mjcenic" / "_version.py").read_text()
    assert 'SOURCE_DIR = ""' in version_py and str(ROOT) not in version_py


def _glibc_floor(path):
    """The newest GLIBC_x.y symbol version an ELF file needs, as (x, y)."""
    out = run(["objdump", "-T", path]).stdout
    return max((tuple(int(v) for v in m) for m in re.findall(r"GLIBC_(\d+)\.(\d+)", out)),
               default=(0, 0))


def test_platform_tag_is_set_by_the_bundled_libraries(wheel, unpacked):
    """mjcenic's own files need no newer glibc than the Debian libraries it bundles
    (docs/install.md, "Platform tag"), and the tag claims exactly that glibc."""
    own = max(_glibc_floor(f) for f in (unpacked / "mjcenic").glob("*.so"))
    bundled = max(_glibc_floor(f) for f in (unpacked / "mjcenic.libs").glob("*.so*"))
    print(f"\nglibc needed: mjcenic {own}, bundled libraries {bundled}; {wheel.name}")
    assert own <= bundled
    assert f"manylinux_{bundled[0]}_{bundled[1]}_" in wheel.name


def test_plugin_library_and_a_licence_for_every_bundled_library(unpacked):
    assert (unpacked / "mjcenic" / "libmjcenic.so").is_file()
    (dist_info,) = unpacked.glob("mjcenic-*.dist-info")
    licences = dist_info / "licenses"
    assert (licences / "LICENSE").is_file()
    index = (licences / "bundled" / "BUNDLED.md").read_text()
    bundled = sorted(f.name for f in (unpacked / "mjcenic.libs").glob("*.so*"))
    assert bundled
    for name in bundled:
        (row,) = [l for l in index.splitlines() if f"`mjcenic.libs/{name}`" in l]
        notice = re.search(r"`bundled/([^`]+)`", row).group(1)
        assert (licences / "bundled" / notice).stat().st_size > 0, row
    # The libraries the docs name (docs/install.md, "Licenses") are among them.
    for lib in ("libcholmod", "libmetis", "libblas", "liblapack", "libgfortran", "libabsl_"):
        assert any(n.startswith(lib) for n in bundled), (lib, bundled)
    assert "GPL" in (licences / "bundled" / re.search(
        r"`mjcenic.libs/libcholmod[^|]*\|[^|]*\|[^|]*\| `bundled/([^`]+)`", index).group(1)).read_text()


@pytest.mark.parametrize("pattern", ["_mjcenic*.so", "libmjcenic.so"])
def test_extension_loads_only_libmujoco_and_system_libraries_from_outside(unpacked, pattern):
    (ext,) = (unpacked / "mjcenic").glob(pattern)
    needed, runpath = readelf_dynamic(ext)
    assert runpath and all(p.startswith("$ORIGIN") for p in runpath), runpath
    if ext.name == "libmjcenic.so":  # its copy in <site-packages>/mujoco/plugin (install-plugin)
        assert "$ORIGIN/../../mjcenic.libs" in runpath, runpath
        runpath = [p for p in runpath if p != "$ORIGIN/../../mjcenic.libs"]
    libdirs = [pathlib.Path(p.replace("$ORIGIN", str(ext.parent))).resolve() for p in runpath]
    mujoco_dir = (unpacked / "mujoco").resolve()
    assert mujoco_dir in libdirs, runpath  # libmujoco of the installed mujoco package
    for d in libdirs:
        assert d == mujoco_dir or unpacked.resolve() in d.parents, d
    bundled = {f.name for d in libdirs if d.exists() for f in d.iterdir()}
    outside = [n for n in needed if n not in bundled and n not in SYSTEM_LIBS]
    print(f"\n{ext.name}: RUNPATH {':'.join(runpath)}; bundled {sorted(bundled)}")
    assert outside == [f"libmujoco.so.{MUJOCO}"], (needed, outside)
    # abseil and SuiteSparse are bundled: they and their dependencies load only
    # system libraries, libmujoco or each other.
    for lib in (unpacked / "mjcenic.libs").glob("*.so*"):
        lib_needed, lib_runpath = readelf_dynamic(lib)
        assert all(p.startswith("$ORIGIN") for p in lib_runpath), (lib, lib_runpath)
        assert not [n for n in lib_needed if n not in bundled and n not in SYSTEM_LIBS], lib


def readme_python_snippet():
    """The README's ```python block (section "Use it from Python")."""
    (block,) = [b for b in doc_blocks.blocks() if b.path == "README.md" and b.tag == "python"]
    return block.code


def test_installs_and_runs_as_the_docs_say_in_a_fresh_venv(user):
    seen, env, tmp = user.seen, user.env, user.tmp
    # pip install . built against the venv's MuJoCo and kept it; no plotting without the extra.
    assert seen["mujoco after pip install ."] == MUJOCO, seen
    assert not seen["matplotlib after pip install ."] and not seen["tqdm after pip install ."], seen
    assert user.mujoco_version() == MUJOCO and user.has("matplotlib") and user.has("ray")
    code = f"""
import mujoco, mjcenic
m = mujoco.MjModel.from_xml_string('''{FALLING_SPHERE_XML}''')
d = mujoco.MjData(m)
mjcenic.Stepper(m, accuracy=1e-3).advance_to(0.2, d)
print(mjcenic.__file__, mjcenic.__version__, mujoco.__version__, d.qpos[2])
"""
    out = run([user.py, "-c", code], env=env, cwd=tmp).stdout.split()
    assert out[0].startswith(str(user.venv))
    assert out[2] == MUJOCO
    assert float(out[3]) == pytest.approx(1 - 0.5 * GRAVITY * 0.2**2, abs=5e-3)  # free fall
    # Every shared library the extension loads is a system library or comes from the venv.
    (ext,) = pathlib.Path(out[0]).parent.glob("_mjcenic*.so")
    ldd = run(["ldd", ext], env=env).stdout
    for line in ldd.splitlines():
        if "=>" not in line:
            continue
        name, path = line.split("=>")[0].strip(), line.split("=>")[1].split("(")[0].strip()
        assert path != "not found", line
        if name not in SYSTEM_LIBS:
            assert path.startswith(str(user.venv)), line
        assert not (any(f in name.lower() for f in FOREIGN) and not path.startswith(str(user.venv))), line
    # The docs' remaining lines: mjcenic --version and the python -c line.
    assert user.rest == ["mjcenic --version",
                         'python -c "import mjcenic; print(mjcenic.__version__, mjcenic.BUILT_FOR_MUJOCO)"'], user.rest
    version = user.shell(user.rest[0], cwd=tmp).stdout
    assert version.strip() == f"mjcenic {out[1]} (MuJoCo {MUJOCO}, built against {MUJOCO})", version
    assert user.shell(user.rest[1], cwd=tmp).stdout.split() == [out[1], MUJOCO]
    assert "compare" in run([user.mj, "--help"], env=env).stdout

    # The README's Python snippet, as a user pastes it.
    (tmp / "readme.py").write_text(readme_python_snippet())
    assert "box height" in run([user.py, "readme.py"], env=env, cwd=tmp).stdout
    # A bundled model in the headless viewer: a PNG of the scene.
    png = tmp / "x.png"
    run([user.mj, "view", ROOT / "models" / "pendulum.xml", "--headless", png, "--seconds", "0.1"],
        env=env, cwd=tmp)
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 1000
    # install-plugin: what it would do, then done; stock `import mujoco` (no mjcenic)
    # then loads a model that declares the plugin.
    assert "would copy" in run([user.mj, "install-plugin", "--dry-run"], env=env).stdout
    run([user.mj, "install-plugin"], env=env)
    plugin_model = FALLING_SPHERE_XML.replace(
        "<mujoco>", '<mujoco><extension><plugin plugin="mjcenic"><instance name="c"/></plugin></extension>', 1)
    load = f"import mujoco; m = mujoco.MjModel.from_xml_string('''{plugin_model}'''); print(m.nplugin)"
    assert run([user.py, "-c", load], env=env, cwd=tmp).stdout.strip() == "1"

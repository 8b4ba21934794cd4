"""`pip wheel .` gives a portable wheel (run by `make test-wheel`; compiles for minutes, once).

The wheel's extension and plugin library may load, from outside the wheel, only
libmujoco (from the installed `mujoco` package, through an $ORIGIN-relative
RUNPATH) and system libraries; abseil and SuiteSparse are bundled, each with its
licence notice. It is installed without extras into a fresh venv after its build
tree is deleted, and used as the docs say: the README's Python snippet, `mjcenic
view --headless`, `mjcenic install-plugin`."""
import os
import pathlib
import re
import shutil
import subprocess
import sys
import zipfile

import mujoco
import pytest

from pkg_helpers import FALLING_SPHERE_XML, GRAVITY, ROOT, readelf_dynamic, run

# Libraries every manylinux platform provides (PEP 600 / auditwheel policy).
SYSTEM_LIBS = {"libc.so.6", "libm.so.6", "libdl.so.2", "libpthread.so.0", "librt.so.1",
               "libstdc++.so.6", "libgcc_s.so.1", "ld-linux-x86-64.so.2"}
FOREIGN = ("absl", "cholmod", "suitesparse", "amd", "colamd", "camd", "blas", "lapack",
           "metis", "gfortran", "gomp")


def _clean_env():
    return {k: v for k, v in os.environ.items()
            if k not in ("PYTHONPATH", "MJCENIC_BUILD", "LD_LIBRARY_PATH")}


@pytest.fixture(scope="module")
def wheel(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("wheel")
    build_dir = tmp / "build-tree"
    run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-w", tmp / "dist",
                f"--config-settings=build-dir={build_dir}", ROOT], env=_clean_env())
    assert build_dir.exists(), "the wheel was not built in the requested build tree"
    shutil.rmtree(build_dir)  # the installed wheel must not need it
    (whl,) = (tmp / "dist").glob("mjcenic-*.whl")
    names = zipfile.ZipFile(whl).namelist()
    print(f"\nbuilt {whl.name} ({whl.stat().st_size / 1e6:.1f} MB):")
    for n in sorted(n for n in names if ".so" in n or "/licenses/" in n):
        print("   ", n)
    return whl


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
    # Built against the mujoco installed here; requiring exactly it keeps pip from changing it.
    assert f"mujoco=={mujoco.__version__}" in requires, requires
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
    assert outside == [f"libmujoco.so.{mujoco.__version__}"], (needed, outside)
    # abseil and SuiteSparse are bundled: they and their dependencies load only
    # system libraries, libmujoco or each other.
    for lib in (unpacked / "mjcenic.libs").glob("*.so*"):
        lib_needed, lib_runpath = readelf_dynamic(lib)
        assert all(p.startswith("$ORIGIN") for p in lib_runpath), (lib, lib_runpath)
        assert not [n for n in lib_needed if n not in bundled and n not in SYSTEM_LIBS], lib


def readme_python_snippet():
    """The README's first ```python block (section "Use it from Python")."""
    text = (ROOT / "README.md").read_text()
    return re.search(r"```python\n(.*?)```", text, re.S).group(1)


def test_installs_and_runs_as_the_docs_say_in_a_fresh_venv(wheel, tmp_path):
    venv = tmp_path / "venv"
    run([sys.executable, "-m", "venv", venv])
    py, mj = venv / "bin" / "python", venv / "bin" / "mjcenic"
    env = _clean_env()
    env.setdefault("MUJOCO_GL", "osmesa")
    run([py, "-m", "pip", "install", "-q", wheel], env=env)
    code = f"""
import mujoco, mjcenic
m = mujoco.MjModel.from_xml_string('''{FALLING_SPHERE_XML}''')
d = mujoco.MjData(m)
mjcenic.Stepper(m, accuracy=1e-3).advance_to(0.2, d)
print(mjcenic.__file__, mjcenic.__version__, mujoco.__version__, d.qpos[2])
"""
    out = run([py, "-c", code], env=env, cwd=tmp_path).stdout.split()
    assert out[0].startswith(str(venv))
    assert out[2] == mujoco.__version__
    assert float(out[3]) == pytest.approx(1 - 0.5 * GRAVITY * 0.2**2, abs=5e-3)  # free fall
    # Without the `plots` extra there is no matplotlib.
    probe = "import importlib.util as u; print(u.find_spec('matplotlib') is None)"
    assert run([py, "-c", probe], env=env).stdout.strip() == "True"
    # Every shared library the extension loads is a system library or comes from the venv.
    (ext,) = pathlib.Path(out[0]).parent.glob("_mjcenic*.so")
    ldd = run(["ldd", ext], env=env).stdout
    for line in ldd.splitlines():
        if "=>" not in line:
            continue
        name, path = line.split("=>")[0].strip(), line.split("=>")[1].split("(")[0].strip()
        assert path != "not found", line
        if name not in SYSTEM_LIBS:
            assert path.startswith(str(venv)), line
        assert not (any(f in name.lower() for f in FOREIGN) and not path.startswith(str(venv))), line
    version = run([mj, "--version"], env=env).stdout
    assert f"mjcenic {out[1]}" in version and f"MuJoCo {mujoco.__version__}" in version

    # The README's Python snippet, as a user pastes it.
    (tmp_path / "readme.py").write_text(readme_python_snippet())
    assert "box height" in run([py, "readme.py"], env=env, cwd=tmp_path).stdout
    # A bundled model in the headless viewer: a PNG of the scene.
    png = tmp_path / "x.png"
    run([mj, "view", ROOT / "models" / "pendulum.xml", "--headless", png, "--seconds", "0.1"],
        env=env, cwd=tmp_path)
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 1000
    # install-plugin: what it would do, then done; stock `import mujoco` (no mjcenic)
    # then loads a model that declares the plugin.
    assert "would copy" in run([mj, "install-plugin", "--dry-run"], env=env).stdout
    run([mj, "install-plugin"], env=env)
    plugin_model = FALLING_SPHERE_XML.replace(
        "<mujoco>", '<mujoco><extension><plugin plugin="mjcenic"><instance name="c"/></plugin></extension>', 1)
    load = f"import mujoco; m = mujoco.MjModel.from_xml_string('''{plugin_model}'''); print(m.nplugin)"
    assert run([py, "-c", load], env=env, cwd=tmp_path).stdout.strip() == "1"

"""`pip wheel .` gives a portable wheel (run by `make test-wheel`; compiles for minutes).

The wheel's extension may load, from outside the wheel, only libmujoco (from the
installed `mujoco` package, through an $ORIGIN-relative RUNPATH) and system
libraries; abseil and SuiteSparse are bundled. It is installed into a fresh venv
after its build tree is deleted, then imported and stepped."""
import os
import pathlib
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
    print(f"\nbuilt {whl.name} ({whl.stat().st_size / 1e6:.1f} MB)")
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


def test_extension_loads_only_libmujoco_and_system_libraries_from_outside(unpacked):
    (ext,) = (unpacked / "mjcenic").glob("_mjcenic*.so")
    needed, runpath = readelf_dynamic(ext)
    assert runpath and all(p.startswith("$ORIGIN") for p in runpath), runpath
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


def test_installs_and_steps_in_a_fresh_venv(wheel, tmp_path):
    venv = tmp_path / "venv"
    run([sys.executable, "-m", "venv", venv])
    py = venv / "bin" / "python"
    env = _clean_env()
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
    version = run([venv / "bin" / "mjcenic", "--version"], env=env).stdout
    assert f"mjcenic {out[1]}" in version and f"MuJoCo {mujoco.__version__}" in version

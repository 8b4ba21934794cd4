"""`cmake --install` output used by a downstream CMake project (C and C++)."""
import re
import sys

import mujoco

import pytest

from pkg_helpers import BUILD, FALLING_SPHERE_XML, GRAVITY, ROOT, readelf_dynamic, run


@pytest.fixture(scope="module")
def prefix(tmp_path_factory):
    if not (BUILD / "CMakeCache.txt").exists():
        pytest.fail(f"no build tree at {BUILD}: run `make build` first")
    prefix = tmp_path_factory.mktemp("prefix")
    run(["cmake", "--install", BUILD, "--prefix", prefix, "--component", "dev"])
    return prefix


def test_install_tree_layout(prefix):
    lib = prefix / "lib" / "libmjcenic.so"
    assert lib.exists() and (prefix / "include" / "mjcenic.h").exists()
    for header in ["mjcenic/integrator/stepper.h", "mjcenic/icf/icf_model.h", "mjcenic/version.h"]:
        assert (prefix / "include" / header).exists(), header
    cmake_dir = prefix / "lib" / "cmake" / "mjcenic"
    for f in ["mjcenicConfig.cmake", "mjcenicConfigVersion.cmake", "mjcenicTargets.cmake"]:
        assert (cmake_dir / f).exists(), f
    # The installed library finds libmujoco where it was linked from, never the build tree.
    needed, runpath = readelf_dynamic(lib)
    assert any(n.startswith("libmujoco.so.") for n in needed)
    assert not [p for p in runpath if str(BUILD) in p or str(ROOT) in p], runpath


def test_consumer_project_c_and_cxx(prefix, tmp_path):
    build = tmp_path / "build"
    run(["cmake", "-S", ROOT / "tests/packaging/consumer", "-B", build,
         f"-DCMAKE_PREFIX_PATH={prefix}", f"-DPython3_EXECUTABLE={sys.executable}",
         "-DCMAKE_BUILD_TYPE=Release"])
    run(["cmake", "--build", build, "-j2"])
    model = tmp_path / "sphere.xml"
    model.write_text(FALLING_SPHERE_XML)
    env = {"PATH": "/usr/bin:/bin"}  # no LD_LIBRARY_PATH: RUNPATHs must suffice
    z_c = run([build / "consumer_c", model], env=env).stdout.split()
    z_cxx = run([build / "consumer_cxx", model], env=env).stdout.split()
    # Free fall until contact (t = 0.43 s): z(0.2) = 1 - g t^2/2 within the
    # accuracy-controlled (1e-3) error; at 1.5 s it rests on the plane (z = radius).
    z_fall, z_rest, steps = float(z_c[0]), float(z_c[1]), int(z_c[2])
    assert z_fall == pytest.approx(1 - 0.5 * GRAVITY * 0.2**2, abs=5e-3)
    assert z_rest == pytest.approx(0.1, abs=5e-3)
    assert steps > 0
    # The C API and the C++ API with default options take identical steps.
    assert z_cxx[:3] == z_c[:3]
    version = re.search(r"project\(mjcenic VERSION ([0-9.]+)", (ROOT / "CMakeLists.txt").read_text())
    assert z_cxx[3] == version.group(1)
    assert z_cxx[4] == mujoco.__version__

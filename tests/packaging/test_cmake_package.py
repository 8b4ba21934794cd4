"""`cmake --install` output used as the README and docs/c-api.md say: their shell lines run
as printed (the prefix /opt/mjcenic a scratch folder, `build` the build tree under test,
scene.xml a falling sphere), their CMake projects and C and C++ programs built verbatim with
nothing set by the consumer but the prefix, and the installed `mjcenic-run`. The blocks come
from tests/doc_blocks.py."""
import re
import shutil
import subprocess
import sys

import mujoco

import pytest

from pkg_helpers import BUILD, FALLING_SPHERE_XML, GRAVITY, ROOT, ldd, readelf_dynamic, run

sys.path.insert(0, str(ROOT / "tests"))
import doc_blocks  # noqa: E402

README_RUNNER = "test_readme_consumer_builds_verbatim_and_outlives_its_build_tree"
C_API_RUNNER = "test_docs_consumer_project_c_and_cxx_and_installed_runner"

SYSTEM_DIRS = ("/lib/", "/lib64/", "/usr/lib/", "/usr/lib64/")


def doc_code(runner, tag):
    """The one ```tag block that `runner` takes."""
    (block,) = [b for b in doc_blocks.blocks_for(runner) if b.tag == tag]
    return block.code


def doc_lines(runner):
    """The command lines of the shell blocks that `runner` takes."""
    return [line for b in doc_blocks.blocks_for(runner) if b.tag == "bash"
            for line in doc_blocks.command_lines(b)]


def doc_shell(line, prefix, **kw):
    """A documented command line, run by bash: /opt/mjcenic is `prefix`, mjcenic's clone (`-S .`)
    this checkout and its `build` the build tree under test."""
    cmd = line.replace("/opt/mjcenic", str(prefix))
    cmd = re.sub(r"(?<=-S )\.(?=\s)", str(ROOT), cmd)
    cmd = re.sub(r"(?<![\w/.-])build(?![\w/-])", str(BUILD), cmd)
    return run(["bash", "-c", cmd], **kw)


def docs_cmake_snippet():
    """The ```cmake block of docs/c-api.md, "Building and linking"."""
    return doc_code(C_API_RUNNER, "cmake")


def readme_consumer():
    """The ```cpp and ```cmake blocks of the README's "C and C++" section: the program and its
    CMakeLists.txt."""
    return doc_code(README_RUNNER, "cpp"), doc_code(README_RUNNER, "cmake")


def _no_build_tree(binary):
    """The file names neither the build tree nor a Python environment's MuJoCo."""
    data = binary.read_bytes()
    assert str(BUILD).encode() not in data, binary
    assert b"site-packages" not in data, binary


@pytest.fixture(scope="module")
def prefix(tmp_path_factory):
    """Installed by docs/c-api.md's lines: configure and build (here: the tree under test, up to
    date), then `cmake --install ... --component dev`."""
    if not (BUILD / "CMakeCache.txt").exists():
        pytest.fail(f"no build tree at {BUILD}: run `make build` first")
    prefix = tmp_path_factory.mktemp("prefix")
    lines = doc_lines(C_API_RUNNER)
    assert [ln.split()[:2] for ln in lines] == [["cmake", "-S"], ["cmake", "--install"]], lines
    for line in lines:
        doc_shell(line, prefix, cwd=ROOT)
    return prefix


def _loaded_from(binary, prefix):
    """Every library `binary` loads that is not a system library must come from `prefix`."""
    for name, path in ldd(binary, env={"PATH": "/usr/bin:/bin"}).items():
        assert path != "not found", (binary, name)
        if not path.startswith(SYSTEM_DIRS):
            assert path.startswith(str(prefix)), (binary, name, path)


def test_install_tree_layout(prefix):
    lib = prefix / "lib" / "libmjcenic.so"
    assert lib.exists() and (prefix / "include" / "mjcenic.h").exists()
    for header in ["mjcenic/integrator/stepper.h", "mjcenic/icf/icf_model.h", "mjcenic/version.h"]:
        assert (prefix / "include" / header).exists(), header
    cmake_dir = prefix / "lib" / "cmake" / "mjcenic"
    for f in ["mjcenicConfig.cmake", "mjcenicConfigVersion.cmake", "mjcenicTargets.cmake"]:
        assert (cmake_dir / f).exists(), f
    # The installed files find libmujoco relative to themselves, never in the build tree
    # or by an absolute path.
    run_ = prefix / "bin" / "mjcenic-run"
    for binary, expect in ((lib, "$ORIGIN"), (run_, "$ORIGIN/../lib")):
        needed, runpath = readelf_dynamic(binary)
        assert f"libmujoco.so.{mujoco.__version__}" in needed, needed
        assert runpath == [expect], (binary, runpath)
    # Built against the mujoco wheel: the prefix holds that MuJoCo and its licence.
    assert (prefix / "lib" / f"libmujoco.so.{mujoco.__version__}").is_file()
    assert (prefix / "include" / "mujoco" / "mujoco.h").is_file()
    assert (prefix / "share" / "doc" / "mjcenic" / "mujoco" / "LICENSE").is_file()
    assert (prefix / "share" / "doc" / "mjcenic" / "LICENSE").is_file()
    config = (cmake_dir / "mjcenicConfig.cmake").read_text() + (cmake_dir / "mjcenicTargets.cmake").read_text()
    assert "site-packages" not in config and str(BUILD) not in config and str(ROOT) not in config
    assert "cxx_std_20" in (cmake_dir / "mjcenicTargets.cmake").read_text()


# Two programs of the test's own, built in the same project: the C and the C++ API step
# alike, and the headers carry the versions.
CONSUMERS = """
add_executable(consumer_c consumer_c.c)
target_link_libraries(consumer_c PRIVATE mjcenic::c)
add_executable(consumer_cxx consumer_cxx.cc)
target_link_libraries(consumer_cxx PRIVATE mjcenic::mjcenic)
"""


def test_docs_consumer_project_c_and_cxx_and_installed_runner(prefix, tmp_path):
    """docs/c-api.md's project (its CMakeLists.txt, my_c_app.c and my_cpp_app.cc verbatim)
    builds against the prefix with the system's PATH only, and its programs run a falling
    sphere after their build tree is deleted."""
    src = tmp_path / "my_app"
    src.mkdir()
    snippet = docs_cmake_snippet()
    assert "CMAKE_CXX_STANDARD" not in snippet and "cxx_std" not in snippet
    (src / "CMakeLists.txt").write_text(snippet + CONSUMERS)
    (src / "my_c_app.c").write_text(doc_code(C_API_RUNNER, "c"))
    (src / "my_cpp_app.cc").write_text(doc_code(C_API_RUNNER, "cpp"))
    shutil.copy(ROOT / "tests/packaging/consumer/consumer_c.c", src / "consumer_c.c")
    shutil.copy(ROOT / "tests/packaging/consumer/consumer_cxx.cc", src / "consumer_cxx.cc")
    build = tmp_path / "build"
    # Only the system's PATH: the package needs no Python environment.
    cmake, env = shutil.which("cmake"), {"PATH": "/usr/bin:/bin"}
    run([cmake, "-S", src, "-B", build, f"-DCMAKE_PREFIX_PATH={prefix}", "-DCMAKE_BUILD_TYPE=Release"],
        env=env)
    run([cmake, "--build", build, "-j2"], env=env)
    # The executables outlive their build tree.
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for exe in ("my_c_app", "my_cpp_app", "consumer_c", "consumer_cxx"):
        shutil.copy2(build / exe, bin_dir / exe)
    shutil.rmtree(build)
    model = tmp_path / "sphere.xml"
    model.write_text(FALLING_SPHERE_XML)
    # env: no LD_LIBRARY_PATH, RUNPATHs must suffice. The page's programs: the C one swaps
    # mj_step for 0.5 s then advances to 1 s at accuracy 1e-4, the C++ one steps to 5 s and
    # advances to 5.5 s; the sphere (radius 0.1) rests on the plane by then.
    for exe, t_end in (("my_c_app", 1.0), ("my_cpp_app", 5.5)):
        out = run([bin_dir / exe, model], env=env).stdout
        m = re.fullmatch(r"t = ([0-9.]+) s, ([0-9]+) steps(, [0-9]+ rejected)?\n", out)
        assert m and float(m.group(1)) == t_end and int(m.group(2)) > 0, (exe, out)
        usage = subprocess.run([bin_dir / exe], env=env, capture_output=True, text=True, timeout=60)
        assert usage.returncode == 1 and f"usage: {exe} MODEL.xml" in usage.stderr, usage.stderr
    z_c = run([bin_dir / "consumer_c", model], env=env).stdout.split()
    z_cxx = run([bin_dir / "consumer_cxx", model], env=env).stdout.split()
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
    # The installed runner, like the consumers, loads MuJoCo from the prefix, not
    # from the build tree or the Python environment.
    runner = prefix / "bin" / "mjcenic-run"
    for binary in [runner] + sorted(bin_dir.iterdir()):
        _loaded_from(binary, prefix)
    out = run([runner, model, "--duration", "0.2", "--json", tmp_path / "r.json"], env=env,
              cwd=tmp_path)
    assert "finite" in (tmp_path / "r.json").read_text(), out.stdout


def test_readme_consumer_builds_verbatim_and_outlives_its_build_tree(prefix, tmp_path):
    """The README's my_app (CMakeLists.txt and my_app.cc exactly as printed, no C++ standard set
    by the consumer) and its command lines, as printed: install (the one docs/c-api.md's lines
    ran), configure and build, run on scene.xml, and the installed mjcenic-run. The executable
    and the installed mjcenic-run run with their build trees deleted, loading only from the
    prefix."""
    program, cmake_lists = readme_consumer()
    assert "CMAKE_CXX_STANDARD" not in cmake_lists and "cxx_std" not in cmake_lists
    src = tmp_path / "my_app"
    src.mkdir()
    (src / "CMakeLists.txt").write_text(cmake_lists)
    (src / "my_app.cc").write_text(program)
    (tmp_path / "scene.xml").write_text(FALLING_SPHERE_XML)
    lines = doc_lines(README_RUNNER)
    assert len(lines) == 4 and lines[0] in doc_lines(C_API_RUNNER), lines  # the prefix fixture's
    env = {"PATH": "/usr/bin:/bin"}
    doc_shell(lines[1], prefix, env=env, cwd=tmp_path)   # cmake -S my_app ... && cmake --build
    out = doc_shell(lines[2], prefix, env=env, cwd=tmp_path).stdout   # my_app/build/my_app
    m = re.fullmatch(r"t = ([0-9.]+) s, qpos\[2\] = ([0-9.-]+), ([0-9]+) steps\n", out)
    assert m, out
    # One second: the sphere (radius 0.1) fell 1 m - 0.1 m in 0.43 s and rests on the plane.
    assert 1.0 <= float(m.group(1)) <= 1.0021  # the loop ends on the first step past 1 s
    assert float(m.group(2)) == pytest.approx(0.1, abs=5e-3)
    assert int(m.group(3)) > 0
    out = doc_shell(lines[3], prefix, env=env, cwd=tmp_path).stdout   # the installed runner
    assert "simulated 2.000 s" in out, out
    exe = tmp_path / "my_app_bin"
    shutil.copy2(src / "build" / "my_app", exe)
    shutil.rmtree(src / "build")
    assert run([exe, "scene.xml"], env=env, cwd=tmp_path).stdout == m.group(0)  # same steps
    usage = subprocess.run([exe], env=env, capture_output=True, text=True, timeout=60)
    assert usage.returncode == 1 and "usage: my_app MODEL.xml" in usage.stderr
    runner = prefix / "bin" / "mjcenic-run"
    for binary in (exe, runner, prefix / "lib" / "libmjcenic.so"):
        _loaded_from(binary, prefix)
        _no_build_tree(binary)
    run([runner, "scene.xml", "--duration", "0.5", "--json", tmp_path / "r.json"], env=env,
        cwd=tmp_path)
    assert "finite" in (tmp_path / "r.json").read_text()


def test_config_refuses_another_mujoco_naming_both_versions(prefix, tmp_path):
    """A project whose mujoco::mujoco is another release: find_package(mjcenic) fails with one
    readable sentence (no list separators), naming both versions."""
    (tmp_path / "CMakeLists.txt").write_text(
        "cmake_minimum_required(VERSION 3.20)\nproject(other LANGUAGES C)\n"
        "add_library(mujoco::mujoco INTERFACE IMPORTED)\nset(mujoco_VERSION 9.9.9)\n"
        "find_package(mjcenic 0.1 CONFIG REQUIRED)\n")
    proc = subprocess.run([shutil.which("cmake"), "-S", tmp_path, "-B", tmp_path / "build",
                           f"-DCMAKE_PREFIX_PATH={prefix}"], capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode != 0
    reason = " ".join(proc.stderr.split()).split("Reason given by package:", 1)[1]
    assert (f"mjcenic was built against MuJoCo {mujoco.__version__}, but this project's "
            "mujoco::mujoco is MuJoCo 9.9.9") in reason, reason
    assert ";" not in reason, reason

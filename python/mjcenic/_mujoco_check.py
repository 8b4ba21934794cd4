"""Import-time check that the loaded MuJoCo is the one mjcenic was compiled against.

mjcenic's extension shares mjModel/mjData with MuJoCo and links libmujoco by its
full-version soname, so any other MuJoCo release is ABI-incompatible: refuse with
the exact command that rebuilds mjcenic against the installed MuJoCo."""
import os
import shlex
import sys


def rebuild_command(build_kind, source_dir, build_dir):
    """A shell command that rebuilds mjcenic against the MuJoCo now installed."""
    src = shlex.quote(source_dir) if os.path.isdir(source_dir) else "<path to the mjcenic source>"
    py = shlex.quote(sys.executable)
    if build_kind == "cmake":  # reconfigure for this interpreter's mujoco, then build
        build = shlex.quote(build_dir)
        return f"cmake -S {src} -B {build} -DPython3_EXECUTABLE={py} && cmake --build {build}"
    # The backend compiles against the mujoco installed in this environment.
    return f"{py} -m pip install --force-reinstall --no-deps {src}"


def check(mujoco_module, built_for, build_kind, source_dir, build_dir):
    if mujoco_module.__version__ == built_for:
        return
    raise ImportError(
        f"mjcenic was compiled against MuJoCo {built_for} but MuJoCo "
        f"{mujoco_module.__version__} is installed (MuJoCo releases are not ABI-compatible). "
        f"Rebuild mjcenic against it:\n    "
        f"{rebuild_command(build_kind, source_dir, build_dir)}\n"
        f"or go back to the MuJoCo it was built for:  pip install mujoco=={built_for}")

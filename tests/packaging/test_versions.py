"""mjcenic.__version__, the --version of both CLIs, and the import-time MuJoCo ABI check."""
import re
import subprocess
import sys
import types

import mujoco
import pytest

from pkg_helpers import BUILD, ROOT, run

sys.path.insert(0, str(BUILD / "python"))
import mjcenic  # noqa: E402
from mjcenic import _mujoco_check  # noqa: E402

VERSION = re.search(r"project\(mjcenic VERSION ([0-9.]+)", (ROOT / "CMakeLists.txt").read_text())[1]


def test_python_version_attributes():
    assert mjcenic.__version__ == VERSION
    assert mjcenic.BUILT_FOR_MUJOCO == mujoco.__version__


def test_cli_versions_name_mjcenic_and_mujoco():
    expect = f"{VERSION} (MuJoCo {mujoco.__version__}, built against {mujoco.__version__})"
    out = run([BUILD / "mjcenic-run", "--version"]).stdout.strip()
    assert out == f"mjcenic-run {expect}"
    env = {"PYTHONPATH": str(BUILD / "python"), "PATH": "/usr/bin:/bin"}
    out = run([sys.executable, "-m", "mjcenic", "--version"], env=env).stdout.strip()
    assert out == f"mjcenic {expect}"


def test_other_mujoco_is_refused_with_a_rebuild_command_that_works():
    other = types.SimpleNamespace(__version__="9.9.9")
    with pytest.raises(ImportError) as e:
        _mujoco_check.check(other, "3.12.0", "cmake", str(ROOT), str(BUILD))
    msg = str(e.value)
    assert "compiled against MuJoCo 3.12.0 but MuJoCo 9.9.9 is installed" in msg
    command = msg.splitlines()[1].strip()
    assert command == (f"cmake -S {ROOT} -B {BUILD} -DPython3_EXECUTABLE={sys.executable} && "
                       f"cmake --build {BUILD}")
    # The command reconfigures and rebuilds this tree (here: nothing to recompile).
    proc = subprocess.run(command, shell=True, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    # pip installs: reinstall from the recorded source tree, against the installed mujoco.
    with pytest.raises(ImportError) as e:
        _mujoco_check.check(other, "3.12.0", "pip", str(ROOT), "/nonexistent")
    assert f"-m pip install --force-reinstall --no-deps {ROOT}" in str(e.value)
    _mujoco_check.check(types.SimpleNamespace(__version__="3.12.0"), "3.12.0", "pip", "", "")

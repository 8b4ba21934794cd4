"""`pip install .` into a fresh virtual environment, then `import mjcenic`."""
import os
import subprocess
import sys

import pytest

from conftest import ROOT


@pytest.mark.skipif(os.environ.get("MJCENIC_SKIP_PIP_TEST") == "1",
                    reason="MJCENIC_SKIP_PIP_TEST=1")
def test_pip_install_in_fresh_venv(tmp_path):
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    py = venv / "bin" / "python"
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "MJCENIC_BUILD")}
    proc = subprocess.run([str(py), "-m", "pip", "install", "-q", str(ROOT)],
                          capture_output=True, text=True, env=env, timeout=1800)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    code = ("import mujoco, mjcenic; m = mujoco.MjModel.from_xml_string("
            "'<mujoco><worldbody><geom type=\"plane\" size=\"1 1 .1\"/><body pos=\"0 0 .5\">"
            "<freejoint/><geom size=\".1\"/></body></worldbody></mujoco>'); d = mujoco.MjData(m); "
            "s = mjcenic.Stepper(m, mode='cenic'); s.advance_to(0.5, d); "
            "print(mjcenic.__file__, d.time, s.stats['steps'])")
    proc = subprocess.run([str(py), "-c", code], capture_output=True, text=True, env=env,
                          cwd=tmp_path, timeout=300)
    assert proc.returncode == 0, proc.stderr
    path, t, steps = proc.stdout.split()
    assert str(venv) in path and float(t) == 0.5 and int(steps) > 0
    proc = subprocess.run([str(venv / "bin" / "mjcenic"), "--help"], capture_output=True,
                          text=True, env=env, timeout=120)
    assert proc.returncode == 0 and "compare" in proc.stdout

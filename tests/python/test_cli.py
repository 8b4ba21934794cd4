"""mjcenic-run: JSON fields, error handling on bad input."""
import math

from conftest import ROOT

REQUIRED = ["nq", "nv", "mode", "sim_time", "wall_time", "steps", "newton_iterations",
            "max_penetration", "finite", "final_qpos", "warnings"]


def test_json_has_required_fields(cli):
    _, r, _, _ = cli(ROOT / "models/sphere_plane.xml", "--duration", "0.2", "--keyframe", "drop",
                     "--compare-mjstep", "--mode", "fixed")
    for k in REQUIRED + ["mjstep_wall_time", "mjstep_max_penetration"]:
        assert k in r, k
    assert r["nq"] == 7 and r["nv"] == 6 and r["mode"] == "fixed"
    assert r["steps"] == 200 and abs(r["sim_time"] - 0.2) < 1e-12
    assert r["finite"] is True and len(r["final_qpos"]) == 7
    # Free fall from z = 1 for 0.2 s: z = 1 - g t²/2 (symplectic Euler error O(h)).
    assert abs(r["final_qpos"][2] - (1 - 0.5 * 9.81 * 0.2 ** 2)) < 2e-3


def test_default_mode_is_error_controlled(cli):
    _, r, _, _ = cli(ROOT / "models/sphere_plane.xml", "--duration", "0.5", "--keyframe", "drop")
    assert r["mode"] == "cenic" and r["accuracy"] == 1e-3
    # Free flight: error-controlled steps grow beyond opt.timestep (1 ms); 50 ms chunks.
    assert r["h_max"] > 5e-3 and r["steps"] < 200
    assert r["solves"] >= 3 * r["steps"]


def test_bad_mode_and_accuracy_rejected(cli):
    code, _, _, err = cli(ROOT / "models/sphere_plane.xml", "--mode", "rk4", check=False)
    assert code != 0 and "--mode" in err
    code, _, _, err = cli(ROOT / "models/sphere_plane.xml", "--accuracy", "-1", check=False)
    assert code != 0 and "--accuracy" in err


def test_keyframe_selection(cli):
    _, r, _, _ = cli(ROOT / "models/sphere_plane.xml", "--duration", "0", "--keyframe", "drop")
    assert math.isclose(r["final_qpos"][2], 1.0)
    _, r, _, _ = cli(ROOT / "models/sphere_plane.xml", "--duration", "0", "--no-keyframe")
    assert r["keyframe"] is None


def test_missing_file_fails_with_mujoco_message(cli):
    code, r, out, err = cli(ROOT / "models/does_not_exist.xml", check=False)
    assert code != 0 and r is None
    assert "could not load" in err and "does_not_exist" in err


def test_invalid_mjcf_fails_with_mujoco_message(cli, tmp_path):
    bad = tmp_path / "bad.xml"
    bad.write_text("<mujoco><worldbody><geom type='sphere' size='-1'/><body></mujoco>")
    code, r, out, err = cli(bad, check=False)
    assert code != 0 and r is None
    assert "could not load" in err and len(err.strip()) > len("mjcenic-run: could not load")


def test_unknown_keyframe_and_option(cli):
    code, _, _, err = cli(ROOT / "models/sphere_plane.xml", "--keyframe", "nope", check=False)
    assert code != 0 and "nope" in err
    code, _, _, err = cli(ROOT / "models/sphere_plane.xml", "--frobnicate", check=False)
    assert code != 0 and "frobnicate" in err


def test_chunk_step_calls_step_once_per_timestep(cli):
    # --chunk step: the mj_step-signature Step() per opt.timestep (1 ms); the run
    # ends on 0.2 s exactly. With dense_output=false (pinned: this checks the
    # capped semantics) every call lands on its target, so no internal step is
    # longer than 1 ms; with dense output (the default, docs/python.md "Outputs inside a
    # step") the steps are not capped by the calls.
    _, r, _, _ = cli(ROOT / "models/sphere_plane.xml", "--duration", "0.2", "--keyframe", "drop",
                     "--chunk", "step", "--option", "dense_output=false")
    assert r["mode"] == "cenic" and r["h_max"] <= 1e-3 * (1 + 1e-12)
    assert abs(r["sim_time"] - 0.2) < 1e-12 and r["steps"] >= 200
    _, r, _, _ = cli(ROOT / "models/sphere_plane.xml", "--duration", "0.2", "--keyframe", "drop",
                     "--chunk", "step")
    assert r["h_max"] > 2e-3 and r["steps"] < 100
    assert abs(r["sim_time"] - 0.2) < 1e-12
    # A numeric chunk: advance_to multiples of it; free flight takes long steps.
    _, r, _, _ = cli(ROOT / "models/sphere_plane.xml", "--duration", "0.2", "--keyframe", "drop",
                     "--chunk", "0.1")
    assert r["h_max"] > 2e-3 and abs(r["sim_time"] - 0.2) < 1e-12  # > opt.timestep
    for bad in ("0", "-1", "steps", "nan"):
        code, _, _, err = cli(ROOT / "models/sphere_plane.xml", "--chunk", bad, check=False)
        assert code != 0 and "--chunk" in err, bad


def test_option_flag_sets_stepper_options(cli):
    # The same keys as the plugin config and Python: fixed mode through --option.
    _, r, _, _ = cli(ROOT / "models/sphere_plane.xml", "--duration", "0.1", "--keyframe", "drop",
                     "--option", "mode=fixed", "--option", "linear_solver=islands")
    assert r["mode"] == "fixed" and r["steps"] == 100
    for bad, word in (("accuracy=-1", "accuracy"), ("no_such_key=1", "no_such_key"),
                      ("mode", "KEY=VALUE"), ("linear_solver=qr", "linear_solver")):
        code, _, _, err = cli(ROOT / "models/sphere_plane.xml", "--option", bad, check=False)
        assert code != 0 and word in err, (bad, err)


def test_ccd_flags_set_the_collider_budget_for_both_runs(cli):
    _, r, _, _ = cli(ROOT / "models/sphere_plane.xml", "--duration", "0.05", "--keyframe", "drop",
                     "--compare-mjstep")
    assert r["ccd_iterations"] == 35 and r["ccd_tolerance"] == 1e-6  # MuJoCo's defaults
    _, r, _, _ = cli(ROOT / "models/sphere_plane.xml", "--duration", "0.05", "--keyframe", "drop",
                     "--compare-mjstep", "--ccd-iterations", "200", "--ccd-tolerance", "1e-10")
    assert r["ccd_iterations"] == 200 and r["ccd_tolerance"] == 1e-10
    for flag, bad in (("--ccd-iterations", "0"), ("--ccd-iterations", "2.5"),
                      ("--ccd-tolerance", "-1"), ("--ccd-tolerance", "nan")):
        code, _, _, err = cli(ROOT / "models/sphere_plane.xml", flag, bad, check=False)
        assert code != 0 and flag in err, (flag, bad, err)


NAMED_JOINTS = """<mujoco>
  <worldbody>
    <body name="arm" pos="0 0 1">
      <joint name="shoulder" type="hinge" axis="0 1 0"/>
      <geom type="capsule" fromto="0 0 0 0.3 0 0" size="0.03"/>
      <body pos="0.3 0 0">
        <joint type="slide" axis="1 0 0"/>
        <geom type="sphere" size="0.05"/>
      </body>
    </body>
    <body name="puck" pos="1 0 1">
      <freejoint name="puck"/>
      <geom type="box" size="0.05 0.05 0.05"/>
    </body>
    <body pos="-1 0 1">
      <joint name="knob" type="ball"/>
      <geom type="sphere" size="0.05" pos="0 0 -0.1"/>
    </body>
  </worldbody>
  <actuator>
    <motor name="drive" joint="shoulder"/>
    <general joint="knob" gear="1 0 0" dyntype="filter" dynprm="0.1"/>
  </actuator>
</mujoco>"""


def test_python_run_names_csv_and_npz_columns_after_joints(tmp_path):
    """`mjcenic run --out` columns: MuJoCo's joint and actuator names, free and ball
    joints per component, unnamed ones joint<i> / actuator<i>."""
    import subprocess
    import sys

    import numpy as np
    from conftest import python_env
    xml = tmp_path / "m.xml"
    xml.write_text(NAMED_JOINTS)
    run = lambda out: subprocess.run(  # noqa: E731
        [sys.executable, "-m", "mjcenic", "run", str(xml), "--duration", "0.02",
         "--out", str(out)], capture_output=True, text=True, env=python_env(), timeout=120)
    proc = run(tmp_path / "t.csv")
    assert proc.returncode == 0, proc.stderr
    header = (tmp_path / "t.csv").read_text().splitlines()[0].split(",")
    assert header == [
        "time", "step_size", "qpos:shoulder", "qpos:joint1",
        "qpos:puck.x", "qpos:puck.y", "qpos:puck.z",
        "qpos:puck.qw", "qpos:puck.qx", "qpos:puck.qy", "qpos:puck.qz",
        "qpos:knob.qw", "qpos:knob.qx", "qpos:knob.qy", "qpos:knob.qz",
        "qvel:shoulder", "qvel:joint1",
        "qvel:puck.vx", "qvel:puck.vy", "qvel:puck.vz", "qvel:puck.wx", "qvel:puck.wy",
        "qvel:puck.wz", "qvel:knob.wx", "qvel:knob.wy", "qvel:knob.wz",
        "act:actuator1", "ctrl:drive", "ctrl:actuator1"]
    table = np.loadtxt(tmp_path / "t.csv", delimiter=",", skiprows=1)
    assert table.shape[1] == len(header)
    proc = run(tmp_path / "t.npz")
    assert proc.returncode == 0, proc.stderr
    z = np.load(tmp_path / "t.npz")  # no pickle needed for the names
    for key in ("qpos", "qvel", "act", "ctrl"):
        names = [h.split(":", 1)[1] for h in header if h.startswith(key + ":")]
        assert list(z[f"{key}_names"]) == names and z[key].shape[1] == len(names)
    np.testing.assert_array_equal(table[:, header.index("qpos:puck.z")], z["qpos"][:, 4])


def _deps_sandbox(tmp_path):
    """PATH stubs for scripts/install_deps.sh: every Debian package missing, running as
    root, apt-get and pip recording their calls instead of installing."""
    import os
    import stat
    import sys
    bin_ = tmp_path / "bin"
    bin_.mkdir()
    log = tmp_path / "apt.log"
    for name, body in (("dpkg-query", "exit 1"), ("id", "echo 0"),
                       ("apt-get", f'echo "$*" >> "{log}"'),
                       ("python", f'if [ "$1 $2" = "-m pip" ]; then echo "pip $*" >> "{log}"; '
                                  f'else exec "{sys.executable}" "$@"; fi')):
        f = bin_ / name
        f.write_text(f"#!/bin/sh\n{body}\n")
        f.chmod(f.stat().st_mode | stat.S_IEXEC)
    env = {k: v for k, v in os.environ.items() if k not in ("CI", "MJCENIC_INSTALL_DEPS")}
    env["PATH"] = f"{bin_}{os.pathsep}{env['PATH']}"
    env["PYTHON"] = str(bin_ / "python")
    return env, log


def test_install_deps_asks_or_stops_outside_ci(tmp_path):
    """make deps (make demo) says what it installs and asks at a terminal; without one
    it stops unless MJCENIC_INSTALL_DEPS=1; under CI=true it installs as before."""
    import os
    import pty
    import subprocess
    script = [str(ROOT / "scripts/install_deps.sh")]
    env, log = _deps_sandbox(tmp_path)
    proc = subprocess.run(script, env=env, stdin=subprocess.DEVNULL, capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 1 and not log.exists()
    assert "Debian packages: libeigen3-dev libsuitesparse-dev" in proc.stdout
    assert "apt-get install -y libeigen3-dev" in proc.stdout
    assert "MJCENIC_INSTALL_DEPS=1" in proc.stderr
    # at a terminal: asks; "n" installs nothing, "y" installs
    for answer, installed in (("n", False), ("y", True)):
        master, slave = pty.openpty()
        os.write(master, (answer + "\n").encode())
        proc = subprocess.run(script, env=env, stdin=slave, capture_output=True, text=True,
                              timeout=120)
        os.close(slave)
        os.close(master)
        assert "Install them now? [y/N]" in proc.stdout or "[y/N]" in proc.stderr
        assert (proc.returncode == 0) == installed and log.exists() == installed, proc
    log.unlink()
    for extra in ({"MJCENIC_INSTALL_DEPS": "1"}, {"CI": "true"}):
        proc = subprocess.run(script, env={**env, **extra}, stdin=subprocess.DEVNULL,
                              capture_output=True, text=True, timeout=120)
        assert proc.returncode == 0, proc.stderr
        assert "install -y -qq libeigen3-dev" in log.read_text()
        log.unlink()

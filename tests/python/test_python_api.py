"""The Python package, the MJCF plugin config and the viewer."""
import json
import os
import re
import shutil
import subprocess
import sys

import mujoco
import numpy as np
import pytest

from conftest import BUILD, ROOT, SHARED_MODELS, SPHERE, python_env

import mjcenic  # noqa: E402  (conftest puts build/python on sys.path)

def plugin_xml(**config):
    cfg = "".join(f'<config key="{k}" value="{v}"/>' for k, v in config.items())
    return SPHERE.format(ext='<extension><plugin plugin="mjcenic"><instance name="cenic">'
                             f'{cfg}</instance></plugin></extension>')


def write(tmp_path, text, name="m.xml"):
    p = tmp_path / name
    p.write_text(text)
    return p


def test_python_and_cpp_trajectories_are_bit_identical(cli):
    path = ROOT / "models/cylinder_table.xml"
    _, r, _, _ = cli(path, "--duration", "0.6", "--mode", "cenic", "--accuracy", "1e-3")
    m = mujoco.MjModel.from_xml_path(str(path))
    d = mujoco.MjData(m)
    mujoco.mj_resetDataKeyframe(m, d, 0)
    sim = mjcenic.Stepper(m, mode="cenic", accuracy=1e-3)
    for i in range(12):  # the CLI advances error-controlled runs in 50 ms chunks
        sim.advance_to(min(0.6, (i + 1) * 0.05), d)
    assert sim.stats["steps"] == r["steps"]
    assert list(d.qpos) == r["final_qpos"]  # bitwise (17 significant digits round-trip)


def test_stepper_repr_names_mode_accuracy_sizes_and_changed_options(tmp_path):
    m = mujoco.MjModel.from_xml_path(str(ROOT / "models/tumbling_box.xml"))
    assert repr(mjcenic.Stepper(m)) == ("<mjcenic.Stepper mode='cenic' accuracy=0.001 nq=7 "
                                        "nv=6 non_default_options=0>")
    s = mjcenic.Stepper(m, mode="fixed", accuracy=1e-4, dense_output=False)
    assert repr(s) == ("<mjcenic.Stepper mode='fixed' accuracy=0.0001 nq=7 nv=6 "
                       "non_default_options=3>")
    assert s.non_default_options() == {"mode": "fixed", "accuracy": 1e-4,
                                       "dense_output": False}
    # the model's plugin <config> counts too: it is what the stepper runs with
    cfg = mjcenic.Stepper(mujoco.MjModel.from_xml_path(
        str(write(tmp_path, plugin_xml(accuracy="1e-2")))))
    assert "accuracy=0.01" in repr(cfg) and "nq=7 nv=6 non_default_options=1>" in repr(cfg)
    assert mjcenic.Stepper(m, accuracy="0.001").non_default_options() == {}


def test_plugin_config_changes_behaviour(tmp_path):
    steps = {}
    for acc in ("1e-1", "1e-4"):
        m = mjcenic.load_model(write(tmp_path, plugin_xml(mode="cenic", accuracy=acc)))
        d = mujoco.MjData(m)
        sim = mjcenic.Stepper(m)
        assert sim.options["mode"] == "cenic" and sim.options["accuracy"] == float(acc)
        sim.advance_to(0.6, d)  # free fall then impact
        steps[acc] = sim.stats["steps"]
    assert steps["1e-4"] > 3 * steps["1e-1"], steps
    # Keyword arguments override the MJCF config.
    m = mjcenic.load_model(write(tmp_path, plugin_xml(accuracy="1e-1")))
    assert mjcenic.Stepper(m, accuracy=1e-3).options["accuracy"] == 1e-3


def test_plugin_bad_value_names_key(tmp_path):
    with pytest.raises(ValueError, match="stiction_tolerance"):
        mjcenic.load_model(write(tmp_path, plugin_xml(stiction_tolerance="-3")))
    with pytest.raises(ValueError, match="'mode'"):
        mjcenic.load_model(write(tmp_path, plugin_xml(mode="rk4")))


def test_plugin_unknown_key_names_key(tmp_path):
    with pytest.raises(Exception, match="frobnicate"):
        mjcenic.load_model(write(tmp_path, plugin_xml(frobnicate="1")))


def test_model_without_plugin_uses_defaults(tmp_path):
    m = mjcenic.load_model(write(tmp_path, SPHERE.format(ext="")))
    sim = mjcenic.Stepper(m)
    ref = mjcenic.Stepper(mujoco.MjModel.from_xml_string(SPHERE.format(ext="")))
    assert sim.options == ref.options
    assert sim.options["accuracy"] == 1e-3


def test_mjcenic_step_c_function_uses_plugin_stepper(tmp_path):
    import ctypes
    lib = ctypes.CDLL(str(BUILD / "libmjcenic.so"))
    lib.mjcenic_step.argtypes = [ctypes.c_void_p, ctypes.c_void_p]
    lib.mjcenic_forget.argtypes = [ctypes.c_void_p]
    m = mjcenic.load_model(write(tmp_path, plugin_xml(mode="cenic", accuracy="1e-2")))
    d = mujoco.MjData(m)
    for _ in range(100):
        lib.mjcenic_step(m._address, d._address)
    assert d.time == pytest.approx(100 * m.opt.timestep)
    # Same trajectory as the Python stepper with the same options.
    d2 = mujoco.MjData(m)
    mjcenic.Stepper(m).step(d2, nstep=100)
    np.testing.assert_array_equal(d.qpos, d2.qpos)
    lib.mjcenic_forget(d._address)


def test_bad_inputs_raise():
    m = mujoco.MjModel.from_xml_string(SPHERE.format(ext=""))
    d = mujoco.MjData(m)
    sim = mjcenic.Stepper(m)
    d.qvel[2] = np.nan
    with pytest.raises(ValueError, match="qvel"):
        sim.step(d)
    with pytest.raises(TypeError):
        sim.step("not data")
    with pytest.raises(ValueError):
        mjcenic.Stepper(m, accuracy=0)
    other = mujoco.MjModel.from_xml_path(str(ROOT / "models/pendulum.xml"))
    with pytest.raises(ValueError, match="not made for"):
        sim.step(mujoco.MjData(other))


@pytest.mark.shared_models
def test_viewer_renders_nonblank_frame_of_menagerie_robot(tmp_path):
    out = tmp_path / "frame.png"
    env = python_env()
    env.setdefault("MUJOCO_GL", "osmesa")
    proc = subprocess.run([sys.executable, "-m", "mjcenic", "view",
                           str(SHARED_MODELS / "menagerie/franka_emika_panda/scene.xml"),
                           "--headless", str(out), "--seconds", "0.1"],
                          capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr
    import matplotlib.image
    img = matplotlib.image.imread(out)[..., :3]
    assert img.shape[0] == 480 and img.shape[1] == 640
    assert img.std() > 0.05  # not blank
    assert len(np.unique((img * 255).astype(np.uint8).reshape(-1, 3), axis=0)) > 100


@pytest.mark.skipif(shutil.which("Xvfb") is None, reason="Xvfb not installed")
@pytest.mark.shared_models
def test_passive_viewer_runs_under_xvfb(tmp_path):
    disp = ":%d" % (50 + os.getpid() % 400)
    xvfb = subprocess.Popen(["Xvfb", disp, "-screen", "0", "800x600x24"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        env = python_env()
        env["DISPLAY"] = disp
        env.pop("MUJOCO_GL", None)
        proc = subprocess.run([sys.executable, "-m", "mjcenic", "view",
                               str(SHARED_MODELS / "menagerie/kuka_iiwa_14/scene.xml"),
                               "--duration", "0.2"],
                              capture_output=True, text=True, env=env, timeout=120)
    finally:
        xvfb.terminate()
        xvfb.wait()
    assert proc.returncode == 0, proc.stderr
    assert "viewer closed at t = 0.2" in proc.stdout


def test_run_command_writes_trajectory(tmp_path):
    out = tmp_path / "traj.npz"
    proc = subprocess.run([sys.executable, "-m", "mjcenic", "run", str(ROOT / "models/sphere_plane.xml"),
                           "--keyframe", "drop", "--duration", "0.3", "--out", str(out)],
                          capture_output=True, text=True, env=python_env(), timeout=120)
    assert proc.returncode == 0, proc.stderr
    z = np.load(out)
    assert z["qpos"].shape == (31, 7) and z["time"][-1] == pytest.approx(0.3)
    assert np.all(z["step_size"][1:] > 0)
    # free fall: z(t) = 1 - g t^2 / 2 within the accuracy-controlled error
    assert abs(z["qpos"][-1, 2] - (1 - 0.5 * 9.81 * 0.09)) < 5e-3
    assert z["qvel"].shape == (31, 6) and z["ctrl"].shape[0] == 31 and z["act"].shape[0] == 31
    # velocity of free fall (before the floor), within the accuracy's scale
    assert z["qvel"][10, 2] == pytest.approx(-9.81 * z["time"][10], abs=0.05)
    csv = tmp_path / "traj.csv"
    proc = subprocess.run([sys.executable, "-m", "mjcenic", "run", str(ROOT / "models/sphere_plane.xml"),
                           "--keyframe", "drop", "--duration", "0.3", "--out", str(csv)],
                          capture_output=True, text=True, env=python_env(), timeout=120)
    assert proc.returncode == 0, proc.stderr
    header = csv.read_text().splitlines()[0].split(",")
    assert header[:3] == ["time", "step_size", "qpos:ball.x"] and "qvel:ball.wz" in header
    assert list(z["qpos_names"])[2] == "ball.z"
    table = np.loadtxt(csv, delimiter=",", skiprows=1)
    np.testing.assert_allclose(table[:, header.index("qpos:ball.z")], z["qpos"][:, 2],
                               atol=1e-12)
    # a bad --out is refused before any work
    proc = subprocess.run([sys.executable, "-m", "mjcenic", "run", str(ROOT / "models/sphere_plane.xml"),
                           "--out", str(tmp_path / "traj.txt")],
                          capture_output=True, text=True, env=python_env(), timeout=120)
    assert proc.returncode == 2 and "--out must end in .npz or .csv" in proc.stderr
    proc = subprocess.run([sys.executable, "-m", "mjcenic", "run", str(ROOT / "models/nope.xml")],
                          capture_output=True, text=True, env=python_env(), timeout=120)
    assert proc.returncode != 0 and "could not load" in proc.stderr


def test_mujoco_range_is_declared_once_and_the_build_is_in_it():
    """MUJOCO_VERSION holds the supported range; pyproject.toml names no MuJoCo
    version (the build backend reads the file); this build is in the range."""
    keys = dict(l.split("=", 1) for l in (ROOT / "MUJOCO_VERSION").read_text().splitlines()
                if l and not l.startswith("#"))
    v = lambda s: tuple(int(x) for x in s.split(".")[:3])  # noqa: E731
    assert v(keys["minimum"]) <= v(keys["default"]) < v(keys["below"])
    assert not re.search(r"mujoco\s*[=<>~!]=?\s*\d", (ROOT / "pyproject.toml").read_text())
    assert mjcenic.BUILT_FOR_MUJOCO == mujoco.__version__
    assert v(keys["minimum"]) <= v(mujoco.__version__) < v(keys["below"])
    assert re.fullmatch(r"\d+\.\d+\.\d+", mjcenic.__version__)


def test_plugin_library_found_by_mujoco_plugin_directory_loading(tmp_path):
    """Without importing mjcenic: MuJoCo's plugin-directory loader registers it."""
    plugdir = tmp_path / "plugins"
    plugdir.mkdir()
    shutil.copy(BUILD / "libmjcenic.so", plugdir / "libmjcenic.so")
    xml = write(tmp_path, plugin_xml(mode="cenic", accuracy="1e-2"))
    code = (f"import mujoco; mujoco.mj_loadAllPluginLibraries({str(plugdir)!r}); "
            f"m = mujoco.MjModel.from_xml_path({str(xml)!r}); d = mujoco.MjData(m); "
            "print('nplugin', m.nplugin)")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "nplugin 1" in proc.stdout


@pytest.mark.shared_models
def test_python_controller_implicit_vs_explicit():
    """A stiff Python inverse-dynamics controller: implicit needs far fewer steps."""
    m = mujoco.MjModel.from_xml_path(str(SHARED_MODELS / "menagerie/franka_emika_panda/scene.xml"))
    m.opt.disableflags |= mujoco.mjtDisableBit.mjDSBL_ACTUATION
    kp, kd = 1e6, 2e3
    result = {}
    for mode in ("implicit", "explicit"):
        d = mjcenic.make_data(m)
        qd = d.qpos.copy()
        d.qpos[:7] += 0.1

        def controller(model, data):
            a = kp * (qd - data.qpos) - kd * data.qvel
            tau = np.zeros(model.nv)
            mujoco.mj_mulM(model, data, tau, a)
            data.qfrc_applied[:] = tau + data.qfrc_bias

        sim = mjcenic.Stepper(m, controller=controller, controller_mode=mode, accuracy=1e-3)
        sim.advance_to(0.3, d)
        result[mode] = (sim.stats["steps"], np.abs(d.qpos - qd).max(), sim.stats["controller_calls"])
    print(result)
    assert result["implicit"][1] < 1e-3 and result["explicit"][1] < 1e-3
    assert result["explicit"][0] >= 5 * result["implicit"][0]
    assert result["implicit"][2] > result["implicit"][0]  # finite differences happened


def test_python_controller_exception_is_raised():
    m = mujoco.MjModel.from_xml_string(SPHERE.format(ext=""))
    d = mujoco.MjData(m)

    def broken(model, data):
        raise KeyError("boom")

    sim = mjcenic.Stepper(m, controller=broken)
    t0 = d.time
    with pytest.raises(RuntimeError, match="boom"):
        sim.step(d)
    assert d.time == t0

"""The `mjcenic` command (python -m mjcenic): argument tree, precedence of the
MJCF plugin config, validation before work, run outputs, step statistics,
install-plugin, the paced viewer (fake clock, offscreen, Xvfb), compare plots."""
import json
import os
import shutil
import subprocess
import sys

import mujoco
import numpy as np
import pytest

import mjcenic
from conftest import BUILD, ROOT, SHARED_MODELS, SPHERE, python_env


def mj(*args, timeout=300, env=None, cwd=None):
    return subprocess.run([sys.executable, "-m", "mjcenic", *map(str, args)],
                          capture_output=True, text=True, timeout=timeout,
                          env=env or python_env(), cwd=cwd)


def plugin_sphere(tmp_path, **config):
    cfg = "".join(f'<config key="{k}" value="{v}"/>' for k, v in config.items())
    p = tmp_path / "plugin_sphere.xml"
    p.write_text(SPHERE.format(ext='<extension><plugin plugin="mjcenic"><instance name="c">'
                                   f'{cfg}</instance></plugin></extension>'))
    return p


# ----------------------------------------------------------------------------- tree

def test_one_help_tree_version_and_no_abbreviations(tmp_path):
    top = mj("--help")
    assert top.returncode == 0
    for cmd in ("run", "view", "compare", "install-plugin"):
        assert cmd in top.stdout
        sub = mj(cmd, "--help")
        assert sub.returncode == 0 and f"mjcenic {cmd}" in sub.stdout, cmd
    v = mj("--version")
    assert v.returncode == 0
    assert v.stdout.strip() == (f"mjcenic {mjcenic.__version__} (MuJoCo {mujoco.__version__}, "
                                f"built against {mjcenic.BUILT_FOR_MUJOCO})")
    # a prefix of a flag is an error, never the flag (--plot is not --plots)
    p = mj("compare", ROOT / "models/sphere_plane.xml", "--plot", tmp_path / "p")
    assert p.returncode == 2 and "--plot" in p.stderr and not (tmp_path / "p").exists()
    p = mj("run", ROOT / "models/sphere_plane.xml", "--dur", "0.1")
    assert p.returncode == 2 and "--dur" in p.stderr
    assert mj().returncode == 2  # no command
    assert mj("frobnicate").returncode == 2


def test_arguments_are_checked_before_work(tmp_path):
    model = ROOT / "models/sphere_plane.xml"
    cases = [(("--duration", "-1"), "--duration"), (("--duration", "nan"), "--duration"),
             (("--sample", "0"), "--sample"), (("--accuracy", "0"), "--accuracy"),
             (("--mode", "rk4"), "--mode"), (("--option", "nope=1"), "nope"),
             (("--option", "accuracy"), "KEY=VALUE"),
             (("--out", tmp_path / "t.txt"), "--out must end in .npz or .csv"),
             (("--out", tmp_path / "no/such/dir/t.npz"), "does not exist"),
             (("--json", tmp_path / "no/such/dir/r.json"), "does not exist"),
             (("--duration", "1e9", "--sample", "1e-3"), "samples")]
    for args, word in cases:
        p = mj("run", model, *args)
        assert p.returncode == 2 and word in p.stderr, (args, p.stderr)
        assert p.stdout == "", args  # nothing ran
    # a bad option value is the stepper's error, before any step
    p = mj("run", model, "--option", "linear_solver=qr")
    assert p.returncode == 2 and "linear_solver" in p.stderr and p.stdout == ""
    p = mj("compare", model, "--json", tmp_path)  # a directory
    assert p.returncode == 2 and "is a directory" in p.stderr
    p = mj("view", model, "--headless", tmp_path / "no/such/dir/f.png")
    assert p.returncode == 2 and "does not exist" in p.stderr


# ----------------------------------------------------------------------------- precedence

def _steps(path, *args, tmp_path, name):
    out = tmp_path / f"{name}.json"
    p = mj("run", path, "--duration", "0.5", "--json", out, *args)
    assert p.returncode == 0, p.stderr
    return json.loads(out.read_text())


def test_plugin_config_wins_unless_the_flag_is_given(tmp_path):
    """A model whose plugin says accuracy 1e-4: `mjcenic run` without --accuracy
    takes as many steps as the Python stepper at 1e-4 (not the default 1e-3);
    an explicit --accuracy 1e-3 takes as many as the stepper at 1e-3."""
    path = plugin_sphere(tmp_path, accuracy="1e-4", max_step="0.02")

    def python_steps(**opts):
        m = mjcenic.load_model(path)
        d = mjcenic.make_data(m)
        sim = mjcenic.Stepper(m, **opts)
        sim.sample(np.minimum(0.5, np.arange(1, 51) * 0.01), d)
        return sim.stats["steps"]

    n4, n3 = python_steps(accuracy=1e-4), python_steps(accuracy=1e-3)
    assert n4 > n3 * 1.5  # the two accuracies are told apart by the step count
    r = _steps(path, tmp_path=tmp_path, name="plugin")
    assert r["options"]["accuracy"] == 1e-4 and r["options"]["max_step"] == 0.02
    assert r["stats"]["steps"] == n4
    r = _steps(path, "--accuracy", "1e-3", tmp_path=tmp_path, name="flag")
    assert r["options"]["accuracy"] == 1e-3 and r["options"]["max_step"] == 0.02
    assert r["stats"]["steps"] == n3
    r = _steps(path, "--option", "accuracy=1e-3", tmp_path=tmp_path, name="opt")
    assert r["stats"]["steps"] == n3


# ----------------------------------------------------------------------------- statistics

@pytest.mark.parametrize("model,key", [("sphere_plane.xml", "drop"), ("box_stack.xml", None),
                                       ("clutter.xml", None), ("servo_arm.xml", None)])
def test_step_statistics_are_consistent(model, key):
    """h_min <= h_median <= h_max, and the accepted steps cover the simulated time:
    steps * h_min <= T <= steps * h_max."""
    m = mjcenic.load_model(ROOT / "models" / model)
    d = mjcenic.make_data(m, key)
    sim = mjcenic.Stepper(m)
    t0 = d.time
    sim.advance_to(t0 + 0.4, d)
    st = sim.stats
    assert st["steps"] > 0
    assert st["h_min"] <= st["h_median"] <= st["h_max"], st
    T = d.time - t0
    assert st["steps"] * st["h_min"] <= T * (1 + 1e-12) <= st["steps"] * st["h_max"] * (1 + 1e-9)
    # every option key is listed by Stepper.options
    assert sorted(sim.options) == sorted(mjcenic.option_keys())


def test_run_out_layout_like_mujoco_rollout(tmp_path):
    """npz: time, qpos, qvel, act, ctrl, step_size and `state` in mjSTATE_FULLPHYSICS
    layout (what mujoco.rollout returns per step), consistent with qpos/qvel."""
    out = tmp_path / "traj.npz"
    p = mj("run", ROOT / "models/servo_arm.xml", "--duration", "0.2", "--out", out)
    assert p.returncode == 0, p.stderr
    z = np.load(out)
    m = mujoco.MjModel.from_xml_path(str(ROOT / "models/servo_arm.xml"))
    n = len(z["time"])
    assert n == 21 and z["ctrl"].shape == (n, m.nu) and z["act"].shape == (n, m.na)
    spec = mujoco.mjtState.mjSTATE_FULLPHYSICS
    assert z["state"].shape == (n, mujoco.mj_stateSize(m, spec))
    d = mujoco.MjData(m)
    for i in (0, n // 2, n - 1):
        mujoco.mj_setState(m, d, z["state"][i], spec)
        assert d.time == z["time"][i]
        np.testing.assert_array_equal(d.qpos, z["qpos"][i])
        np.testing.assert_array_equal(d.qvel, z["qvel"][i])


# ----------------------------------------------------------------------------- install-plugin

def test_install_plugin_makes_stock_mujoco_load_the_model(tmp_path):
    """install-plugin --dir D puts the plugin library in D; a process that never
    imports mjcenic loads D (as `import mujoco` loads mujoco.PLUGINS_DIR) and
    compiles a model declaring the plugin, keeping its config; --uninstall
    removes it. The default target is the mujoco package's plugin directory."""
    xml = plugin_sphere(tmp_path, accuracy="1e-4")
    plugdir = tmp_path / "plugins"
    plugdir.mkdir()
    code = (f"import mujoco; mujoco.mj_loadAllPluginLibraries({str(plugdir)!r}); "
            f"m = mujoco.MjModel.from_xml_path({str(xml)!r}); d = mujoco.MjData(m); "
            "mujoco.mj_step(m, d); print('loaded', m.nplugin, "
            "'1e-4' in bytes(m.plugin_attr).decode(errors='replace'))")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    before = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            env=env, timeout=120)
    assert before.returncode != 0 and "mjcenic" in before.stderr  # "plugin not found"
    for flags in ([], ["--symlink"]):
        p = mj("install-plugin", "--dir", plugdir, *flags)
        assert p.returncode == 0, p.stderr
        assert "mj_step" in p.stdout  # says the tools still step with mj_step
        lib = plugdir / "libmjcenic.so"
        assert lib.exists() and lib.is_symlink() == bool(flags)
        after = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                               env=env, timeout=120)
        assert after.returncode == 0, after.stderr
        assert after.stdout.split() == ["loaded", "1", "True"]
    # mjcenic imported after the installed library registered the plugin: the
    # same options and the same steps as without it
    both = ("import mujoco, sys; {load}import mjcenic; "
            f"m = mjcenic.load_model({str(xml)!r}); d = mjcenic.make_data(m); "
            "s = mjcenic.Stepper(m); s.advance_to(0.3, d); "
            "print(s.options['accuracy'], s.stats['steps'], repr(d.qpos[2]))")
    runs = [subprocess.run([sys.executable, "-c", both.format(load=load)], capture_output=True,
                           text=True, env=python_env(), timeout=120)
            for load in ("", f"mujoco.mj_loadAllPluginLibraries({str(plugdir)!r}); ")]
    assert all(r.returncode == 0 for r in runs), [r.stderr for r in runs]
    assert runs[0].stdout == runs[1].stdout and runs[0].stdout.startswith("0.0001 ")
    p = mj("install-plugin", "--dir", plugdir, "--uninstall")
    assert p.returncode == 0 and not (plugdir / "libmjcenic.so").exists()
    dry = mj("install-plugin", "--dry-run")
    from mjcenic import install_plugin
    assert dry.returncode == 0
    assert str(install_plugin.default_directory() / "libmjcenic.so") in dry.stdout
    assert install_plugin.default_directory() == __import__("pathlib").Path(mujoco.PLUGINS_DIR)
    bad = mj("install-plugin", "--dir", tmp_path / "nope")
    assert bad.returncode == 2 and "no such directory" in bad.stderr


# ----------------------------------------------------------------------------- viewer

class FakeClock:
    def __init__(self):
        self.t = 100.0

    def __call__(self):
        return self.t

    def sleep(self, dt):
        self.t += dt


class FakeHandle:
    """The passive viewer's handle interface: runs `frames` frames."""

    def __init__(self, clock, frames, work=0.0):
        self.clock, self.frames, self.work = clock, frames, work
        self.texts = []

    def is_running(self):
        return self.frames > 0

    def set_texts(self, texts):
        self.texts.append(texts)

    def sync(self):
        self.frames -= 1
        self.clock.t += self.work  # rendering time


def test_viewer_paces_against_the_wall_clock_at_its_own_steps():
    """With a fake clock: simulated time follows wall time / slowdown, the
    integrator's steps on a quiet scene are much longer than opt.timestep, and
    the overlay shows both."""
    from mjcenic import viewer
    m = mjcenic.load_model(ROOT / "models/sphere_plane.xml")
    # dense_output=false pinned where the capped semantics (one step per frame)
    # is checked; {} is the default, dense output.
    capped = {"dense_output": False}
    for slowdown, opts in ((1.0, capped), (4.0, capped), (1.0, {}), (4.0, {})):
        clock = FakeClock()
        d = mjcenic.make_data(m, "rest")
        s = viewer.Session(m, d, opts, slowdown=slowdown, clock=clock)
        h = FakeHandle(clock, frames=120, work=0.004)
        viewer.run_frames(s, h, sleep=clock.sleep)
        wall = 120 / viewer.FPS
        assert d.time == pytest.approx(wall / slowdown, rel=0.03)
        v = s.values()
        assert v["pace"] == pytest.approx(1 / slowdown, rel=0.03)
        # its own steps, not opt.timestep, on the resting sphere
        frame = 1 / viewer.FPS / slowdown
        assert frame > 4 * m.opt.timestep
        if opts is capped:  # advance_to lands on every frame: one step per frame, as long as it
            assert v["steps_per_frame"] == 1
            assert v["step_size"] == pytest.approx(frame, rel=0.03)
            assert v["next_step"] > frame
        else:  # dense output: a step spans frames, up to max_step (0.1 s)
            assert v["steps_per_frame"] <= 1 and v["step_size"] > 4 * frame
            assert s.sim.stats["h_max"] == pytest.approx(0.1, rel=1e-9)
            assert v["next_step"] > frame
        left, right = h.texts[-1][2], h.texts[-1][3]
        rows = dict(zip(left.split("\n"), right.split("\n")))
        assert float(rows["step size"].split()[0]) == pytest.approx(v["step_size"], rel=0.01)
        assert rows["pace"].startswith(f"{v['pace']:.2f}x")
    # --duration ends exactly on it
    clock = FakeClock()
    d = mjcenic.make_data(m, "drop")
    s = viewer.Session(m, d, {}, clock=clock)
    viewer.run_frames(s, FakeHandle(clock, frames=10 ** 6), duration=0.3, sleep=clock.sleep)
    assert d.time == 0.3


def test_viewer_that_cannot_keep_up_slows_down_without_catch_up_bursts():
    """Each clock reading costs 5 ms of wall time (a slow machine) and mj_step is
    toggled on (1 ms steps): the frame's budget (0.8 / 60 s) stops the stepping,
    the pace drops well below real time, and the re-anchored clock never asks a
    later frame to catch up (the steps per frame stay bounded)."""
    from mjcenic import viewer

    class SlowClock(FakeClock):
        cost = 0.005

        def __call__(self):
            self.t += self.cost
            return self.t

    m = mjcenic.load_model(ROOT / "models/sphere_plane.xml")
    clock = SlowClock()
    s = viewer.Session(m, mjcenic.make_data(m, "drop"), {}, clock=clock)
    s.handle_key(viewer.KEY_TOGGLE_MJSTEP)
    per_frame = []

    class Handle(FakeHandle):
        def sync(self):
            per_frame.append(s.frame_steps)
            super().sync()

    viewer.run_frames(s, Handle(clock, frames=200), sleep=clock.sleep)
    v = s.values()
    assert v["stepper"] == "mj_step" and v["pace"] < 0.5
    assert max(per_frame) <= 4  # 0.8/60 s budget at 5 ms per step
    # the machine is fast again: the next frames advance by about a frame (1/60 s
    # = 17 steps of 1 ms), not by the 2 s of wall time the slow phase fell behind
    clock.cost = 0.0
    for _ in range(3):
        clock.sleep(1 / viewer.FPS)
        s.advance()
        assert s.frame_steps <= 40, s.frame_steps


def test_viewer_keys_do_not_clash_with_mujocos_viewer():
    """Our keys are none of the passive viewer's own shortcuts (its visualization
    and rendering flag letters, geom/site group digits, '[' ']' cameras, Esc, Tab,
    Backspace, arrows left/right, Page Up, F1-F7), and each does what it says."""
    from mjcenic import viewer
    taken = {ord(s[2].upper()) for s in mujoco.mjVISSTRING + mujoco.mjRNDSTRING if s[2]}
    taken |= {ord(c) for c in "0123456789[]"} | {256, 258, 259, 262, 263, 266}
    taken |= set(range(290, 297))  # F1..F7
    ours = [viewer.KEY_PAUSE, viewer.KEY_SLOWER, viewer.KEY_FASTER, viewer.KEY_TIGHTER,
            viewer.KEY_LOOSER, viewer.KEY_TOGGLE_MJSTEP]
    assert len(set(ours)) == len(ours) and not set(ours) & taken
    m = mjcenic.load_model(ROOT / "models/sphere_plane.xml")
    s = viewer.Session(m, mjcenic.make_data(m), {"accuracy": 1e-3})
    s.handle_key(viewer.KEY_SLOWER)
    assert s.values()["target_pace"] == 0.5
    s.handle_key(viewer.KEY_FASTER)
    s.handle_key(viewer.KEY_FASTER)
    assert s.values()["target_pace"] == 2.0
    s.handle_key(viewer.KEY_TIGHTER)
    assert s.accuracy == pytest.approx(1e-4) and s.sim.options["accuracy"] == pytest.approx(1e-4)
    s.handle_key(viewer.KEY_LOOSER)
    s.handle_key(viewer.KEY_LOOSER)
    assert s.accuracy == pytest.approx(1e-2)
    s.handle_key(viewer.KEY_TOGGLE_MJSTEP)
    assert s.values()["stepper"] == "mj_step"
    # the viewer's key_callback queues; the next frame applies it
    s.key(viewer.KEY_PAUSE)
    assert not s.paused
    t = s.d.time
    s.advance()
    assert s.paused and s.d.time == t


def _overlay(stdout):
    line = next(ln for ln in stdout.splitlines() if ln.startswith("overlay "))
    return json.loads(line[len("overlay "):])


def test_viewer_headless_offscreen_at_its_own_steps(tmp_path):
    """--headless without MUJOCO_GL picks a working backend, runs the paced loop
    and writes the frame with the overlay; the overlay's step size on a resting
    sphere is far above opt.timestep (1 ms)."""
    out = tmp_path / "frame.png"
    env = python_env()
    env.pop("MUJOCO_GL", None)
    p = mj("view", ROOT / "models/sphere_plane.xml", "--keyframe", "rest", "--headless", out,
           "--seconds", "0.5", env=env)
    assert p.returncode == 0, p.stderr
    v = _overlay(p.stdout)
    assert v["step_size"] > 5 * 1e-3 and v["timestep"] == 1e-3
    assert v["time"] == 0.5 and 0.5 < v["pace"] < 1.5
    import matplotlib.image
    img = matplotlib.image.imread(out)[..., :3]
    assert img.shape[:2] == (480, 640) and img.std() > 0.05
    # the overlay is drawn: the top-left corner holds (near-)white text pixels
    assert (img[:150, :250] > 0.9).all(axis=-1).sum() > 200


def test_viewer_headless_broken_backend_is_one_line(tmp_path):
    env = python_env()
    env["MUJOCO_GL"] = "osmesa"
    env["PYOPENGL_PLATFORM"] = "egl"  # makes the osmesa backend fail to import
    p = mj("view", ROOT / "models/sphere_plane.xml", "--headless", tmp_path / "f.png", env=env)
    assert p.returncode == 1
    assert len(p.stderr.strip().splitlines()) == 1, p.stderr
    assert "MUJOCO_GL=osmesa does not work here" in p.stderr and "Traceback" not in p.stderr


@pytest.mark.skipif(shutil.which("Xvfb") is None, reason="Xvfb not installed")
def test_passive_viewer_under_xvfb_at_its_own_steps(tmp_path):
    """MuJoCo's passive viewer on a virtual display: the overlay's step size on a
    quiet scene (a resting sphere) is above opt.timestep, the pace near 1x."""
    disp = ":%d" % (500 + os.getpid() % 400)
    xvfb = subprocess.Popen(["Xvfb", disp, "-screen", "0", "800x600x24"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        env = python_env()
        env["DISPLAY"] = disp
        env.pop("MUJOCO_GL", None)
        p = mj("view", ROOT / "models/sphere_plane.xml", "--keyframe", "rest",
               "--duration", "1.0", env=env, timeout=120)
    finally:
        xvfb.terminate()
        xvfb.wait()
    assert p.returncode == 0, p.stderr
    assert "viewer closed at t = 1.000 s" in p.stdout
    v = _overlay(p.stdout)
    assert v["step_size"] > 1e-3 and v["stepper"] == "mjcenic cenic"
    assert 0.5 < v["pace"] < 1.5


def test_view_without_display_is_one_line(tmp_path):
    env = python_env()
    env.pop("DISPLAY", None)
    p = mj("view", ROOT / "models/sphere_plane.xml", env=env)
    assert p.returncode == 1 and len(p.stderr.strip().splitlines()) == 1
    assert "--headless" in p.stderr


# ----------------------------------------------------------------------------- compare

def test_text_overlaps_detects_overlap():
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from mjcenic import compare
    fig, ax = plt.subplots(figsize=(3, 2))
    ax.text(0.5, 0.5, "first label")
    ax.text(0.52, 0.5, "second label")
    ax.set_title("a title much too long to fit into this small figure, cut off at both edges")
    found = compare.text_overlaps(fig)
    plt.close(fig)
    assert ("first label", "second label") in found
    assert any(b == "<outside the figure>" for _, b in found)


@pytest.mark.shared_models
def test_compare_over_all_shared_models_plots_are_readable(tmp_path):
    """compare over every shared model (a short duration): the PNGs exist, hold
    one panel / row per model, with no overlapping or cut-off label."""
    out = tmp_path / "out"
    p = mj("compare", SHARED_MODELS, "--duration", "0.03", "--accuracies", "1e-1,1e-2",
           "--reference-accuracy", "1e-3", "--json", out / "r.json", "--plots", out / "plots",
           timeout=1800, cwd=tmp_path)
    assert p.returncode == 0, p.stderr[-2000:]
    report = json.loads((out / "r.json").read_text())
    models = {r["model"] for r in report["rows"] if r["load_ok"]}
    assert len(models) >= 20
    from mjcenic import compare
    overlaps = {}
    files = compare.plots(report, tmp_path / "again", overlaps=overlaps)
    assert [os.path.basename(f) for f in files] == ["wall_time_vs_error.png",
                                                     "max_penetration.png", "real_time_rate.png"]
    assert overlaps == {os.path.basename(f): [] for f in files}
    for f in files:
        name = os.path.basename(f)
        data = (out / "plots" / name).read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 20000, name
    # distinct colours for distinct methods
    import matplotlib.colors as mc
    roles = list(dict.fromkeys(compare._role(r, None) for r in report["rows"] if r["load_ok"]))
    cols = compare._role_colors(roles)
    assert len({mc.to_hex(cols[r]) for r in roles}) == len(roles)

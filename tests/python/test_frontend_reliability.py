"""Front-end reliability: plugin copies, MuJoCo fatal errors, the C API's model
checks and stepper registry, the CLI's --chunk, plugin config, install-plugin's
paths, the viewer's --headless path, mjcenic-run with the plugin, argument
conversions, pickled models, rollout counters."""
import ctypes
import os
import pickle
import subprocess
import sys
import textwrap

import mujoco
import numpy as np
import pytest

from conftest import BUILD, ROOT, SPHERE, python_env

import mjcenic  # noqa: E402  (conftest puts build/python on sys.path)

def plugin_ext(*instances):
    """<extension> with one mjcenic <instance> per dict of config values."""
    inst = "".join(
        f'<instance name="i{n}">'
        + "".join(f'<config key="{k}" value="{v}"/>' for k, v in cfg.items())
        + "</instance>" for n, cfg in enumerate(instances))
    return f'<extension><plugin plugin="mjcenic">{inst}</plugin></extension>'


def rss_bytes():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096


def capi():
    lib = ctypes.CDLL(str(BUILD / "libmjcenic.so"))
    P, C, I = ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int
    lib.mjcenic_create.argtypes = [P, C, I]
    lib.mjcenic_create.restype = P
    lib.mjcenic_destroy.argtypes = [P]
    lib.mjcenic_stepper_step.argtypes = [P, P, C, I]
    lib.mjcenic_stepper_step.restype = I
    lib.mjcenic_step.argtypes = [P, P]
    return lib


# ---------------------------------------------------------------- 1. plugin copy leak

def test_copying_data_with_the_plugin_does_not_leak_a_stepper():
    m = mujoco.MjModel.from_xml_string(SPHERE.format(ext=plugin_ext({"accuracy": "1e-3"})))
    src, dst = mujoco.MjData(m), mujoco.MjData(m)
    sim = mjcenic.Stepper(m)
    sim.step(src, nstep=10)
    for _ in range(2000):  # warm up the allocator
        mujoco.mj_copyData(dst, m, src)
    before = rss_bytes()
    for _ in range(20000):
        mujoco.mj_copyData(dst, m, src)
    grown = rss_bytes() - before
    # Before the fix each copy leaked a whole stepper (~600 MB for 20000 copies).
    assert grown < 1 << 20, f"RSS grew by {grown / 1e6:.1f} MB over 20000 copies"
    # The copy is the same state and steps to the same state as the original.
    assert dst.time == src.time and np.array_equal(dst.qpos, src.qpos)
    mjcenic.Stepper(m).step(src, nstep=20)
    mjcenic.Stepper(m).step(dst, nstep=20)
    np.testing.assert_array_equal(dst.qpos, src.qpos)
    assert src.time == pytest.approx(30 * m.opt.timestep)


# ---------------------------------------------------------------- 2. MuJoCo fatal errors

def tiny_arena_clutter(tmp_path):
    """models/clutter.xml with a 40 KB arena: the settling clutter's contacts overflow it."""
    xml = (ROOT / "models/clutter.xml").read_text()
    head, rest = xml.split("<mujoco model=\"clutter\">", 1)
    path = tmp_path / "clutter_tiny.xml"
    path.write_text(head + '<mujoco model="clutter">\n  <size memory="40K"/>' + rest)
    return path


def test_mujoco_fatal_error_in_a_step_raises_and_python_continues(tmp_path):
    path = tiny_arena_clutter(tmp_path)
    # mujoco.mj_step on this model raises mujoco.FatalError; so must mjcenic.
    # In a subprocess: before the fix the interpreter exited with status 1.
    code = textwrap.dedent(f"""
        import mujoco, mjcenic
        m = mujoco.MjModel.from_xml_path({str(path)!r})
        d = mujoco.MjData(m)
        mujoco.mj_resetDataKeyframe(m, d, 0)
        mujoco.mj_forward(m, d)
        sim = mjcenic.Stepper(m)
        raised = None
        for i in range(2000):
            qpos, t = d.qpos.copy(), d.time
            try:
                sim.step(d)
            except mujoco.FatalError as e:
                raised = str(e)
                break
        assert raised is not None, "the arena never overflowed"
        print("FatalError:", raised)
        # d keeps the state from before the failed call.
        assert d.time == t and (d.qpos == qpos).all()
        # The interpreter goes on; a model with room steps normally.
        m2 = mujoco.MjModel.from_xml_path({str(ROOT / "models/clutter.xml")!r})
        d2 = mujoco.MjData(m2)
        d2.qpos[:] = d.qpos
        d2.qvel[:] = d.qvel
        d2.time = d.time
        mjcenic.Stepper(m2).step(d2, nstep=5)
        assert d2.time > d.time
        print("continued")
    """)
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       env=python_env(), timeout=600)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "FatalError: MuJoCo fatal error" in p.stdout and "memory" in p.stdout, p.stdout
    assert "continued" in p.stdout


def test_mujoco_fatal_error_in_the_c_api_is_a_status(tmp_path):
    lib = capi()
    m = mujoco.MjModel.from_xml_path(str(tiny_arena_clutter(tmp_path)))
    d = mujoco.MjData(m)
    mujoco.mj_resetDataKeyframe(m, d, 0)
    mujoco.mj_forward(m, d)
    err = ctypes.create_string_buffer(1024)
    s = lib.mjcenic_create(m._address, err, 1024)
    assert s, err.value
    try:
        for _ in range(2000):
            t = d.time
            if lib.mjcenic_stepper_step(s, d._address, err, 1024):
                break
        else:
            pytest.fail("the arena never overflowed")
        assert err.value.startswith(b"MuJoCo fatal error"), err.value
        assert b"memory" in err.value
        assert d.time == t
    finally:
        lib.mjcenic_destroy(s)


# ---------------------------------------------------------------- 4. C API: data of another model

def test_c_api_refuses_data_of_another_model():
    lib = capi()
    m = mujoco.MjModel.from_xml_string(SPHERE.format(ext=""))
    other = mujoco.MjModel.from_xml_path(str(ROOT / "models/pendulum.xml"))
    err = ctypes.create_string_buffer(512)
    s = lib.mjcenic_create(m._address, err, 512)
    d_other = mujoco.MjData(other)
    q = d_other.qpos.copy()
    assert lib.mjcenic_stepper_step(s, d_other._address, err, 512) == 1
    assert b"not made for" in err.value, err.value
    np.testing.assert_array_equal(d_other.qpos, q)
    # Its own data still steps.
    d = mujoco.MjData(m)
    assert lib.mjcenic_stepper_step(s, d._address, err, 512) == 0, err.value
    lib.mjcenic_destroy(s)


# ---------------------------------------------------------------- 5. stale steppers in mjcenic_step
# (tests/cpp/c_api_test.cc: make/step/delete loops with new models and data at
# reused addresses, and the registry bound.)


# ---------------------------------------------------------------- 7. CLI --chunk

@pytest.mark.parametrize("chunk", ["1e-300", "1e-12"])
def test_cli_rejects_a_chunk_too_small_to_make_progress(tmp_path, chunk):
    p = subprocess.run([str(BUILD / "mjcenic-run"), str(ROOT / "models/sphere_plane.xml"),
                        "--duration", "0.1", "--chunk", chunk], capture_output=True, text=True,
                       timeout=60)
    assert p.returncode != 0
    assert "--chunk" in p.stderr


# ---------------------------------------------------------------- 10. plugin config gaps

def test_plugin_empty_value_is_rejected_naming_the_key(tmp_path):
    path = tmp_path / "m.xml"
    path.write_text(SPHERE.format(ext=plugin_ext({"accuracy": ""})))
    with pytest.raises(ValueError, match="'accuracy' has an empty value"):
        mjcenic.load_model(path)


def test_plugin_second_instance_is_an_error():
    with pytest.raises(ValueError, match="instance"):
        mujoco.MjModel.from_xml_string(SPHERE.format(ext=plugin_ext({}, {"accuracy": "1e-2"})))


def test_plugin_bad_value_error_text_names_the_key():
    # The compile error itself names the key (its first line; MuJoCo appends the
    # compile warnings after it), not MuJoCo's generic "plugin->init failed".
    with pytest.raises(ValueError) as e:
        mujoco.MjModel.from_xml_string(
            SPHERE.format(ext=plugin_ext({"stiction_tolerance": "-3"})))
    first = str(e.value).splitlines()[0]
    assert "option 'stiction_tolerance': bad value '-3' (expected > 0)" in first, str(e.value)



# ---------------------------------------------------------------- install-plugin paths

def mj(*args, timeout=120):
    return subprocess.run([sys.executable, "-m", "mjcenic", *map(str, args)],
                          capture_output=True, text=True, timeout=timeout, env=python_env())


@pytest.mark.parametrize("symlink", [False, True])
def test_install_plugin_onto_itself_does_nothing_and_says_so(tmp_path, symlink):
    # --dir D --library D/libmjcenic.so used to delete the library (then a
    # traceback), and with --symlink to leave a link to itself.
    lib = tmp_path / "libmjcenic.so"
    lib.write_bytes((BUILD / "libmjcenic.so").read_bytes())
    size = lib.stat().st_size
    p = mj("install-plugin", "--dir", tmp_path, "--library", lib, *(["--symlink"] if symlink else []))
    assert p.returncode == 0, p.stderr
    assert "nothing to do" in p.stdout and "Traceback" not in p.stderr
    assert lib.is_file() and not lib.is_symlink() and lib.stat().st_size == size


def test_install_plugin_refuses_an_empty_dir(tmp_path):
    # --dir '' used to install into MuJoCo's own package directory.
    before = set(os.listdir(mujoco.PLUGINS_DIR)) if os.path.isdir(mujoco.PLUGINS_DIR) else set()
    p = mj("install-plugin", "--dir", "", "--library", BUILD / "libmjcenic.so")
    assert p.returncode == 2 and "--dir is empty" in p.stderr, (p.stdout, p.stderr)
    after = set(os.listdir(mujoco.PLUGINS_DIR)) if os.path.isdir(mujoco.PLUGINS_DIR) else set()
    assert after == before


@pytest.mark.parametrize("content", [b"some notes\n", b"\x7fELF" + b"\0" * 60])
def test_install_plugin_refuses_a_file_that_is_not_the_plugin_library(tmp_path, content):
    notes = tmp_path / "notes.txt"
    notes.write_bytes(content)
    target = tmp_path / "plugins"
    target.mkdir()
    p = mj("install-plugin", "--dir", target, "--library", notes)
    assert p.returncode == 2 and "notes.txt" in p.stderr, (p.stdout, p.stderr)
    assert list(target.iterdir()) == []


def test_install_plugin_into_a_read_only_directory_is_a_clear_error(tmp_path):
    target = tmp_path / "ro"
    target.mkdir()
    target.chmod(0o555)
    try:
        p = mj("install-plugin", "--dir", target, "--library", BUILD / "libmjcenic.so")
        if os.access(target, os.W_OK):  # root ignores the mode
            assert p.returncode == 0, p.stderr
        else:
            assert p.returncode == 1 and "not writable" in p.stderr, p.stderr
        assert "Traceback" not in p.stderr
    finally:
        target.chmod(0o755)


# ---------------------------------------------------------------- view --headless

@pytest.mark.parametrize("name", ["a.txt", "a", "a.png.npz"])
def test_view_headless_path_is_checked_like_run_out(tmp_path, name):
    # Used to end in an uncaught KeyError from the image writer.
    p = mj("view", ROOT / "models/sphere_plane.xml", "--headless", tmp_path / name,
           "--seconds", "0.01")
    assert p.returncode == 2 and "--headless must end in .png" in p.stderr, p.stderr
    assert "Traceback" not in p.stderr


# ---------------------------------------------------------------- mjcenic-run and the plugin

def cli_run(*args):
    return subprocess.run([str(BUILD / "mjcenic-run"), *map(str, args)], capture_output=True,
                          text=True, timeout=120)


def test_mjcenic_run_loads_a_model_that_declares_the_plugin(tmp_path):
    # Used to fail with "plugin mjcenic not found"; its <config> now applies,
    # and the command line's options override it.
    xml = tmp_path / "m.xml"
    xml.write_text(SPHERE.format(ext=plugin_ext({"mode": "fixed"})))
    out = tmp_path / "r.json"
    p = cli_run(xml, "--duration", "0.05", "--json", out)
    assert p.returncode == 0, p.stderr
    import json
    assert json.loads(out.read_text())["mode"] == "fixed"
    p = cli_run(xml, "--duration", "0.05", "--mode", "cenic", "--json", out)
    assert p.returncode == 0 and json.loads(out.read_text())["mode"] == "cenic", p.stderr


def test_empty_config_value_is_an_error_in_mjcenic_run(tmp_path):
    xml = tmp_path / "m.xml"
    xml.write_text(SPHERE.format(ext=plugin_ext({"accuracy": ""})))
    p = cli_run(xml, "--duration", "0.05")
    assert p.returncode == 1 and "'accuracy' has an empty value" in p.stderr, p.stderr


@pytest.mark.parametrize("flags", [["--accuracy", "1e300"], ["--option", "kappa=100"],
                                   ["--mode", "fixed", "--option", "solver_tolerance=1"]])
def test_mjcenic_run_refuses_tolerances_that_freeze_the_physics(flags):
    p = cli_run(ROOT / "models/sphere_plane.xml", "--duration", "0.05", *flags)
    assert p.returncode != 0, p.stdout
    key = flags[-1].split("=")[0] if "=" in flags[-1] else "accuracy"
    assert f"'{key}'" in p.stderr, p.stderr


# ---------------------------------------------------------------- conversions, pickles, options

def test_lenient_conversions_are_rejected_like_mj_step():
    m = mujoco.MjModel.from_xml_string(SPHERE.format(ext=""))
    d = mujoco.MjData(m)
    s = mjcenic.Stepper(m)
    for bad in (2.7, "2", 2**40, None):
        with pytest.raises(TypeError):
            mujoco.mj_step(m, mujoco.MjData(m), nstep=bad)
        with pytest.raises(TypeError, match="nstep"):
            s.step(d, nstep=bad)
    assert d.time == 0
    s.step(d, nstep=np.int64(2))
    s.step(d, nstep=True)
    s.step(d, nstep=0)  # as mj_step: nothing
    assert d.time == pytest.approx(3 * m.opt.timestep)
    for bad in ("0.1", b"0.1", None, True):
        with pytest.raises(TypeError, match="time"):
            s.advance_to(bad, d)
    s.advance_to(np.float32(0.01), d)
    for key, value in (("accuracy", "0x10"), ("max_iterations", "0x10"), ("kappa", "0x1p-4")):
        with pytest.raises(ValueError, match=f"'{key}'"):
            mjcenic.Stepper(m, **{key: value})


def test_max_steps_per_call_option_reads_as_a_number():
    m = mujoco.MjModel.from_xml_string(SPHERE.format(ext=""))
    o = mjcenic.Stepper(m, max_steps_per_call=10).options
    assert o["max_steps_per_call"] == 10 and isinstance(o["max_steps_per_call"], int)
    for key, v in o.items():
        assert not isinstance(v, str) or not v.lstrip("-").replace(".", "").isdigit(), (key, v)


def test_stepper_unpickled_alone_accepts_data_of_the_original_model():
    # A pickled MjModel carries signature 0: compare by content, not signature.
    m = mujoco.MjModel.from_xml_path(str(ROOT / "models/clutter.xml"))
    d = mujoco.MjData(m)
    s = pickle.loads(pickle.dumps(mjcenic.Stepper(m)))
    s.step(d)
    ref = mjcenic.Stepper(m)
    e = mujoco.MjData(m)
    ref.step(e)
    assert d.time == e.time and np.array_equal(d.qpos, e.qpos)
    other = mujoco.MjModel.from_xml_string(SPHERE.format(ext=""))
    with pytest.raises(ValueError, match="not made for the stepper's MjModel"):
        s.step(mujoco.MjData(other))


# ---------------------------------------------------------------- rollout counters

@pytest.mark.parametrize("nthread", [2, 3])
@pytest.mark.parametrize("chunk", [2**30, 2**31 - 1, 2**40])
def test_rollout_huge_chunk_size_is_clamped_to_the_batch(nthread, chunk):
    # A 32-bit shared counter overflowed: SIGSEGV.
    code = f"""
import mujoco, mjcenic, numpy as np
m = mujoco.MjModel.from_xml_string({SPHERE.format(ext="")!r})
s0 = np.zeros((5, mujoco.mj_stateSize(m, mujoco.mjtState.mjSTATE_FULLPHYSICS)))
s0[:, 3] = np.arange(5)
r = mjcenic.rollout(m, None, s0, nstep=3, nthread={nthread}, chunk_size={chunk})
ref = mjcenic.rollout(m, None, s0, nstep=3, nthread=1)
assert np.array_equal(r.state, ref.state) and r.errors == [None] * 5
print("ok")
"""
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       env=python_env(), timeout=120)
    assert p.returncode == 0 and p.stdout.strip() == "ok", (p.returncode, p.stderr[-1500:])

"""Front-end reliability: plugin copies, MuJoCo fatal errors, the C
API's model checks and stepper registry, the CLI's --chunk, plugin config."""
import ctypes
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

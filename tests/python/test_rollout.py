"""mjcenic.rollout (batch rollouts on threads, on Ray) and pickling a Stepper.

The truth for a rollout is the loop a user would write without it: a fresh
mjcenic.Stepper per rollout, mj_setState to the initial state, then per step
ctrl from the control array and Stepper.step (one opt.timestep). Every result
must equal that loop bit for bit, whatever the thread count, chunking or
backend: each rollout depends only on its own inputs (docs/architecture.md,
"Batch rollouts"). The layout (mjSTATE_FULLPHYSICS) is checked against the
data fields read directly and against a framepos sensor.
"""
import pathlib
import pickle
import sys

import numpy as np
import pytest

import mujoco
import mjcenic

FULL = mujoco.mjtState.mjSTATE_FULLPHYSICS

# A pusher on a position servo shoving a stack of two boxes across a floor, a
# hinge arm with a filter actuator (act), and sensors: contacts, controls,
# activations and sensordata all matter.
SCENE = """<mujoco>
  <option timestep="0.01"/>
  <worldbody>
    <geom name="floor" type="plane" size="2 2 .1"/>
    <body name="pusher" pos="-0.15 0 0.05">
      <joint name="slide" type="slide" axis="1 0 0" damping="1"/>
      <geom type="box" size=".03 .1 .04" mass="1"/>
    </body>
    <body name="box1" pos="0 0 0.05"><freejoint/><geom type="box" size=".05 .05 .05" mass=".5"/></body>
    <body name="box2" pos="0.02 0.01 0.155"><freejoint/><geom type="box" size=".05 .05 .05" mass=".5"/></body>
    <body name="arm" pos="0.6 0 0.3">
      <joint name="hinge" axis="0 1 0" damping=".1"/>
      <geom type="capsule" fromto="0 0 0 .2 0 0" size=".02" mass=".2"/>
    </body>
  </worldbody>
  <actuator>
    <position name="push" joint="slide" kp="200" ctrlrange="-0.5 0.5"/>
    <general name="filt" joint="hinge" dyntype="filter" dynprm="0.05" gainprm="1" ctrlrange="-1 1"/>
  </actuator>
  <sensor>
    <framepos objtype="body" objname="box1"/>
    <jointpos joint="hinge"/>
    <actuatorfrc actuator="push"/>
  </sensor>
</mujoco>"""

NBATCH, NSTEP = 6, 40
BOX1_QPOS = 1  # qpos address of box1's free joint (after the slide)
BOX2_Z = 1 + 7 + 2


@pytest.fixture(scope="module")
def model():
    return mujoco.MjModel.from_xml_string(SCENE)


def _state(m, d):
    x = np.empty(mujoco.mj_stateSize(m, FULL))
    mujoco.mj_getState(m, d, x, FULL)
    return x


@pytest.fixture(scope="module")
def inputs(model):
    """Initial states (box2 dropped from different heights) and controls (a push ramp, a random
    arm command): the rollouts differ in steps, rejections and contacts."""
    d = mujoco.MjData(model)
    mujoco.mj_forward(model, d)
    x0 = _state(model, d)
    x = np.tile(x0, (NBATCH, 1))
    x[:, 1 + BOX2_Z] = np.linspace(0.17, 0.4, NBATCH)
    rng = np.random.default_rng(7)
    u = np.zeros((NBATCH, NSTEP, model.nu))
    u[:, :, 0] = np.linspace(0, 0.3, NSTEP)
    u[:, :, 1] = rng.uniform(-1, 1, (NBATCH, NSTEP))
    return x, u


def sequential(m, x0, u, spec=mujoco.mjtState.mjSTATE_CTRL, **options):
    """The reference loop: fresh stepper, mj_setState, the controls (mj_setState with `spec`),
    Stepper.step per row; stops at the first failing step and repeats its state after it (as
    mujoco.rollout does)."""
    d = mujoco.MjData(m)
    mujoco.mj_setState(m, d, x0, FULL)
    sim = mjcenic.Stepper(m, **options)
    nstep = u.shape[0]
    state = np.empty((nstep, x0.size))
    sens = np.empty((nstep, m.nsensordata))
    qpos = np.empty((nstep, m.nq))
    error, t = None, 0
    for t in range(nstep):
        mujoco.mj_setState(m, d, u[t], spec)
        try:
            sim.step(d)
        except (ValueError, RuntimeError, mujoco.FatalError) as e:
            error = str(e)
            break
        state[t], sens[t], qpos[t] = _state(m, d), d.sensordata, d.qpos
    else:
        t = nstep
    for k in range(t, nstep):
        state[k], sens[k], qpos[k] = _state(m, d), d.sensordata, d.qpos
    return state, sens, qpos, sim.stats, error


@pytest.fixture(scope="module")
def reference(model, inputs):
    x, u = inputs
    return [sequential(model, x[r], u[r]) for r in range(NBATCH)]


@pytest.mark.parametrize("nthread", [1, 2, 4])
def test_rollout_equals_sequential_loop(model, inputs, reference, nthread):
    x, u = inputs
    res = mjcenic.rollout(model, [mujoco.MjData(model) for _ in range(nthread)], x, u)
    state, sens = res  # unpacks like mujoco.rollout.rollout's (state, sensordata)
    assert state.shape == (NBATCH, NSTEP, mujoco.mj_stateSize(model, FULL))
    assert sens.shape == (NBATCH, NSTEP, model.nsensordata)
    for r, (st, se, qpos, stats, error) in enumerate(reference):
        assert error is None
        np.testing.assert_array_equal(state[r], st)   # bit-identical
        np.testing.assert_array_equal(sens[r], se)
        # Layout: [time, qpos, qvel, act, ...] as mjSTATE_FULLPHYSICS; sensors at the new state.
        np.testing.assert_array_equal(state[r, :, 1:1 + model.nq], qpos)
        np.testing.assert_allclose(state[r, :, 0], x[r, 0] + model.opt.timestep *
                                   np.arange(1, NSTEP + 1), rtol=0, atol=1e-12)
        np.testing.assert_array_equal(sens[r, :, :3], qpos[:, BOX1_QPOS:BOX1_QPOS + 3])
        for key in ("steps", "rejected_steps", "solves", "newton_iterations", "contacts",
                    "h_min", "h_max", "h_median", "max_penetration"):
            assert res.stats[key][r] == stats[key], key
    assert res.errors == [None] * NBATCH
    assert list(res.stats["nstep_done"]) == [NSTEP] * NBATCH
    # The scene does what it is for: contacts, rejected steps, rollouts that differ, box pushed.
    assert np.all(res.stats["contacts"] > 0) and res.stats["rejected_steps"].sum() > 0
    assert len(set(res.stats["steps"])) > 1
    assert np.all(state[:, -1, 1 + BOX1_QPOS] > 0.02)


def test_rollout_independent_of_threads_and_chunks(model, inputs):
    x, u = inputs
    base = mjcenic.rollout(model, None, x, u, nthread=1)
    for nthread, chunk in ((2, 1), (3, 2), (4, 4), (8, 1)):
        res = mjcenic.rollout(model, None, x, u, nthread=nthread, chunk_size=chunk)
        np.testing.assert_array_equal(res.state, base.state)
        np.testing.assert_array_equal(res.sensordata, base.sensordata)
        np.testing.assert_array_equal(res.stats["steps"], base.stats["steps"])


def test_rollout_options_and_singleton_expansion(model, inputs, reference):
    x, u = inputs
    # One initial state and one control row for every rollout and step: broadcast like
    # mujoco.rollout; options reach every rollout's stepper.
    res = mjcenic.rollout(model, None, x[0], u[0, 0], nstep=5, nthread=2, accuracy=1e-4)
    assert res.state.shape == (1, 5, x.shape[1])
    st, se, _, stats, _ = sequential(model, x[0], np.tile(u[0, 0], (5, 1)), accuracy=1e-4)
    np.testing.assert_array_equal(res.state[0], st)
    assert res.stats["steps"][0] == stats["steps"]
    # Outputs written in place when given, as mujoco.rollout does.
    state = np.zeros((NBATCH, NSTEP, x.shape[1]))
    out = mjcenic.rollout(model, None, x, u, state=state, nthread=2)
    assert out.state is state
    np.testing.assert_array_equal(state[3], reference[3][0])


@pytest.mark.parametrize("nthread", [None, 2])
def test_rollout_object_equals_rollout_over_successive_calls(model, inputs, nthread):
    """mjcenic.Rollout, shaped as mujoco.rollout.Rollout: two calls on the same object
    (its pooled MjData reused) give mjcenic.rollout's arrays and statistics bit for bit."""
    x, u = inputs
    base = mjcenic.rollout(model, None, x, u, nthread=nthread or 1)
    small = mjcenic.rollout(model, None, x[:2], u[:2, :7], accuracy=1e-4)
    with mjcenic.Rollout(nthread=nthread) as r:
        for _ in range(2):
            res = r.rollout(model, None, x, u)
            state, sens = res
            np.testing.assert_array_equal(state, base.state)
            np.testing.assert_array_equal(sens, base.sensordata)
            for key in ("steps", "rejected_steps", "newton_iterations", "nstep_done"):
                np.testing.assert_array_equal(res.stats[key], base.stats[key])
            # a different call in between (other shapes, options) changes nothing after it
            other = r.rollout(model, None, x[:2], u[:2, :7], accuracy=1e-4)
            np.testing.assert_array_equal(other.state, small.state)
        datas = r._datas
        assert len(datas) == max(1, nthread or 0)
        r.rollout(model, None, x[:1], u[:1])
        assert r._datas is datas  # same model: no new MjData
    with pytest.raises(RuntimeError, match="after thread pool shutdown"):
        r.rollout(model, None, x, u)
    # mujoco's class has the same constructor and rollout() signature (ours adds **options)
    import inspect
    import mujoco.rollout
    ours = inspect.signature(mjcenic.Rollout.rollout).parameters
    theirs = inspect.signature(mujoco.rollout.Rollout.rollout).parameters
    assert list(ours)[:len(theirs)] == list(theirs)
    assert list(inspect.signature(mjcenic.Rollout).parameters) == \
        list(inspect.signature(mujoco.rollout.Rollout).parameters)


def _threads():
    """This process's threads (native ones included)."""
    return len(list(pathlib.Path("/proc/self/task").iterdir()))


def _assert_reference(res, reference, rows=None):
    for r in range(len(reference)) if rows is None else rows:
        st, se, _, stats, _ = reference[r]
        np.testing.assert_array_equal(res.state[r], st)
        np.testing.assert_array_equal(res.sensordata[r], se)
        assert res.stats["steps"][r] == stats["steps"]
        assert res.stats["rejected_steps"][r] == stats["rejected_steps"]


@pytest.mark.skipif(not pathlib.Path("/proc/self/task").is_dir(), reason="needs /proc")
def test_rollout_object_keeps_its_threads_and_equals_the_stepper_loop(model, inputs, reference):
    """The threads start with the object and end with close(); no call starts one. Every call,
    including after a call on another model (other sizes, its own pooled MjData), equals the
    sequential Stepper loop bit for bit."""
    x, u = inputs
    other = mujoco.MjModel.from_xml_string(
        "<mujoco><option timestep='0.005'/><worldbody><geom type='plane' size='1 1 .1'/>"
        "<body pos='0 0 .2'><freejoint/><geom type='sphere' size='.05'/></body></worldbody>"
        "</mujoco>")
    d = mujoco.MjData(other)
    mujoco.mj_forward(other, d)
    x_other = np.tile(_state(other, d), (3, 1))
    x_other[:, 1 + 2] = [0.1, 0.2, 0.3]
    ref_other = [sequential(other, x_other[r], np.zeros((25, 0))) for r in range(3)]
    before = _threads()
    r = mjcenic.Rollout(nthread=3)
    assert _threads() == before + 2  # two of its own; the caller is the third
    for _ in range(2):
        _assert_reference(r.rollout(model, None, x, u), reference)
        assert _threads() == before + 2
        res = r.rollout(other, None, x_other, nstep=25)
        _assert_reference(res, ref_other)
    assert len(r._datas) == 3 and r._model is other
    r.close()
    assert _threads() == before
    r.close()  # idempotent
    assert "closed" in repr(r)


def test_rollout_object_close_and_context_manager(model, inputs, reference):
    x, u = inputs
    with mjcenic.Rollout(nthread=2) as r:
        _assert_reference(r.rollout(model, None, x, u), reference)
    for call in (lambda: r.rollout(model, None, x, u), lambda: r.rollout(model, None, x, u, nstep=0)):
        with pytest.raises(RuntimeError, match=r"mjcenic.Rollout: rollout requested after thread "
                                               r"pool shutdown \(close\(\) was called; make a new"):
            call()
    with pytest.raises(ValueError, match="nthread must be an integer >= 0"):
        mjcenic.Rollout(nthread=-1)
    with pytest.raises(ValueError, match="nthread must be an integer >= 0"):
        mjcenic.Rollout(nthread=1.5)
    # the pool refuses too when called directly after close()
    pool = mjcenic._mjcenic._RolloutPool(1)
    pool.close()
    assert pool.closed
    with pytest.raises(RuntimeError, match="after thread pool shutdown"):
        pool.rollout([model], [mujoco.MjData(model)], 1, 1, x[0], None, None,
                     np.empty((1, 1, x.shape[1])), np.empty((1, 1, model.nsensordata)), {}, 1)


def test_rollout_object_is_thread_safe(model, inputs, reference):
    """Python threads calling one Rollout(nthread=2) at once (with pooled and with their own
    MjData), and close() from another thread while a call runs: every result is the
    sequential loop's, bit for bit (calls wait for each other; close waits for the call)."""
    import threading
    x, u = inputs
    r = mjcenic.Rollout(nthread=2)
    results, errors = [], []

    def work(own_data):
        try:
            for _ in range(3):
                data = [mujoco.MjData(model) for _ in range(2)] if own_data else None
                results.append(r.rollout(model, data, x, u))
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(k % 2 == 1,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    assert len(results) == 12
    for res in results:
        _assert_reference(res, reference)
    # close() from another thread while a call runs: the call completes, later calls fail.
    started = threading.Event()
    out = []

    def late_call():
        started.set()
        try:
            out.append(r.rollout(model, None, x, u))
        except RuntimeError as e:  # close() came first
            out.append(e)

    t = threading.Thread(target=late_call)
    t.start()
    started.wait()
    r.close()
    t.join()
    if isinstance(out[0], RuntimeError):
        assert "after thread pool shutdown" in str(out[0])
    else:  # the call got the pool before close()
        _assert_reference(out[0], reference)
    with pytest.raises(RuntimeError, match="after thread pool shutdown"):
        r.rollout(model, None, x, u)


def test_rollout_persistent_pool(model, inputs, reference):
    """persistent_pool=True keeps one pool for calls with the same nthread (as mujoco's), a
    different nthread replaces it, shutdown_persistent_pool ends it; results are the loop's."""
    from mjcenic import _rollout
    x, u = inputs
    _assert_reference(mjcenic.rollout(model, None, x, u, nthread=2, persistent_pool=True),
                      reference)
    pool = _rollout._persistent
    assert pool.nthread == 2
    _assert_reference(mjcenic.rollout(model, None, x, u, nthread=2, persistent_pool=True),
                      reference)
    assert _rollout._persistent is pool
    _assert_reference(mjcenic.rollout(model, None, x, u, nthread=3, persistent_pool=True),
                      reference)
    assert _rollout._persistent is not pool and _rollout._persistent.nthread == 3
    with pytest.raises(RuntimeError, match="after thread pool shutdown"):
        pool.rollout(model, None, x, u)
    mjcenic.shutdown_persistent_pool()
    assert _rollout._persistent is None


def test_rollout_same_arguments_and_shapes_as_mujoco(model, inputs):
    x, u = inputs
    from mujoco import rollout as mj_rollout
    spec = int(mujoco.mjtState.mjSTATE_CTRL | mujoco.mjtState.mjSTATE_QFRC_APPLIED)
    ncontrol = mujoco.mj_stateSize(model, spec)
    ctrl = np.zeros((NBATCH, 3, ncontrol))
    ctrl[:, :, :model.nu] = u[:, :3]
    ctrl[:, :, model.nu + 1 + 2] = 30.0  # an upward force on box1: lifts it off the floor
    ours = mjcenic.rollout(model, mujoco.MjData(model), x, ctrl, control_spec=spec)
    theirs = mj_rollout.rollout(model, mujoco.MjData(model), x, ctrl, control_spec=spec)
    assert ours.state.shape == theirs[0].shape and ours.sensordata.shape == theirs[1].shape
    np.testing.assert_array_equal(ours.state[:, :, 0], theirs[0][:, :, 0])
    z = 1 + BOX1_QPOS + 2
    assert np.all(ours.state[:, -1, z] > x[:, z]) and np.all(theirs[0][:, -1, z] > x[:, z])
    for r in range(NBATCH):
        np.testing.assert_array_equal(ours.state[r], sequential(model, x[r], ctrl[r], spec)[0])


def test_failed_rollout_does_not_stop_the_others(model, inputs, reference):
    x, u = inputs
    x, u = x.copy(), u.copy()
    x[2, 1 + model.nq] = np.nan  # rollout 2: NaN velocity at the start
    u[4, 10, 0] = np.nan         # rollout 4: NaN control at step 10
    res = mjcenic.rollout(model, None, x, u, nthread=2)
    errors = res.errors
    assert "qvel[0] is nan" in errors[2] and "ctrl[0] is nan" in errors[4]
    assert list(res.failed) == [False, False, True, False, True, False]
    assert res.stats["nstep_done"][2] == 0 and res.stats["nstep_done"][4] == 10
    for r in (0, 1, 3, 5):
        np.testing.assert_array_equal(res.state[r], reference[r][0])
    # The failed rollouts hold their last good state, as the sequential loop does.
    st4, _, _, stats4, err4 = sequential(model, x[4], u[4])
    assert "ctrl[0] is nan" in err4
    np.testing.assert_array_equal(res.state[4], st4)
    np.testing.assert_array_equal(res.state[4, 10:], np.tile(reference[4][0][9], (NSTEP - 10, 1)))
    assert res.stats["steps"][4] == stats4["steps"]
    np.testing.assert_array_equal(res.state[2, :, 1:1 + model.nq],
                                  np.tile(x[2, 1:1 + model.nq], (NSTEP, 1)))


def test_mujoco_fatal_error_fails_only_its_rollout(tmp_path):
    """models/clutter.xml with a 40 KB arena: a drop overflows it when the objects land (a
    MuJoCo fatal error inside the step, caught per thread); the same drop 10 m higher does not
    land within the rollout and must be untouched, on either thread."""
    root = pathlib.Path(__file__).resolve().parents[2]
    head, rest = (root / "models/clutter.xml").read_text().split('<mujoco model="clutter">', 1)
    path = tmp_path / "clutter_tiny.xml"
    path.write_text(head + '<mujoco model="clutter">\n  <size memory="40K"/>' + rest)
    m = mujoco.MjModel.from_xml_path(str(path))
    x = np.tile(_state(m, mjcenic.make_data(m)), (4, 1))
    for j in np.flatnonzero(m.jnt_type == mujoco.mjtJoint.mjJNT_FREE):
        x[[1, 3], 1 + m.jnt_qposadr[j] + 2] += 10.0
    nstep = 120
    res = mjcenic.rollout(m, None, x, nstep=nstep, nthread=2)
    assert res.errors[1] is None and res.errors[3] is None
    assert "MuJoCo fatal error" in res.errors[0] and "mj_stackAlloc" in res.errors[2]
    assert 0 < res.stats["nstep_done"][0] < nstep
    none = np.zeros((nstep, 0))
    for r in (0, 1):
        st, _, _, _, err = sequential(m, x[r], none)
        assert (err is None) == (r == 1)
        np.testing.assert_array_equal(res.state[r], st)


def test_rollout_rejects_bad_input_before_work(model, inputs):
    x, u = inputs
    with pytest.raises(ValueError, match="accuracy"):
        mjcenic.rollout(model, None, x, u, accuracy=-1)
    with pytest.raises(ValueError, match="no_such_option"):
        mjcenic.rollout(model, None, x, u, no_such_option=1)
    with pytest.raises(ValueError, match="trailing dimension of initial_state"):
        mjcenic.rollout(model, None, x[:, :-1], u)
    with pytest.raises(ValueError, match="nbatch"):
        mjcenic.rollout(model, None, x[:2], u[:3])
    with pytest.raises(ValueError, match="backend"):
        mjcenic.rollout(model, None, x, u, backend="dask")
    with pytest.raises(ValueError, match="nthread"):
        mjcenic.rollout(model, None, x, u, nthread=0)
    with pytest.raises(ValueError, match="state must be"):
        mjcenic.rollout(model, None, x, u, state=np.zeros((NBATCH, NSTEP, 3)))
    other = mujoco.MjModel.from_xml_string("<mujoco><worldbody><body><freejoint/>"
                                           "<geom size='.1'/></body></worldbody></mujoco>")
    with pytest.raises(ValueError, match="not made for"):
        mjcenic.rollout(model, mujoco.MjData(other), x, u)


def test_stepper_pickle_round_trip(model, inputs, tmp_path):
    x, u = inputs
    sim = mjcenic.Stepper(model, accuracy=1e-4, stiction_tolerance=1e-3)
    copy = pickle.loads(pickle.dumps(sim))
    assert copy.options == sim.options and copy.options["accuracy"] == 1e-4
    assert copy.model is not model and copy.model.nq == model.nq
    d1, d2 = mujoco.MjData(model), mujoco.MjData(copy.model)
    mujoco.mj_setState(model, d1, x[1], FULL)
    mujoco.mj_setState(copy.model, d2, x[1], FULL)
    for t in range(15):
        d1.ctrl[:] = d2.ctrl[:] = u[1, t]
        sim.step(d1)
        copy.step(d2)
        np.testing.assert_array_equal(_state(model, d2), _state(model, d1))
    assert copy.stats["steps"] == sim.stats["steps"]
    # A stepped stepper pickles by what built it: the copy starts fresh.
    again = pickle.loads(pickle.dumps(sim))
    assert again.stats["steps"] == 0
    # The model travels with its mjcenic plugin <config>, and a bound MjData with the stepper.
    xml = tmp_path / "plugin.xml"
    xml.write_text(SCENE.replace(
        "<worldbody>", '<extension><plugin plugin="mjcenic"><instance name="c">'
        '<config key="accuracy" value="3e-4"/></instance></plugin></extension><worldbody>', 1))
    mp = mjcenic.load_model(xml)
    bound = mjcenic.Stepper(mp, mujoco.MjData(mp), mode="trapezoid")
    back = pickle.loads(pickle.dumps(bound))
    assert back.options["accuracy"] == 3e-4 and back.options["mode"] == "trapezoid"
    back.step()
    assert back.data.time == pytest.approx(mp.opt.timestep)
    with pytest.raises(Exception, match="pickle"):
        pickle.dumps(mjcenic.Stepper(model, controller=lambda m, d: None))


def test_ray_missing_gives_a_clear_error(model, inputs, monkeypatch):
    x, u = inputs
    monkeypatch.setitem(sys.modules, "ray", None)
    with pytest.raises(ImportError, match=r"pip install 'mjcenic\[ray\]'"):
        mjcenic.rollout(model, None, x, u, backend="ray")


def test_ray_equals_threads(model, inputs, reference):
    ray = pytest.importorskip("ray")
    import mjcenic.distributed as dist
    x, u = inputs
    started = not ray.is_initialized()
    dist.init(num_cpus=2)
    try:
        threads = mjcenic.rollout(model, None, x, u, nthread=2)
        on_ray = mjcenic.rollout(model, None, x, u, backend="ray", chunk_size=2)
        np.testing.assert_array_equal(on_ray.state, threads.state)
        np.testing.assert_array_equal(on_ray.sensordata, threads.sensordata)
        for key in ("steps", "rejected_steps", "solves", "nstep_done"):
            np.testing.assert_array_equal(on_ray.stats[key], threads.stats[key])
        assert on_ray.errors == [None] * NBATCH
        np.testing.assert_array_equal(on_ray.state[5], reference[5][0])
        # Generic tasks for compare/sweep: results in order.
        assert dist.map_tasks(abs, [-3, 2, -1]) == [3, 2, 1]
    finally:
        if started:
            ray.shutdown()


def test_pickled_mjdata_of_a_plugin_model_owns_its_own_stepper(tmp_path):
    """The mujoco package unpickles an MjData by restoring its raw fields, plugin_data too: the
    plugin must not take that address for its own stepper (it used to free it twice, "free():
    invalid pointer"). Run in a subprocess: the failure mode is an abort."""
    import subprocess
    from conftest import python_env
    xml = tmp_path / "plugin.xml"
    xml.write_text(SCENE.replace(
        "<worldbody>", '<extension><plugin plugin="mjcenic"><instance name="c"/></plugin>'
        '</extension><worldbody>', 1))
    script = f"""
import gc, pickle, mujoco, mjcenic
m = mjcenic.load_model({str(xml)!r})
d = mujoco.MjData(m)
copies = [pickle.loads(pickle.dumps(d)) for _ in range(3)]
del d; gc.collect()
for c in copies:
    mujoco.mj_step(m, c)
del copies; gc.collect()
print("ok")
"""
    proc = subprocess.run([sys.executable, "-c", script], env=python_env(), capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stderr[-2000:]

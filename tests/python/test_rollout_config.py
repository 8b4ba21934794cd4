"""mjcenic.rollout on a model whose mjcenic plugin <config> sets options: each rollout runs
with them (then the keyword options over them), bit-identical to the loop a user writes with
mjcenic.Stepper(model), which reads the same <config> (docs/architecture.md, "Batch rollouts")."""
import mujoco
import numpy as np

import mjcenic  # noqa: E402  (conftest puts build/python on sys.path)

FULL = mujoco.mjtState.mjSTATE_FULLPHYSICS

# A box dropped on a floor and a damped hinge on a motor: the <config>'s accuracy (1e-2, not
# the default 1e-3) and max_step change the steps, the contacts and so the trajectory.
SCENE = """<mujoco>
  <extension><plugin plugin="mjcenic"><instance name="cenic">
    <config key="accuracy" value="1e-2"/><config key="max_step" value="0.004"/>
  </instance></plugin></extension>
  <option timestep="0.01"/>
  <worldbody>
    <geom type="plane" size="2 2 .1"/>
    <body pos="0 0 0.3"><freejoint/><geom type="box" size=".05 .05 .05" mass=".5"/></body>
    <body pos="0.6 0 0.3">
      <joint name="hinge" axis="0 1 0" damping=".1"/>
      <geom type="capsule" fromto="0 0 0 .2 0 0" size=".02" mass=".2"/>
    </body>
  </worldbody>
  <actuator><motor joint="hinge" gear="1" ctrlrange="-1 1"/></actuator>
  <sensor><jointpos joint="hinge"/></sensor>
</mujoco>"""

NBATCH, NSTEP = 3, 30


def _state(m, d):
    x = np.empty(mujoco.mj_stateSize(m, FULL))
    mujoco.mj_getState(m, d, x, FULL)
    return x


def _inputs(m):
    d = mujoco.MjData(m)
    mujoco.mj_forward(m, d)
    x = np.tile(_state(m, d), (NBATCH, 1))
    x[:, 1 + 2] = np.linspace(0.2, 0.4, NBATCH)  # the box's height (after time)
    u = np.random.default_rng(3).uniform(-1, 1, (NBATCH, NSTEP, m.nu))
    return x, u


def _loop(m, x0, u, **options):
    d = mujoco.MjData(m)
    mujoco.mj_setState(m, d, x0, FULL)
    sim = mjcenic.Stepper(m, **options)
    out = np.empty((u.shape[0], x0.size))
    for t in range(u.shape[0]):
        d.ctrl[:] = u[t]
        sim.step(d)
        out[t] = _state(m, d)
    return out, sim.stats


def test_rollout_uses_the_models_plugin_config():
    m = mujoco.MjModel.from_xml_string(SCENE)
    assert mjcenic.Stepper(m).non_default_options() == {"accuracy": 1e-2, "max_step": 0.004}
    x, u = _inputs(m)
    res = mjcenic.rollout(m, None, x, u, nthread=2)
    assert res.errors == [None] * NBATCH
    for b in range(NBATCH):
        ref, stats = _loop(m, x[b], u[b])
        assert np.array_equal(res.state[b], ref), b  # bit for bit
        assert res.stats["steps"][b] == stats["steps"]
        assert res.stats["h_max"][b] <= 0.004
    # The config really matters here: the defaults give another trajectory.
    default, _ = _loop(m, x[0], u[0], accuracy=1e-3, max_step=0.1)
    assert not np.array_equal(res.state[0], default)


def test_keyword_options_override_the_config():
    m = mujoco.MjModel.from_xml_string(SCENE)
    x, u = _inputs(m)
    res = mjcenic.rollout(m, None, x[:1], u[:1], accuracy=1e-4)
    ref, stats = _loop(m, x[0], u[0], accuracy=1e-4)
    assert np.array_equal(res.state[0], ref)
    assert res.stats["h_max"][0] <= 0.004  # max_step still from the config

"""mjcenic: error-controlled, convex (ICF/CENIC) contact simulation for MuJoCo models.

    import mujoco, mjcenic
    m = mujoco.MjModel.from_xml_path("scene.xml")
    d = mujoco.MjData(m)
    sim = mjcenic.Stepper(m, accuracy=1e-3, mode="cenic")
    for _ in range(1000):
        sim.step(d)            # instead of mujoco.mj_step(m, d)
"""
import mujoco  # first: loads the libmujoco the extension shares

from . import _mujoco_check, _version
from ._version import MUJOCO_VERSION as BUILT_FOR_MUJOCO, __version__  # noqa: F401

_mujoco_check.check(mujoco, BUILT_FOR_MUJOCO, _version.BUILD_KIND, _version.SOURCE_DIR,
                    _version.BUILD_DIR)

from . import _mjcenic  # noqa: E402

from ._rollout import Rollout, RolloutResult, rollout, shutdown_persistent_pool  # noqa: E402

__all__ = ["Stepper", "rollout", "Rollout", "RolloutResult", "shutdown_persistent_pool",
           "load_model", "make_data",
           "option_keys", "option_table", "stat_table", "error_norm", "BUILT_FOR_MUJOCO",
           "__version__"]


def option_keys():
    """Names of all stepper options (the same keys as the MJCF plugin <config>)."""
    return list(_mjcenic.option_keys())


def option_table():
    """One dict per option: key, default (as MJCF text), expect (valid values), doc."""
    return list(_mjcenic.option_table())


def stat_table():
    """One dict per statistic of Stepper.stats: name, type (long or double), doc."""
    return list(_mjcenic.stat_table())


def error_norm(model, q_ref, q, v_ref=None, v=None, act_ref=None, act=None, kind="weighted",
               length_scale=0.0):
    """The stepper's error norm of the state difference (q, v, act) - (q_ref, v_ref, act_ref).

    kind: "weighted" (default: tangent-space qpos difference, translations divided
    by length_scale L, rotations in radians, infinity norm), "drake" (raw qpos) or
    "full_state" (weighted plus velocities / L) or "propagated" (weighted plus
    velocities times 1 s, the free-dof weight: outside a step there is no Hessian
    to shorten it, see docs/cenic-math.md §11.11). Activations, if given, count in
    every kind, each divided by its range. Velocities and activations that are not
    given count as equal. length_scale 0 takes the model's (Stepper.length_scale)."""
    return float(_mjcenic.error_norm(model, q_ref, q, v_ref, v, act_ref, act, kind,
                                     float(length_scale)))


def _check_plugin_text(path):
    """What a compiled model cannot show: an empty config value (MuJoCo stores
    it like an absent key) names the key here."""
    spec = mujoco.MjSpec.from_file(str(path))
    for p in spec.plugins:
        if p.plugin_name != "mjcenic":
            continue
        for key, value in dict(p.config).items():
            if value.strip() == "":
                raise ValueError(f"mjcenic plugin instance '{p.name}': option '{key}' has an "
                                 f"empty value (give a value or leave the key out)")


def load_model(path):
    """Loads an MJCF file and validates its mjcenic plugin configuration, if any.

    Raises ValueError naming the offending key for a bad or empty config value
    (MuJoCo itself rejects unknown keys, bad values and a second mjcenic
    instance at compile time, naming them)."""
    _check_plugin_text(path)
    model = mujoco.MjModel.from_xml_path(str(path))
    _mjcenic.validate_model_config(model)
    return model


def make_data(model, keyframe=None):
    """A new MjData at the named keyframe (default: the first one, else the
    default pose), forwarded. Raises ValueError for an unknown keyframe name."""
    d = mujoco.MjData(model)
    if keyframe is not None:
        k = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_KEY, keyframe)
        if k < 0:
            raise ValueError(f"no keyframe named '{keyframe}'")
        mujoco.mj_resetDataKeyframe(model, d, k)
    elif model.nkey > 0:
        mujoco.mj_resetDataKeyframe(model, d, 0)
    mujoco.mj_forward(model, d)
    return d


class Stepper:
    """An mjcenic stepper for one mujoco.MjModel.

    Options (keyword arguments, see option_keys()) override the model's
    mjcenic plugin <config>, which overrides the defaults. `data` optionally
    binds an MjData used when step()/advance_to() are called without one.

    `controller(model, data)`, if given, writes data.ctrl and/or
    data.qfrc_applied from the state; option controller_mode chooses how it
    enters the step: "implicit" (default: linearized per dof by finite
    differences at each attempt and integrated implicitly, paper §V-C),
    "explicit" (evaluated at the start of every convex solve) or
    "zero_order_hold" (once per step() call, like mjcb_control).

    step(), advance_to() and step_once() raise ValueError for bad input and
    RuntimeError when the step fails (e.g. step-size underflow), leaving the data
    at its last good state, and mujoco.FatalError for a MuJoCo fatal error inside
    the step (e.g. an arena too small for the contacts), leaving the data as it
    was before the call.

    The model may be edited between calls: an edit of an array the problem
    reads (geom_friction, body_mass, dof_damping, actuator_gainprm, ...; not
    meshes, textures, colours, names or user data) takes effect at the very
    next call in every mode, with or without dense output.

    A Stepper pickles (pickle, multiprocessing, Ray) by what built it: the
    model (an MjModel pickles as MuJoCo's binary model, MJB, which keeps the
    mjcenic plugin <config>; same MuJoCo version on both sides), the options
    given here, the controller (if any; it must be picklable) and the bound
    data (if any). The receiving side, which needs the same mjcenic, builds a
    new Stepper from them: same options, fresh statistics and step-size
    history, i.e. it steps exactly as Stepper(model, **options) does.
    """

    def __init__(self, model, data=None, controller=None, **options):
        if not isinstance(model, mujoco.MjModel):
            raise TypeError("mjcenic.Stepper: model must be a mujoco.MjModel")
        if data is not None and not isinstance(data, mujoco.MjData):
            raise TypeError("mjcenic.Stepper: data must be a mujoco.MjData")
        self._impl = _mjcenic._Stepper(model, options, controller)
        self._given = (dict(options), controller)
        self.model = model
        self.data = data

    def __reduce__(self):
        options, controller = self._given
        return (_rebuild_stepper, (self.model, self.data, controller, options))

    def _d(self, data):
        d = self.data if data is None else data
        if d is None:
            raise ValueError("mjcenic.Stepper: no MjData given and none bound")
        if not isinstance(d, mujoco.MjData):
            raise TypeError("mjcenic.Stepper: data must be a mujoco.MjData")
        return d

    def step(self, data=None, nstep=1):
        """Advances by model.opt.timestep (nstep times), like mujoco.mj_step:
        nstep is an integer (nstep <= 0 does nothing)."""
        d = self.data if data is None else data
        if d.__class__ is not mujoco.MjData:  # the checks, off the per-call path
            d = self._d(data)
        if nstep.__class__ is not int or not -2**31 <= nstep < 2**31:
            nstep = _int_arg("step", "nstep", nstep)
        self._impl.step(d, nstep)

    def advance_to(self, time, data=None):
        """Advances to `time` (a real number), ending exactly on it."""
        self._impl.advance_to(self._d(data), _real_arg("advance_to", "time", time))

    def step_once(self, data=None):
        """Takes one accepted step of the size the error controller chooses."""
        self._impl.step_once(self._d(data))

    def sample(self, times, data=None, progress=None):
        """Advances to times[-1] and returns the state at every time in `times`
        (ascending, none before data.time) as a dict of arrays time, qpos, qvel,
        act and step_size (the accepted step that covers each sample).

        Unlike calling advance_to() per sample, this never makes the integrator
        land on a sample: it takes its own steps (step_once) and interpolates
        inside each accepted step linearly in the tangent space, which is the
        step's own continuous extension (an implicit step moves q at the constant
        velocity v_{t+h}). Only the last step is shortened, to end exactly on
        times[-1]. ctrl and the
        other inputs are held for the whole call (zero-order hold).

        `progress(t)`, if given, is called with data.time after every accepted
        step (e.g. to update a progress bar)."""
        import numpy as np
        d = self._d(data)
        m = self.model
        times = np.asarray(times, dtype=float).reshape(-1)
        if times.size == 0:
            return {"time": times, "qpos": np.zeros((0, m.nq)), "qvel": np.zeros((0, m.nv)),
                    "act": np.zeros((0, m.na)), "step_size": np.zeros(0)}
        if not np.all(np.isfinite(times)) or np.any(np.diff(times) < 0) or times[0] < d.time:
            raise ValueError("mjcenic.Stepper.sample: times must be finite, ascending and not "
                             f"before data.time ({d.time})")
        n = times.size
        out = {"time": times.copy(), "qpos": np.empty((n, m.nq)), "qvel": np.empty((n, m.nv)),
               "act": np.empty((n, m.na)), "step_size": np.zeros(n)}
        dq = np.empty(m.nv)
        k = 0
        t_end = float(times[-1])
        while k < n:
            t0, q0, v0, a0 = d.time, d.qpos.copy(), d.qvel.copy(), d.act.copy()
            while k < n and times[k] == t0:  # samples at the current state
                out["qpos"][k], out["qvel"][k], out["act"][k] = q0, v0, a0
                out["step_size"][k] = self.stats["last_h"]
                k += 1
            if k == n:
                break
            if d.time + self.next_step >= t_end:  # the last step ends on times[-1]
                self._impl.advance_to(d, t_end)
            else:
                self._impl.step_once(d)
            t1 = d.time
            if progress is not None:
                progress(t1)
            mujoco.mj_differentiatePos(m, dq, 1.0, q0, d.qpos)
            while k < n and times[k] <= t1:
                s = (times[k] - t0) / (t1 - t0)
                q = q0.copy()
                mujoco.mj_integratePos(m, q, dq, s)
                out["qpos"][k] = q
                out["qvel"][k] = (1 - s) * v0 + s * d.qvel
                out["act"][k] = (1 - s) * a0 + s * d.act
                out["step_size"][k] = t1 - t0
                k += 1
        return out

    def __repr__(self):
        o = self.options
        return (f"<mjcenic.Stepper mode={o['mode']!r} accuracy={o['accuracy']:g} "
                f"nq={self.model.nq} nv={self.model.nv} "
                f"non_default_options={len(self.non_default_options())}>")

    def non_default_options(self):
        """{key: value} of the effective options that differ from their defaults
        (whether given here or in the model's mjcenic plugin <config>)."""
        o = self.options
        return {row["key"]: o[row["key"]] for row in _mjcenic.option_table()
                if row["key"] in o and not _is_default(o[row["key"]], row["default"])}

    @property
    def stats(self):
        """Statistics: steps, rejected_steps, h_min/h_median/h_max, solves, ..."""
        return self._impl.stats

    @property
    def options(self):
        return self._impl.options

    @property
    def warnings(self):
        """Unsupported or approximated MJCF features of the model."""
        return list(self._impl.warnings)

    @property
    def next_step(self):
        """The step size [s] the controller will try next."""
        return self._impl.next_step

    @property
    def length_scale(self):
        """Length scale L [m] of the weighted error norm."""
        return self._impl.length_scale


def _is_default(value, default_text):
    """Whether an effective option value equals its default, given as MJCF text."""
    if isinstance(value, bool):
        return value == (default_text.strip().lower() == "true")
    if isinstance(value, (int, float)):
        try:
            return float(value) == float(default_text)
        except ValueError:
            return False
    return str(value) == default_text


def _int_arg(method, name, value):
    """value as a C int, or TypeError as mujoco.mj_step gives for a non-integer
    (no truncation of 2.7, no parsing of '2')."""
    import operator
    try:
        n = operator.index(value)
    except TypeError:
        raise TypeError(f"mjcenic.Stepper.{method}: {name} must be an integer, got "
                        f"{value!r}") from None
    if not -2**31 <= n < 2**31:
        raise TypeError(f"mjcenic.Stepper.{method}: {name} must fit a C int, got {n}")
    return n


def _real_arg(method, name, value):
    """value as a float; TypeError for what is not a real number (no parsing of '0.1')."""
    import numbers
    if isinstance(value, (bool, str, bytes)) or not isinstance(value, numbers.Real):
        raise TypeError(f"mjcenic.Stepper.{method}: {name} must be a real number, got "
                        f"{value!r}")
    return float(value)


def _rebuild_stepper(model, data, controller, options):
    """Unpickling: a new Stepper from what built the pickled one (Stepper.__reduce__)."""
    return Stepper(model, data, controller, **options)

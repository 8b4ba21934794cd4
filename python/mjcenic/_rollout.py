"""mjcenic.rollout: many open-loop simulations at once, as mujoco.rollout.rollout runs them.

The loop itself is C++ (python/bindings.cc, RolloutPool; docs/architecture.md, "Batch
rollouts"): one thread per MjData, the GIL released, a fresh stepper per rollout, so every
rollout's result depends only on its own inputs and is bit-identical to a sequential loop of
``Stepper(model, **options).step(data)`` whatever the thread count. This module only normalizes
the arguments the way mujoco.rollout does (singleton expansion, inferred nbatch and nstep) and
dispatches to the threads (kept by a Rollout until close()) or to Ray (mjcenic.distributed).
"""
import atexit
import threading

import mujoco
import numpy as np

from . import _mjcenic

_CTRL = int(mujoco.mjtState.mjSTATE_CTRL)
_FULLPHYSICS = int(mujoco.mjtState.mjSTATE_FULLPHYSICS)
_USER = int(mujoco.mjtState.mjSTATE_USER)
BACKENDS = ("threads", "ray")


class RolloutResult(tuple):
    """``(state, sensordata)``, exactly what mujoco.rollout.rollout returns (so
    ``state, sensordata = mjcenic.rollout(...)`` works), plus the per-rollout statistics.

    state: (nbatch, nstep, nstate) in the mjSTATE_FULLPHYSICS layout (mj_getState);
    sensordata: (nbatch, nstep, nsensordata); stats: {name: array of nbatch} with every
    statistic of Stepper.stats for each rollout's own stepper, ``nstep_done`` (steps completed)
    and ``error`` (a list: None, or why the rollout stopped)."""

    def __new__(cls, state, sensordata, stats):
        self = super().__new__(cls, (state, sensordata))
        self.stats = stats
        return self

    def __reduce__(self):
        return (RolloutResult, (self[0], self[1], self.stats))

    @property
    def state(self):
        return self[0]

    @property
    def sensordata(self):
        return self[1]

    @property
    def errors(self):
        """Per rollout: None if it completed, else why it stopped."""
        return list(self.stats["error"])

    @property
    def failed(self):
        """Per rollout: True if it stopped early (its remaining rows repeat its last state)."""
        return np.array([e is not None for e in self.stats["error"]], dtype=bool)


def _as_array(name, x, ndim):
    if x is None:
        return None
    a = np.asarray(x, dtype=np.float64)
    if a.ndim > ndim:
        raise ValueError(f"mjcenic.rollout: {name} can have at most {ndim} dimensions, "
                         f"got shape {a.shape}")
    return a.reshape((1,) * (ndim - a.ndim) + a.shape)  # leading singleton dimensions


def _infer(dim, guess, what, **arrays):
    """The size along `dim` shared by the arrays (1 broadcasts), starting from `guess`."""
    value = guess
    for name, a in arrays.items():
        if a is None or a.shape[dim] == value:
            continue
        if value == 1:
            value = a.shape[dim]
        elif a.shape[dim] != 1:
            raise ValueError(f"mjcenic.rollout: {what} is {value} but {name} has "
                             f"{a.shape[dim]} along dimension {dim}")
    return value


def _output(name, a, shape):
    if a is None:
        return np.empty(shape, dtype=np.float64)
    if (not isinstance(a, np.ndarray) or a.dtype != np.float64 or a.shape != shape
            or not a.flags.c_contiguous or not a.flags.writeable):
        raise ValueError(f"mjcenic.rollout: {name} must be a writeable C-contiguous float64 "
                         f"array of shape {shape}")
    return a


def _models(model):
    models = [model] if isinstance(model, mujoco.MjModel) else list(model)
    if not models or not all(isinstance(m, mujoco.MjModel) for m in models):
        raise TypeError("mjcenic.rollout: model must be an MjModel or a sequence of them")
    return models


def _datas(data):
    if data is None:
        return []
    datas = [data] if isinstance(data, mujoco.MjData) else list(data)
    if not all(isinstance(d, mujoco.MjData) for d in datas):
        raise TypeError("mjcenic.rollout: data must be an MjData or a sequence of them")
    return datas


def _prepare(models, initial_state, control, control_spec, nstep, initial_warmstart, state,
             sensordata, chunk_size):
    """The arguments as the C++ loop takes them: shapes checked, singletons expanded, nbatch
    and nstep inferred, outputs allocated (or checked when given)."""
    control_spec = int(control_spec)
    if control_spec & ~_USER:
        raise ValueError("mjcenic.rollout: control_spec can only contain bits of mjSTATE_USER")
    if nstep is not None and (not isinstance(nstep, (int, np.integer)) or not 0 <= nstep < 2**31):
        raise ValueError(f"mjcenic.rollout: nstep must be an integer in [0, 2**31), got {nstep!r}")
    if chunk_size is not None and (not isinstance(chunk_size, (int, np.integer))
                                   or chunk_size < 1):
        raise ValueError(f"mjcenic.rollout: chunk_size must be an integer >= 1, got "
                         f"{chunk_size!r}")

    m0 = models[0]
    nstate = mujoco.mj_stateSize(m0, _FULLPHYSICS)
    ncontrol = mujoco.mj_stateSize(m0, control_spec)
    initial_state = _as_array("initial_state", initial_state, 2)
    initial_warmstart = _as_array("initial_warmstart", initial_warmstart, 2)
    control = _as_array("control", control, 3)
    for name, a, n in (("initial_state", initial_state, nstate),
                       ("initial_warmstart", initial_warmstart, m0.nv),
                       ("control", control, ncontrol)):
        if a is not None and a.shape[-1] != n:
            raise ValueError(f"mjcenic.rollout: trailing dimension of {name} must be {n}, "
                             f"got {a.shape[-1]}")
    outs = {"state": state, "sensordata": sensordata}
    out3 = {k: v for k, v in outs.items() if isinstance(v, np.ndarray) and v.ndim == 3}
    nbatch = _infer(0, len(models) if len(models) > 1 else 1, "nbatch",
                    initial_state=initial_state, initial_warmstart=initial_warmstart,
                    control=control, **out3)
    if len(models) > 1 and len(models) != nbatch:
        raise ValueError(f"mjcenic.rollout: nbatch is {nbatch} but {len(models)} models given")
    nstep = 0 if nstep == 0 else _infer(1, int(nstep or 1), "nstep", control=control, **out3)
    if nstep == 0:
        control = None
    models = models * nbatch if len(models) == 1 else models
    initial_state = np.ascontiguousarray(np.broadcast_to(initial_state, (nbatch, nstate)))
    if initial_warmstart is not None:
        initial_warmstart = np.ascontiguousarray(
            np.broadcast_to(initial_warmstart, (nbatch, m0.nv)))
    if control is not None:
        if control.shape[1] not in (1, nstep):
            raise ValueError(f"mjcenic.rollout: control has {control.shape[1]} steps, "
                             f"nstep is {nstep}")
        control = np.ascontiguousarray(np.broadcast_to(control, (nbatch, nstep, ncontrol)))
    state = _output("state", state, (nbatch, nstep, nstate))
    sensordata = _output("sensordata", sensordata, (nbatch, nstep, m0.nsensordata))
    return dict(models=models, nstep=nstep, control_spec=control_spec,
                initial_state=initial_state, initial_warmstart=initial_warmstart,
                control=control, state=state, sensordata=sensordata,
                chunk_size=min(int(chunk_size or 1), nbatch))


def _nthread(owner, nthread, minimum):
    if (not isinstance(nthread, (int, np.integer)) or isinstance(nthread, bool)
            or nthread < minimum):
        raise ValueError(f"{owner}: nthread must be an integer >= {minimum}, got {nthread!r}")
    return int(nthread)


_persistent = None  # the pool mjcenic.rollout(..., persistent_pool=True) keeps


def shutdown_persistent_pool():
    """Ends the threads that ``mjcenic.rollout(..., persistent_pool=True)`` keeps (also
    called at interpreter exit), as ``mujoco.rollout.shutdown_persistent_pool``."""
    global _persistent
    if _persistent is not None:
        _persistent.close()
    _persistent = None


atexit.register(shutdown_persistent_pool)


def rollout(model, data, initial_state, control=None, *, control_spec=_CTRL, skip_checks=False,
            nstep=None, initial_warmstart=None, state=None, sensordata=None, chunk_size=None,
            persistent_pool=False, nthread=None, backend="threads", address=None, **options):
    """Rolls out open-loop trajectories from initial states with mjcenic; the arguments and
    outputs of ``mujoco.rollout.rollout``.

    model: an MjModel, or a sequence of nbatch MjModels of the same sizes.
    data: an MjData, or a sequence of them (one per thread); None makes them.
    initial_state: ([nbatch or 1] x nstate), nstate = mj_stateSize(m, mjSTATE_FULLPHYSICS).
    control: ([nbatch or 1] x [nstep or 1] x ncontrol), ncontrol = mj_stateSize(m,
        control_spec); set with mj_setState before each step.
    nstep: steps per rollout (else inferred from control/state/sensordata). Each step advances
        by model.opt.timestep (Stepper.step, the mj_step contract) with as many internal
        steps as the accuracy needs, so controls mean what they mean for mujoco.rollout.
    initial_warmstart: ([nbatch or 1] x nv) qacc_warmstart (kept for compatibility; mjcenic's
        solver warm-starts itself).
    state, sensordata: optional output arrays, (nbatch x nstep x nstate / nsensordata).
    nthread: threads (default: len(data); MjData are made for missing ones).
    chunk_size: rollouts a thread takes at a time (default 1; assignment never changes results).
    persistent_pool: keep the threads (and, with data None, the MjData) for the next call
        with the same nthread, as mujoco's; shutdown_persistent_pool() ends them.
    backend: "threads" (default) or "ray" (tasks on a Ray cluster at `address`, or a local Ray
        started with mjcenic.distributed.init; needs ``pip install mjcenic[ray]``).
    options: stepper options (option_keys()), over the model's mjcenic plugin <config>.
    skip_checks: accepted for compatibility; the checks always run.

    As mujoco.rollout: inputs not in control_spec are reset before every rollout (ctrl and
    applied forces to zero, mocap poses and eq_active to the model's), and a rollout that
    raises a MuJoCo warning stops there. A rollout whose step fails (bad state, solver failure,
    MuJoCo fatal error) stops too, without stopping the others; its remaining rows repeat its
    last state and result.stats["error"] says why.

    Returns a RolloutResult: the tuple (state, sensordata) with .stats (per rollout)."""
    del skip_checks
    if backend not in BACKENDS:
        raise ValueError(f"mjcenic.rollout: backend must be one of {', '.join(BACKENDS)}, "
                         f"got {backend!r}")
    models, datas = _models(model), _datas(data)
    if backend == "ray":
        from . import distributed
        a = _prepare(models, initial_state, control, control_spec, nstep, initial_warmstart,
                     state, sensordata, chunk_size)
        st, sd, stats = distributed.rollout_ray(a["models"], a["initial_state"], a["control"],
                                                a["initial_warmstart"], a["nstep"],
                                                a["control_spec"], options, address=address,
                                                chunk_size=chunk_size)
        a["state"][...] = st
        a["sensordata"][...] = sd
        return RolloutResult(a["state"], a["sensordata"], stats)
    if address is not None:
        raise ValueError("mjcenic.rollout: address is for backend='ray'")
    nthread = _nthread("mjcenic.rollout", max(1, len(datas)) if nthread is None else nthread, 1)
    global _persistent
    if persistent_pool:
        if _persistent is not None and _persistent.nthread != nthread:
            shutdown_persistent_pool()
        if _persistent is None:
            _persistent = Rollout(nthread=nthread)
        pool = _persistent
    else:
        pool = Rollout(nthread=nthread)
    try:
        return pool.rollout(model, data, initial_state, control, control_spec=control_spec,
                            nstep=nstep, initial_warmstart=initial_warmstart, state=state,
                            sensordata=sensordata, chunk_size=chunk_size, **options)
    finally:
        if not persistent_pool:
            pool.close()


class Rollout:
    """``mujoco.rollout.Rollout`` for mjcenic: the same constructor, ``rollout()``,
    context manager and ``close()``, with stepper options as keyword arguments of
    ``rollout()``; results are those of ``mjcenic.rollout`` with the same arguments.

        with mjcenic.Rollout(nthread=4) as r:
            state, sensordata = r.rollout(m, None, x0, ctrl)

    nthread: threads (None or 0: the calling thread, as mujoco's). The threads live
    until close() (or the end of the ``with`` block); with ``data`` None the object
    also keeps one MjData per thread for the last model it ran. Every rollout gets a
    fresh stepper, which keeps its result a function of its own inputs
    (docs/architecture.md, "Batch rollouts"). One call runs at a time: a call from
    a second Python thread waits for the first."""

    def __init__(self, *, nthread=None):
        self.nthread = 0 if nthread is None else _nthread("mjcenic.Rollout", nthread, 0)
        self._impl = _mjcenic._RolloutPool(max(1, self.nthread))
        self._model = None   # the model the pooled MjData were made for
        self._datas = []
        self._lock = threading.Lock()  # guards _model and _datas

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc_val, exc_tb):
        self.close()

    def __repr__(self):
        closed = self._impl is None
        return f"<mjcenic.Rollout nthread={self.nthread}{' closed' if closed else ''}>"

    def close(self):
        """Waits for a running rollout(), ends the threads and frees the pooled MjData;
        rollout() afterwards raises RuntimeError."""
        impl, self._impl = self._impl, None
        if impl is not None:
            impl.close()
        with self._lock:
            self._model = None
            self._datas = []

    def _pool(self, model):
        m0 = model if isinstance(model, mujoco.MjModel) else next(iter(model), None)
        if not isinstance(m0, mujoco.MjModel):
            return None  # _models names the error
        with self._lock:
            if self._model is not m0:
                self._model = m0
                self._datas = [mujoco.MjData(m0) for _ in range(max(1, self.nthread))]
            return self._datas

    def rollout(self, model, data, initial_state, control=None, *, control_spec=_CTRL,
                skip_checks=False, nstep=None, initial_warmstart=None, state=None,
                sensordata=None, chunk_size=None, **options):
        """mjcenic.rollout on this object's threads (see there for the arguments); `data`,
        if given, is one MjData per thread, else the pooled ones are used. Returns a
        RolloutResult, the tuple (state, sensordata) with .stats."""
        del skip_checks
        impl = self._impl
        if impl is None:
            raise RuntimeError("mjcenic.Rollout: rollout requested after thread pool shutdown "
                               "(close() was called; make a new mjcenic.Rollout)")
        models = _models(model)
        datas = _datas(self._pool(model) if data is None else data)
        a = _prepare(models, initial_state, control, control_spec, nstep, initial_warmstart,
                     state, sensordata, chunk_size)
        nthread = min(impl.nthread, len(a["models"]))
        datas = datas[:nthread] + [mujoco.MjData(models[0]) for _ in range(nthread - len(datas))]
        stats = impl.rollout(a["models"], datas, a["nstep"], a["control_spec"],
                             a["initial_state"], a["initial_warmstart"], a["control"],
                             a["state"], a["sensordata"], options, a["chunk_size"])
        stats["accepted_steps"] = stats["steps"]  # as Stepper.stats
        return RolloutResult(a["state"], a["sensordata"], stats)

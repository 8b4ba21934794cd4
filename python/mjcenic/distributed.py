"""Scale-out on Ray (optional: ``pip install mjcenic[ray]``).

    import mjcenic, mjcenic.distributed
    mjcenic.distributed.init()                      # local Ray; or init("ray://host:10001")
    state, sensordata = mjcenic.rollout(m, None, x0, ctrl, backend="ray")
    results = mjcenic.distributed.map_tasks(run_one, [(path, acc) for ...])   # any picklable work

Ray is imported only here and only when used. Rollouts travel as tasks of ``chunk_size``
rollouts each; a task rebuilds nothing but an MjData: the MjModel is sent once per call
(``ray.put``; MjModel pickles as MuJoCo's binary model, MJB, which keeps the mjcenic plugin
<config>), and the task runs mjcenic.rollout on one thread of its worker. A rollout's result
depends only on its inputs (fresh stepper per rollout, docs/architecture.md, "Batch rollouts"),
so the Ray path returns the threaded path's arrays bit for bit when the workers run the same
mjcenic and MuJoCo builds.

Workers must be able to import this mjcenic (same version, same MuJoCo): on a local Ray started
by init() the package's directory is put on the workers' PYTHONPATH; on a cluster, install the
same wheel on every node (or pass runtime_env to init).
"""
import math
import os

import numpy as np

_RAY_MISSING = ("mjcenic: the Ray backend needs Ray, which is not installed; install it with "
                "`pip install 'mjcenic[ray]'` (or `pip install ray`)")


def _ray():
    try:
        import ray
    except ImportError as e:
        raise ImportError(_RAY_MISSING) from e
    return ray


def _package_path():
    """The directory holding the mjcenic package (for the workers' PYTHONPATH)."""
    return os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def init(address=None, **ray_init_kwargs):
    """Connects to the Ray cluster at `address` or, without one, starts a local Ray (kwargs go
    to ray.init, e.g. num_cpus=2). Does nothing if Ray is already initialized in this process.
    The workers get this mjcenic's directory on their PYTHONPATH (merged into any runtime_env
    given). Returns the ray module."""
    ray = _ray()
    if ray.is_initialized():
        return ray
    runtime_env = dict(ray_init_kwargs.pop("runtime_env", None) or {})
    env_vars = dict(runtime_env.get("env_vars", {}))
    paths = [_package_path()] + [p for p in (env_vars.get("PYTHONPATH")
                                              or os.environ.get("PYTHONPATH", "")).split(os.pathsep)
                                 if p]
    env_vars["PYTHONPATH"] = os.pathsep.join(dict.fromkeys(paths))
    runtime_env["env_vars"] = env_vars
    ray_init_kwargs.setdefault("include_dashboard", False)
    ray_init_kwargs.setdefault("log_to_driver", True)
    ray.init(address=address, runtime_env=runtime_env, **ray_init_kwargs)
    return ray


def _rollout_task(models, initial_state, control, initial_warmstart, nstep, control_spec,
                  options):
    """One Ray task: rollouts on this worker's one thread (the threaded path, nthread=1)."""
    import mjcenic
    if not isinstance(models, list):
        models = [models]
    res = mjcenic.rollout(models if len(models) > 1 else models[0], None, initial_state,
                          control, control_spec=control_spec, nstep=nstep,
                          initial_warmstart=initial_warmstart, nthread=1, **options)
    return res.state, res.sensordata, res.stats


def _cluster_cpus(ray):
    return max(1, int(ray.cluster_resources().get("CPU", 1)))


def rollout_ray(models, initial_state, control, initial_warmstart, nstep, control_spec, options,
                address=None, chunk_size=None):
    """The Ray backend of mjcenic.rollout, on normalized arguments (models: one per rollout,
    arrays already (nbatch, ...)). Returns (state, sensordata, stats) as the threaded path.
    chunk_size: rollouts per task (default: about four tasks per cluster CPU)."""
    ray = init(address)
    nbatch = len(models)
    if chunk_size is None:
        chunk_size = max(1, math.ceil(nbatch / (4 * _cluster_cpus(ray))))
    task = ray.remote(num_cpus=1)(_rollout_task)
    # Every distinct model goes to the object store once.
    refs = {}
    for m in models:
        if id(m) not in refs:
            refs[id(m)] = ray.put(m)
    single = len(refs) == 1
    futures = []
    for begin in range(0, nbatch, chunk_size):
        end = min(nbatch, begin + chunk_size)
        ms = refs[id(models[0])] if single else models[begin:end]
        futures.append(task.remote(
            ms, initial_state[begin:end], None if control is None else control[begin:end],
            None if initial_warmstart is None else initial_warmstart[begin:end], nstep,
            control_spec, dict(options)))
    parts = ray.get(futures)
    state = np.concatenate([p[0] for p in parts], axis=0)
    sensordata = np.concatenate([p[1] for p in parts], axis=0)
    stats = {}
    for key in parts[0][2]:
        if key == "error":
            stats[key] = [e for p in parts for e in p[2][key]]
        else:
            stats[key] = np.concatenate([np.asarray(p[2][key]) for p in parts])
    return state, sensordata, stats


def _apply(fn, item):
    return fn(item)


def map_tasks(fn, items, address=None, num_cpus=1, progress=None):
    """``[fn(item) for item in items]``, each call a Ray task (on the cluster at `address`,
    else the Ray of this process, else a new local Ray), results in the order of `items`.

    For ``mjcenic compare/sweep --ray``: fn must be picklable (a module-level function, e.g.
    one model × accuracy run) and items picklable (model paths readable by the workers, or
    MjModel objects, which pickle as MJB). progress(done, total), if given, is called as
    results arrive. An exception in a task is raised here (ray.exceptions.RayTaskError wraps
    the worker's traceback)."""
    ray = init(address)
    items = list(items)
    remote = ray.remote(num_cpus=num_cpus)(_apply)
    fn_ref = ray.put(fn)
    futures = [remote.remote(fn_ref, item) for item in items]
    if progress is not None:
        pending, done = list(futures), 0
        while pending:
            ready, pending = ray.wait(pending, num_returns=1)
            done += len(ready)
            progress(done, len(futures))
    return ray.get(futures)

"""The `mjcenic` command: one argparse tree of subcommands.

    mjcenic run MODEL.xml [--duration T] [--sample DT] [--out traj.npz|traj.csv] [--json OUT]
    mjcenic view MODEL.xml [--slowdown K] [--headless OUT.png]
    mjcenic compare PATH... [--json OUT] [--markdown OUT] [--plots DIR] [--ray [ADDRESS]]
    mjcenic install-plugin [--dir DIR] [--symlink] [--uninstall]
    mjcenic --version | --help | COMMAND --help

Stepper flags (--mode, --accuracy, --max-step, --option KEY=VALUE) override the
model's mjcenic plugin <config> only when given. Flags are never abbreviated
(--plot is an error, not --plots). Arguments are checked before any work.
Progress bars (tqdm) go to stderr and are off when stderr is not a terminal.
"""
import argparse
import json
import os
import sys
import time

from . import _cliutil


def load_or_report(path, keyframe, prog):
    """(model, data) at the keyframe, or None after printing why to stderr."""
    import mjcenic
    try:
        m = mjcenic.load_model(path)
        return m, mjcenic.make_data(m, keyframe)
    except Exception as e:  # MuJoCo's compile errors, bad mjcenic config, unknown keyframe
        print(f"{prog}: could not load {path}: {e}", file=sys.stderr)
        return None


def make_stepper_or_report(model, args, prog):
    """mjcenic.Stepper with the options given on the command line, or None after
    printing the option error (an unknown value, a bad combination)."""
    import mjcenic
    try:
        return mjcenic.Stepper(model, **_cliutil.stepper_options(args))
    except (ValueError, TypeError) as e:
        print(f"{prog}: {e}", file=sys.stderr)
        return None


# ----------------------------------------------------------------------------- run

MAX_SAMPLES = 10_000_000


def _add_run(sub):
    p = sub.add_parser(
        "run", allow_abbrev=False, help="simulate a model, write its trajectory",
        description="Simulate MODEL with mjcenic from a keyframe, ctrl held at its start "
                    "values. The integrator takes its own steps; samples every --sample "
                    "seconds are interpolated inside them (Stepper.sample).")
    p.add_argument("model")
    p.add_argument("--duration", type=_cliutil.positive, default=1.0,
                   help="simulated time [s] (1.0)")
    p.add_argument("--keyframe", default=None, help="keyframe name (default: the first one)")
    p.add_argument("--sample", type=_cliutil.positive, default=0.01,
                   help="output interval [s] (0.01)")
    p.add_argument("--out", default=None,
                   help="trajectory file, .npz (arrays time, qpos, qvel, act, ctrl, "
                        "step_size, state, and qpos_names ... ctrl_names) or .csv (one "
                        "column per scalar, named after the joints and actuators: "
                        "qpos:hinge, qpos:box.qw, qvel:box.vx, ctrl:motor)")
    p.add_argument("--json", dest="json_out", default=None, metavar="OUT",
                   help="write the statistics and the effective options as JSON")
    _cliutil.add_stepper_args(p)
    p.set_defaults(func=run)
    return p


def _check_output_path(path, exts, flag, prog):
    """None if `path` can be written (extension, existing directory), else the error."""
    if exts and not any(path.endswith(e) for e in exts):
        return f"{prog}: {flag} must end in {' or '.join(exts)}"
    parent = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(parent):
        return f"{prog}: {flag}: directory {parent} does not exist"
    if not os.access(parent, os.W_OK):
        return f"{prog}: {flag}: directory {parent} is not writable"
    return None


def _full_physics_states(m, d, traj):
    """Rows in MuJoCo's mjSTATE_FULLPHYSICS layout (what mujoco.rollout returns as
    `state`): time, qpos, qvel, act from the samples; the rest (mocap, plugin
    state, ...) as in `d`, which holds them fixed during the run."""
    import mujoco
    import numpy as np
    spec = mujoco.mjtState.mjSTATE_FULLPHYSICS
    scratch = mujoco.MjData(m)
    mujoco.mj_copyData(scratch, m, d)
    out = np.empty((len(traj["time"]), mujoco.mj_stateSize(m, spec)))
    for i in range(len(traj["time"])):
        scratch.time = traj["time"][i]
        scratch.qpos[:] = traj["qpos"][i]
        scratch.qvel[:] = traj["qvel"][i]
        scratch.act[:] = traj["act"][i]
        mujoco.mj_getState(m, scratch, out[i], spec)
    return out


_QPOS_PARTS = {0: (".x", ".y", ".z", ".qw", ".qx", ".qy", ".qz"),  # mjJNT_FREE
               1: (".qw", ".qx", ".qy", ".qz")}                       # mjJNT_BALL
_QVEL_PARTS = {0: (".vx", ".vy", ".vz", ".wx", ".wy", ".wz"), 1: (".wx", ".wy", ".wz")}


def column_names(m):
    """{"qpos", "qvel", "act", "ctrl"}: one name per entry, after MuJoCo's joint and
    actuator names (unnamed ones: joint<i>, actuator<i>). A hinge or slide joint's
    entry is its name; free and ball joints add .x .y .z (position), .qw .qx .qy .qz
    (quaternion), .vx .vy .vz (linear) and .wx .wy .wz (angular velocity)."""
    import mujoco

    def name(obj, i, kind):
        return mujoco.mj_id2name(m, obj, i) or f"{kind}{i}"
    qpos, qvel = [], []
    for j in range(m.njnt):
        n = name(mujoco.mjtObj.mjOBJ_JOINT, j, "joint")
        t = int(m.jnt_type[j])
        qpos += [n + s for s in _QPOS_PARTS.get(t, ("",))]
        qvel += [n + s for s in _QVEL_PARTS.get(t, ("",))]
    act = [""] * m.na
    for a in range(m.nu):
        for k in range(m.actuator_actnum[a]):
            n = name(mujoco.mjtObj.mjOBJ_ACTUATOR, a, "actuator")
            act[m.actuator_actadr[a] + k] = n if m.actuator_actnum[a] == 1 else f"{n}.{k}"
    ctrl = [name(mujoco.mjtObj.mjOBJ_ACTUATOR, a, "actuator") for a in range(m.nu)]
    return {"qpos": qpos, "qvel": qvel, "act": act, "ctrl": ctrl}


def run(a, prog="mjcenic run"):
    import numpy as np

    for path, exts, flag in ((a.out, (".npz", ".csv"), "--out"),
                             (a.json_out, (), "--json")):
        if path:
            err = _check_output_path(path, exts, flag, prog)
            if err:
                print(err, file=sys.stderr)
                return 2
    n = max(1, int(round(a.duration / a.sample)))
    if n > MAX_SAMPLES:
        print(f"{prog}: --duration / --sample asks for {n} samples (more than "
              f"{MAX_SAMPLES}); raise --sample", file=sys.stderr)
        return 2
    loaded = load_or_report(a.model, a.keyframe, prog)
    if loaded is None:
        return 1
    m, d = loaded
    sim = make_stepper_or_report(m, a, prog)
    if sim is None:
        return 2
    # Samples are interpolated inside the integrator's own steps
    # (Stepper.sample): the output interval does not cap the step.
    grid = np.minimum(a.duration, np.arange(1, n + 1) * a.sample)
    t0 = d.time
    rows = {"time": [np.array([t0])], "qpos": [d.qpos[None].copy()], "qvel": [d.qvel[None].copy()],
            "act": [d.act[None].copy()], "step_size": [np.zeros(1)]}
    start = time.perf_counter()
    try:
        # One sample() call: the integrator's steps are never cut at a chunk end.
        with _cliutil.progress(total=round(a.duration, 9), desc=prog, unit="sim s",
                               bar_format="{l_bar}{bar}| {n:.3g}/{total:.3g} s simulated "
                                          "[{elapsed}<{remaining}]") as bar:
            done = [0.0]

            def tick(t):
                if t - t0 - done[0] >= 1e-3 * a.duration or t - t0 >= a.duration:
                    bar.update(t - t0 - done[0])
                    done[0] = t - t0
            out = sim.sample(t0 + grid, d, progress=tick)
        for key in rows:
            rows[key].append(out[key])
    except (RuntimeError, ValueError) as e:
        print(f"{prog}: the run stopped at t = {d.time:.6g} s: {e}", file=sys.stderr)
        return 1
    wall = time.perf_counter() - start
    st = sim.stats
    print(f"{a.model}: {a.duration:g} s in {wall:.3f} s ({a.duration / max(wall, 1e-12):.1f}x real "
          f"time), {st['steps']} steps ({st['rejected_steps']} rejected), h min/median/max "
          f"{st['h_min']:.3g}/{st['h_median']:.3g}/{st['h_max']:.3g} s")
    for w in sim.warnings:
        print("warning:", w)
    if a.json_out:
        with open(a.json_out, "w") as f:
            json.dump({"model": a.model, "duration": a.duration, "wall_time": wall,
                       "stats": dict(st), "options": dict(sim.options),
                       "warnings": list(sim.warnings)}, f, indent=1)
    if a.out:
        traj = {key: np.concatenate(v) for key, v in rows.items()}
        traj["ctrl"] = np.repeat(d.ctrl[None], len(traj["time"]), axis=0)  # held (zero-order)
        labels = column_names(m)
        if a.out.endswith(".npz"):
            traj["state"] = _full_physics_states(m, d, traj)
            for key, names in labels.items():  # e.g. qpos_names[i] names qpos[:, i]
                traj[f"{key}_names"] = np.array(names, dtype=str)
            np.savez(a.out, **traj)
        else:
            cols, names = [], []
            for key in ("time", "step_size", "qpos", "qvel", "act", "ctrl"):
                x = traj[key].reshape(len(traj["time"]), -1)
                cols.append(x)
                names += [key] if key in ("time", "step_size") else \
                    [f"{key}:{n}" for n in labels[key]]
            np.savetxt(a.out, np.column_stack(cols), delimiter=",", header=",".join(names),
                       comments="")
    return 0


# ----------------------------------------------------------------------------- tree

def _version():
    import mujoco
    from . import BUILT_FOR_MUJOCO, __version__
    return f"mjcenic {__version__} (MuJoCo {mujoco.__version__}, built against {BUILT_FOR_MUJOCO})"


def parser():
    """The whole `mjcenic` argument tree (one --help per level)."""
    from . import compare, install_plugin, viewer
    p = argparse.ArgumentParser(
        prog="mjcenic", allow_abbrev=False,
        description="Error-controlled convex (CENIC) contact simulation for MuJoCo models.",
        epilog="`mjcenic COMMAND --help` describes a command.")
    p.add_argument("--version", action="version", version=_version())
    sub = p.add_subparsers(dest="command", metavar="COMMAND", required=True)
    _add_run(sub)
    viewer.add_parser(sub)
    compare.add_parser(sub)
    install_plugin.add_parser(sub)
    return p


def main(argv=None):
    argv = sys.argv[1:] if argv is None else list(argv)
    args = parser().parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    raise SystemExit(main())

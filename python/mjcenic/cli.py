"""The `mjcenic` command: run, view, compare.

    mjcenic run MODEL.xml [--duration T] [--out traj.npz|traj.csv] [--mode cenic] [--accuracy 1e-3]
    mjcenic view MODEL.xml [--accuracy 1e-3] [--mode cenic]
    mjcenic compare PATH... [--json OUT] [--markdown OUT] [--plots DIR]
    mjcenic --version
"""
import argparse
import sys
import time


def _progress(frac, start, label="", stream=sys.stderr):
    if not stream.isatty() and frac < 1.0 and int(frac * 20) == int((frac - 1e-9) * 20):
        return
    width = 30
    n = int(round(frac * width))
    elapsed = time.perf_counter() - start
    stream.write(f"\r{label} [{'#' * n}{'.' * (width - n)}] {100 * frac:5.1f}% {elapsed:6.1f}s")
    if frac >= 1.0:
        stream.write("\n")
    stream.flush()


def _stepper_options(args):
    opts = {"mode": args.mode, "accuracy": args.accuracy}
    if args.max_step:
        opts["max_step"] = args.max_step
    for kv in args.option or []:
        if "=" not in kv:
            raise SystemExit(f"mjcenic: --option expects KEY=VALUE, got '{kv}'")
        k, v = kv.split("=", 1)
        opts[k] = v
    return opts


def load_or_report(path, keyframe, prog):
    """(model, data) at the keyframe, or None after printing why to stderr."""
    import mjcenic
    try:
        m = mjcenic.load_model(path)
        return m, mjcenic.make_data(m, keyframe)
    except Exception as e:  # MuJoCo's compile errors, bad mjcenic config, unknown keyframe
        print(f"{prog}: could not load {path}: {e}", file=sys.stderr)
        return None


def _add_stepper_args(p):
    p.add_argument("--mode", default="cenic", choices=["fixed", "cenic", "trapezoid"])
    p.add_argument("--accuracy", type=float, default=1e-3)
    p.add_argument("--max-step", type=float, default=0.0)
    p.add_argument("--option", action="append", metavar="KEY=VALUE",
                   help="any stepper option (see mjcenic.option_keys())")


def run(argv):
    import mujoco
    import numpy as np

    import mjcenic

    p = argparse.ArgumentParser(prog="mjcenic run", description="Simulate a model with mjcenic.")
    p.add_argument("model")
    p.add_argument("--duration", type=float, default=1.0)
    p.add_argument("--keyframe", default=None, help="keyframe name (default: the first one)")
    p.add_argument("--sample", type=float, default=0.01, help="output interval [s]")
    p.add_argument("--out", default=None, help="trajectory file: .npz or .csv")
    _add_stepper_args(p)
    a = p.parse_args(argv)
    if a.out and not (a.out.endswith(".npz") or a.out.endswith(".csv")):
        print("mjcenic run: --out must end in .npz or .csv", file=sys.stderr)
        return 2
    if not (a.sample > 0) or not (a.duration > 0):
        print("mjcenic run: --duration and --sample must be > 0", file=sys.stderr)
        return 2
    loaded = load_or_report(a.model, a.keyframe, "mjcenic run")
    if loaded is None:
        return 1
    m, d = loaded
    sim = mjcenic.Stepper(m, **_stepper_options(a))
    # Samples are interpolated inside the integrator's own steps
    # (Stepper.sample): the output interval does not cap the step.
    n = max(1, int(round(a.duration / a.sample)))
    grid = np.minimum(a.duration, np.arange(1, n + 1) * a.sample)
    t0 = d.time
    rows = {"time": [np.array([t0])], "qpos": [d.qpos[None].copy()], "qvel": [d.qvel[None].copy()],
            "act": [d.act[None].copy()], "step_size": [np.zeros(1)]}
    start = time.perf_counter()
    chunk = max(1, n // 50)
    for i in range(0, n, chunk):
        out = sim.sample(t0 + grid[i:i + chunk], d)
        for key in rows:
            rows[key].append(out[key])
        if time.perf_counter() - start > 2.0:
            _progress(min(n, i + chunk) / n, start, "mjcenic run")
    wall = time.perf_counter() - start
    st = sim.stats
    print(f"{a.model}: {a.duration:g} s in {wall:.3f} s ({a.duration / max(wall, 1e-12):.1f}x real "
          f"time), {st['steps']} steps ({st['rejected_steps']} rejected), h min/median/max "
          f"{st['h_min']:.3g}/{st['h_median']:.3g}/{st['h_max']:.3g} s")
    for w in sim.warnings:
        print("warning:", w)
    if a.out:
        traj = {key: np.concatenate(v) for key, v in rows.items()}
        traj["ctrl"] = np.repeat(d.ctrl[None], len(traj["time"]), axis=0)  # held (zero-order)
        if a.out.endswith(".npz"):
            np.savez(a.out, **traj)
        else:
            cols, names = [], []
            for key in ("time", "step_size", "qpos", "qvel", "act", "ctrl"):
                x = traj[key].reshape(len(traj["time"]), -1)
                cols.append(x)
                names += [key] if key in ("time", "step_size") else \
                    [f"{key}{i}" for i in range(x.shape[1])]
            np.savetxt(a.out, np.column_stack(cols), delimiter=",", header=",".join(names),
                       comments="")
    return 0


def main(argv=None):
    argv = sys.argv[1:] if argv is None else list(argv)
    if not argv or argv[0] in ("-h", "--help"):
        print(__doc__)
        return 0 if argv else 2
    if argv[0] == "--version":
        import mujoco
        from . import BUILT_FOR_MUJOCO, __version__
        print(f"mjcenic {__version__} (MuJoCo {mujoco.__version__}, built against {BUILT_FOR_MUJOCO})")
        return 0
    cmd, rest = argv[0], argv[1:]
    if cmd == "run":
        return run(rest)
    if cmd == "view":
        from . import viewer
        return viewer.main(rest)
    if cmd == "compare":
        from . import compare
        return compare.main(rest)
    print(f"mjcenic: unknown command '{cmd}' (run, view, compare)", file=sys.stderr)
    return 2


if __name__ == "__main__":
    raise SystemExit(main())

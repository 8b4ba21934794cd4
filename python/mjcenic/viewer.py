"""Watch a model stepped by mjcenic in MuJoCo's own (passive) viewer.

    mjcenic view MODEL.xml [--accuracy 1e-3] [--mode cenic]
    python -m mjcenic.viewer MODEL.xml

Keys: '[' tighter accuracy (÷10), ']' looser accuracy (×10), 'M' toggle
mj_step / mjcenic for a side-by-side feel, space pause. The overlay shows the
stepper, accuracy, current step size, real-time rate and rejected steps.

`--headless OUT.png` renders one offscreen frame after stepping instead of
opening a window (used by the tests; needs MUJOCO_GL=egl or osmesa).
"""
import argparse
import os
import sys
import time

import mujoco

import mjcenic


class Session:
    """Stepping state shared by the window loop and the headless renderer."""

    def __init__(self, model, data, mode, accuracy, options=None):
        self.m, self.d = model, data
        self.mode, self.accuracy = mode, accuracy
        self.options = dict(options or {})
        self.use_mjstep = False
        self.paused = False
        self.rate = 0.0
        self._make()

    def _make(self):
        self.sim = mjcenic.Stepper(self.m, mode=self.mode, accuracy=self.accuracy, **self.options)

    def key(self, keycode):
        c = chr(keycode) if 0 <= keycode < 0x110000 else ""
        if c == "[":
            self.accuracy = max(self.accuracy / 10, 1e-8)
            self._make()
        elif c == "]":
            self.accuracy = min(self.accuracy * 10, 1.0)
            self._make()
        elif c in ("M", "m"):
            self.use_mjstep = not self.use_mjstep
        elif c == " ":
            self.paused = not self.paused

    def step(self):
        """Advances by one model time step; returns the wall time it took."""
        t0 = time.perf_counter()
        if self.use_mjstep:
            mujoco.mj_step(self.m, self.d)
        else:
            self.sim.step(self.d)
        return time.perf_counter() - t0

    def overlay(self):
        st = self.sim.stats
        who = "mj_step" if self.use_mjstep else f"mjcenic {self.mode}"
        left = "stepper\naccuracy\nstep size\nreal-time\nrejected\ntime"
        right = (f"{who}\n{self.accuracy:.0e}\n{st['last_h']:.2e} s\n{self.rate:.2f}x\n"
                 f"{st['rejected_steps']}\n{self.d.time:.3f} s")
        return left, right


def render_headless(session, seconds, out_png, width=640, height=480):
    """Steps `seconds` of simulated time and writes one rendered frame; returns the image."""
    import numpy as np

    n = int(round(seconds / session.m.opt.timestep))
    for _ in range(n):
        session.step()
    with mujoco.Renderer(session.m, height, width) as r:
        r.update_scene(session.d)
        img = r.render()
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        plt.imsave(out_png, img)
    except ImportError:  # pragma: no cover
        np.save(out_png + ".npy", img)
    return img


def main(argv=None):
    p = argparse.ArgumentParser(prog="mjcenic view", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("model")
    p.add_argument("--mode", default="cenic", choices=["fixed", "cenic", "trapezoid"])
    p.add_argument("--accuracy", type=float, default=1e-3)
    p.add_argument("--keyframe", default=None)
    p.add_argument("--headless", metavar="OUT.png", default=None,
                   help="render one offscreen frame instead of opening the viewer")
    p.add_argument("--seconds", type=float, default=0.5, help="simulated time for --headless")
    p.add_argument("--duration", type=float, default=0.0,
                   help="close the viewer after this much simulated time (0: run until closed)")
    a = p.parse_args(argv)
    from .cli import load_or_report
    loaded = load_or_report(a.model, a.keyframe, "mjcenic view")
    if loaded is None:
        return 1
    m, d = loaded
    s = Session(m, d, a.mode, a.accuracy)
    if a.headless:
        render_headless(s, a.seconds, a.headless)
        print(f"wrote {a.headless} at t = {d.time:.3f} s")
        return 0

    import mujoco.viewer as mjviewer

    with mjviewer.launch_passive(m, d, key_callback=s.key) as v:
        while v.is_running() and not (a.duration > 0 and d.time >= a.duration):
            frame_start = time.perf_counter()
            wall = 0.0
            if not s.paused:
                # Step until the simulated time catches up with one frame (~60 Hz).
                target = d.time + max(m.opt.timestep, 1.0 / 60)
                while d.time < target - 1e-12:
                    wall += s.step()
                s.rate = (1.0 / 60) / max(wall, 1e-9) if wall > 0 else 0.0
            left, right = s.overlay()
            v.set_texts((None, mujoco.mjtGridPos.mjGRID_TOPLEFT, left, right))
            v.sync()
            rest = 1.0 / 60 - (time.perf_counter() - frame_start)
            if rest > 0:
                time.sleep(rest)
    print(f"viewer closed at t = {d.time:.3f} s", flush=True)
    # MuJoCo's GLFW viewer thread can crash during interpreter teardown on
    # virtual displays (seen with plain mj_step too); the session is over, so
    # leave without running Python's finalizers.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


if __name__ == "__main__":
    raise SystemExit(main())

"""`mjcenic compare --ray` and `scripts/sweep_shared_models.py --ray`: the per-model work as Ray
tasks on a local Ray (num_cpus=2) gives the local path's records, timings aside."""
import argparse
import json
import os
import subprocess
import sys
import types

import numpy as np

import pytest

from conftest import BUILD, ROOT, SHARED_MODELS, python_env

PINCH = ROOT / "models" / "pinch_grasp.xml"
ARM_REL = "menagerie/kuka_iiwa_14/scene.xml"
ARM = SHARED_MODELS / ARM_REL
# Wall-clock fields: the only ones allowed to differ between the two paths.
COMPARE_TIMING = {"wall_time", "setup_time", "real_time_rate"}


def _sweep_timing(record):
    """mjcenic-run's wall-clock fields: wall_time, mjstep_wall_time, time_* (per phase)."""
    return {k for k in record if k.endswith("wall_time") or k.startswith("time_")}


def _compare_report(tmp_path, name, *extra):
    import mjcenic.compare
    out = tmp_path / f"{name}.json"
    rc = mjcenic.compare.main([str(PINCH), str(ARM), "--duration", "0.05",
                               "--accuracies", "1e-2,1e-3", "--json", str(out), *extra])
    assert rc == 0
    return json.loads(out.read_text())


def _without(record, keys):
    return {k: v for k, v in record.items() if k not in keys}


@pytest.mark.shared_models
def test_compare_ray_equals_local(tmp_path, capsys):
    ray = pytest.importorskip("ray")
    if not ARM.exists():
        pytest.skip(f"shared model missing: {ARM}")
    import mjcenic.distributed as dist
    local = _compare_report(tmp_path, "local")
    started = not ray.is_initialized()
    dist.init(num_cpus=2)
    try:
        on_ray = _compare_report(tmp_path, "ray", "--ray")
    finally:
        if started:
            ray.shutdown()
    assert [r["model"] for r in on_ray["rows"]] == [r["model"] for r in local["rows"]]
    # two references (each simulator its own), mj_step x2, mjcenic x2
    assert len(local["rows"]) == 2 * (2 + 2 + 2)
    for a, b in zip(on_ray["rows"], local["rows"]):
        assert a["error"] is None and a["steps"] > 0, a
        # Errors, penetration, energy, steps: the same runs on the workers, bit for bit.
        assert _without(a, COMPARE_TIMING) == _without(b, COMPARE_TIMING)
        assert a["trajectory_error"] == b["trajectory_error"]
        assert a["max_penetration"] == b["max_penetration"]
        assert a["steps"] == b["steps"]
    assert on_ray["metadata"] == local["metadata"]


def test_compare_ray_arguments_checked_before_work(tmp_path, monkeypatch, capsys):
    import mjcenic.compare as compare
    # A model path right after --ray is a PATH, not an address. This part checks the
    # argument logic alone: where Ray is not installed (it is an extra, and `make deps`
    # does not install it), an empty module stands in for it.
    try:
        import ray  # noqa: F401
    except ImportError:
        monkeypatch.setitem(sys.modules, "ray", types.ModuleType("ray"))
    args = argparse.Namespace(ray=str(PINCH), paths=[], json_out=None, markdown=None,
                              plots=None)
    assert compare._check_args(args) is None
    assert args.paths == [str(PINCH)] and args.ray == ""
    # Without Ray: one line naming the extra, exit 2, no report written.
    monkeypatch.setitem(sys.modules, "ray", None)
    out = tmp_path / "r.json"
    assert compare.main([str(PINCH), "--ray", "--json", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "pip install 'mjcenic[ray]'" in err and "--ray" in err
    assert not out.exists()


def _sweep(tmp_path, name, *extra):
    out = tmp_path / name
    proc = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "sweep_shared_models.py"), "--duration", "0.05",
         "--models", f"{ARM_REL},menagerie/robotiq_2f85/scene.xml", "--out", str(out),
         "--build", str(BUILD), *extra],
        capture_output=True, text=True, timeout=600, cwd=tmp_path,
        env=dict(python_env(), MPLBACKEND="Agg"))
    assert proc.returncode == 0, proc.stderr[-2000:]
    return json.loads((out / "sweep.json").read_text())


@pytest.mark.shared_models
def test_sweep_ray_equals_local(tmp_path):
    pytest.importorskip("ray")
    for rel in (ARM_REL, "menagerie/robotiq_2f85/scene.xml"):
        if not (SHARED_MODELS / rel).exists():
            pytest.skip(f"shared model missing: {rel}")
    local = _sweep(tmp_path, "local", "--jobs", "2")
    on_ray = _sweep(tmp_path, "ray", "--ray")
    assert [r["model"] for r in on_ray] == [r["model"] for r in local] == \
        [ARM_REL, "menagerie/robotiq_2f85/scene.xml"]
    for a, b in zip(on_ray, local):
        assert "error" not in a, a
        assert a["accepted_steps"] > 0
        timing = _sweep_timing(a)
        assert timing == _sweep_timing(b) and "wall_time" in timing and "time_solve" in timing
        assert _without(a, timing) == _without(b, timing)


def test_sweep_ray_flag_checked_before_work(tmp_path):
    proc = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "sweep_shared_models.py"), "--models",
         "no/such.xml", "--ray", "--out", str(tmp_path / "o"), "--build", str(BUILD)],
        capture_output=True, text=True, timeout=60, env=python_env())
    assert proc.returncode == 2 and "--models" in proc.stderr
    assert not (tmp_path / "o").exists()


# A Ray cluster of at least two nodes at MJCENIC_RAY_ADDRESS (CI starts one on 127.0.0.1:
# `make test-ray`), its second node offering the custom resource "node2".
RAY_ADDRESS = os.environ.get("MJCENIC_RAY_ADDRESS")
cluster = pytest.mark.skipif(not RAY_ADDRESS, reason="no Ray cluster (MJCENIC_RAY_ADDRESS unset; "
                             "make test-ray starts one)")


def _rollout_inputs():
    import mujoco
    from test_rollout import SCENE, NSTEP
    m = mujoco.MjModel.from_xml_string(SCENE)
    d = mujoco.MjData(m)
    mujoco.mj_forward(m, d)
    x0 = np.empty(mujoco.mj_stateSize(m, mujoco.mjtState.mjSTATE_FULLPHYSICS))
    mujoco.mj_getState(m, d, x0, mujoco.mjtState.mjSTATE_FULLPHYSICS)
    x = np.tile(x0, (4, 1))
    x[:, 1 + 1 + 7 + 2] = np.linspace(0.17, 0.4, 4)  # box2's drop height
    u = np.random.default_rng(5).uniform(-0.5, 0.5, (4, NSTEP, m.nu))
    return m, x, u


@cluster
def test_rollout_on_a_two_node_cluster_equals_threads():
    ray = pytest.importorskip("ray")
    import mjcenic
    import mjcenic.distributed as dist
    m, x, u = _rollout_inputs()
    threads = mjcenic.rollout(m, None, x, u, nthread=2)
    dist.init(RAY_ADDRESS)
    try:
        nodes = [n for n in ray.nodes() if n["Alive"]]
        assert len(nodes) >= 2, nodes
        second = [n["NodeID"] for n in nodes if n["Resources"].get("node2")]
        assert len(second) == 1, nodes
        head = ray.get_runtime_context().get_node_id()
        assert second[0] != head
        # A task pinned to the second node (by its resource) runs mjcenic there (defined
        # here: the workers cannot import this test module, a local function travels by value).
        def on_node(payload):
            import ray
            import mjcenic
            m, x, u = payload
            res = mjcenic.rollout(m, None, x, u, nthread=1)
            return ray.get_runtime_context().get_node_id(), res.state, res.stats["steps"]

        task = ray.remote(num_cpus=1, resources={"node2": 1})(on_node)
        node, state, steps = ray.get(task.remote((m, x, u)))
        assert node == second[0]
        np.testing.assert_array_equal(state, threads.state)  # bit for bit across nodes
        np.testing.assert_array_equal(steps, threads.stats["steps"])
        # The Ray backend, one rollout per task over both nodes' CPUs.
        on_ray = mjcenic.rollout(m, None, x, u, backend="ray", chunk_size=1)
        np.testing.assert_array_equal(on_ray.state, threads.state)
        np.testing.assert_array_equal(on_ray.sensordata, threads.sensordata)
        for key in ("steps", "rejected_steps", "newton_iterations"):
            np.testing.assert_array_equal(on_ray.stats[key], threads.stats[key])
        # map_tasks (compare/sweep --ray) across the cluster: order and values kept.
        assert dist.map_tasks(abs, [-3, 2, -1, 0]) == [3, 2, 1, 0]
    finally:
        ray.shutdown()

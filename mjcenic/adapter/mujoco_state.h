// The integrator's reads and writes of mjModel/mjData fields, in one place:
// sizes, the state x = (q, v, act) and time, inputs, activation dynamics
// (docs/mujoco-mapping.md §4.5), the input checks and the overflow report.
// The integrator calls these and never dereferences MuJoCo's structs.
#pragma once

#include <string>
#include <vector>

#include <absl/status/status.h>
#include <mujoco/mujoco.h>

namespace mjcenic::adapter {

struct Sizes {
  int nq = 0, nv = 0, na = 0, nu = 0;
};
Sizes ModelSizes(const mjModel* m);
double Timestep(const mjModel* m);  // m->opt.timestep
double Extent(const mjModel* m);    // m->stat.extent [m]: the model's size
bool HasPlugins(const mjModel* m);  // a plugin may change act after actuation
bool HasHistoryBuffers(const mjModel* m);  // actuator/sensor delay buffers

double Time(const mjData* d);
void SetTime(mjData* d, double t);
// Copies the state x = (q, v, act) into d (no stage is run), and out of d.
void LoadState(const mjModel* m, mjData* d, const double* q, const double* v, const double* act);
void SaveState(const mjModel* m, const mjData* d, double* q, double* v, double* act);
// qvel of d into out (nv).
void CopyVelocity(const mjModel* m, const mjData* d, double* out);
// ctrl of d into out (nu), and whether d's ctrl equals ctrl bit for bit.
void CopyCtrl(const mjModel* m, const mjData* d, double* out);
bool CtrlEquals(const mjModel* m, const mjData* d, const double* ctrl);
// act_dot of d (after the actuation stage) into out (na).
void CopyActRate(const mjModel* m, const mjData* d, double* out);

// OK if d's inputs (qpos, qvel, act, ctrl, qfrc_applied, xfrc_applied,
// mocap poses), m's timestep and d's time are finite (and the timestep
// positive); else an error naming the first bad one.
absl::Status CheckInputs(const mjModel* m, const mjData* d);
// Whether d's qpos and qvel are finite.
bool StateFinite(const mjModel* m, const mjData* d);

// MuJoCo's activation rule over h (Euler, exact filter), clamped to
// actrange (mapping §4.5): out = act advanced by act_dot.
void IntegrateActivations(const mjModel* m, const double* act, const double* act_dot, double h,
                          double* out);
// act_end ← 2 act_end − act_full, clamped to actrange (Richardson
// extrapolation of the activations).
void ExtrapolateActivations(const mjModel* m, const double* act_full, double* act_end);

// For the overflow error of a dof: its joint ("'name'" or "#id"), and the
// forces at it (", qfrc_applied = …, qfrc_bias = …, qfrc_passive = …,
// qfrc_actuator = …").
std::string DofJointLabel(const mjModel* m, int dof);
std::string DofForces(const mjModel* m, const mjData* d, int dof);

// The error norm's weights (cenic-math §11.3): per dof 1 for a rotational
// dof (hinge, ball, a free joint's rotation), 1/L for a translational one,
// with L = length_scale if > 0, else the mean dof_length of the rotational
// dofs (1 without any); per activation 1/range (actrange, else 1 for a
// muscle, else ctrlrange, else 1).
void NormWeights(const mjModel* m, double length_scale, double* L, std::vector<double>* weight,
                 std::vector<double>* act_weight);
// The name of an error norm's worst coordinate: "dof 3 (joint 'elbow')",
// "qpos 5 (joint 'free')" (by_qpos), "act 0 (actuator 'x')" (worst ≤ −2:
// activation −2 − worst), "none".
std::string CoordinateName(const mjModel* m, int worst, bool by_qpos);

}  // namespace mjcenic::adapter

// Every MuJoCo pipeline stage the stepper runs, in one place (the adapter is
// the only part of mjcenic that calls MuJoCo's physics). Three groups, as
// mj_step's own pipeline (docs/mujoco-mapping.md §1):
//   - the position/velocity stages at a state (kinematics, collision,
//     constraint rows, mass matrix, bias forces): the "geometry query" that
//     precedes every problem build;
//   - actuation, and the smooth stages a user controller reads (no collision);
//   - the post-step stages that make mjData satisfy the post-step contract
//     (sensors, energy, forces, interval-average acceleration, plugins).
// With a speculative margin, the position stages run on a private copy of the
// model whose gaps are widened, so that collision detection also reports pairs
// that are up to that distance apart.
#pragma once

#include <mujoco/mujoco.h>

namespace mjcenic::adapter {

class MujocoStages {
 public:
  // speculative_margin > 0: collision on a staging copy of m with geom gaps
  // (and body margins) widened by margin/2 and pair gaps by margin.
  MujocoStages(const mjModel* m, double speculative_margin);
  ~MujocoStages();
  MujocoStages(const MujocoStages&) = delete;
  MujocoStages& operator=(const MujocoStages&) = delete;
  // The model's arrays were edited: the staging copy takes them again.
  void ModelEdited();

  // Position and velocity stages at the state in d (no sensors, no control
  // callback), on the staging model.
  void PositionVelocity(mjData* d);
  // Actuator forces at d's ctrl and act (honours mjDSBL_ACTUATION itself).
  void Actuation(mjData* d);
  // The smooth stages a controller reads, without collision: kinematics, mass
  // matrix (factored), transmission, velocity-dependent terms.
  void Smooth(mjData* d);
  // MuJoCo's global control callback mjcb_control, if set and actuation is enabled.
  void ControlCallback(mjData* d);
  // Whether ControlCallback would call mjcb_control.
  bool HasControlCallback() const;
  // Post-step, part 1 (position/velocity stages current): position and
  // velocity sensors, energy if enabled, actuation, smooth acceleration.
  void SensorsAndForces(mjData* d);
  // Post-step, part 2 (efc_force written): qacc = (qvel − v_start)/H, the
  // constraint force M qacc − qfrc_smooth, acceleration sensors and the
  // plugins' advance.
  void FinishStep(mjData* d, double H, const double* v_start);

  // Penetration max(−dist) over d's active contacts.
  static double MaxPenetration(const mjData* d);

 private:
  // m_, or the staging copy with its opt refreshed from m_ (the user or the
  // viewer may change options at any time).
  const mjModel* StageModel();

  void Widen();  // the staging copy's gaps and margins, from m_'s

  const mjModel* m_;
  double margin_ = 0;
  mjModel* staging_ = nullptr;
};

}  // namespace mjcenic::adapter

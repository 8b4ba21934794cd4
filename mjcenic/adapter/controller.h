// The user controller type of Stepper::SetController.
#pragma once

#include <functional>

#include <mujoco/mujoco.h>

namespace mjcenic {

// A user controller: reads the state in d (qpos, qvel, time; kinematics,
// mass matrix and bias forces are evaluated) and writes d->ctrl and/or
// d->qfrc_applied. Returns false to abort the step with an error.
using Controller = std::function<bool(const mjModel* m, mjData* d)>;

}  // namespace mjcenic

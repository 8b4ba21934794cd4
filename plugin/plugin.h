// The "mjcenic" MuJoCo engine plugin: carries stepper configuration in MJCF
//   <extension><plugin plugin="mjcenic"><instance name="cenic">
//     <config key="accuracy" value="1e-3"/> ...
// and owns one Stepper per mjData (in d->plugin_data). MuJoCo has no plugin
// capability that replaces its solver: the plugin declares no capability, so
// mj_step never calls it; users call mjcenic_step (or the Python Stepper)
// instead of mj_step, which finds the stepper here.
#pragma once

#include <absl/status/status.h>
#include <mujoco/mujoco.h>

#include "mjcenic/integrator/options.h"
#include "mjcenic/integrator/stepper.h"

namespace mjcenic::plugin {

// Registers the plugin with MuJoCo (idempotent). Called automatically when
// the library is loaded.
void Register();
// Index of the model's mjcenic plugin instance, or -1.
int FindInstance(const mjModel* m);
// Stepper options from the instance's <config> (defaults where absent).
absl::Status OptionsFromModel(const mjModel* m, StepperOptions* options);
// The stepper the plugin owns for d, or nullptr (no instance, not initialized,
// or registered by another copy of the plugin code, e.g. the Python extension).
Stepper* StepperOf(const mjModel* m, const mjData* d);

}  // namespace mjcenic::plugin

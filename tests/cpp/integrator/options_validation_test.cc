// Option validation (ResolveOptions, CheckStepBounds; options.h, "Progress
// guarantee"): every bound refuses a value just outside it with an error that
// names the key, and accepts the bound itself. The options are set on the
// struct, as a C++ caller does: the text codecs of SetOption (plugin config,
// Python, CLI) refuse some of these values before ResolveOptions sees them.
#include <cmath>
#include <functional>
#include <limits>
#include <string>

#include <gtest/gtest.h>
#include <mujoco/mujoco.h>

#include "mjcenic/integrator/options.h"
#include "mjcenic/integrator/stepper.h"
#include "test_util.h"

namespace mjcenic {
namespace {

// A 1 m free box: extent ~1 m, so the length-scale floor is testable.
const char* kXml = R"(
<mujoco>
  <worldbody>
    <body><freejoint/><geom type="box" size="0.5 0.5 0.5"/></body>
  </worldbody>
</mujoco>)";

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

struct Case {
  const char* name;                           // what the case sets
  std::function<void(StepperOptions*)> set;   // applied to the defaults
  const char* key;                            // the error must contain it
};

class OptionsValidation : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string err;
    m_ = test_util::ModelFromXml(kXml, &err);
    ASSERT_NE(m_, nullptr) << err;
  }
  absl::Status Resolve(const std::function<void(StepperOptions*)>& set) {
    StepperOptions o;
    set(&o);
    absl::Status s = ResolveOptions(m_.get(), o).status();
    // The stepper refuses what ResolveOptions refuses, with the same message.
    auto stepper = Stepper::Create(m_.get(), o);
    EXPECT_EQ(stepper.status().ok(), s.ok());
    if (!s.ok() && !stepper.ok()) {
      EXPECT_EQ(stepper.status().message(), s.message());
    }
    return s;
  }
  test_util::ModelPtr m_;
};

TEST_F(OptionsValidation, EveryBoundRefusesNamingTheKey) {
  const Case cases[] = {
      {"accuracy 1e-13", [](StepperOptions* o) { o->accuracy = 1e-13; }, "accuracy"},
      {"accuracy NaN", [](StepperOptions* o) { o->accuracy = kNaN; }, "accuracy"},
      {"accuracy 1.5", [](StepperOptions* o) { o->accuracy = 1.5; }, "accuracy"},
      // (Without the adaptive Newton tolerance: κ·accuracy is not checked then.)
      {"kappa 1.5", [](StepperOptions* o) { o->kappa = 1.5, o->adaptive_tolerance = false; },
       "kappa"},
      {"kappa 1.01 with accuracy 1e-6",
       [](StepperOptions* o) { o->kappa = 1.01, o->accuracy = 1e-6; }, "kappa"},
      {"kappa 0", [](StepperOptions* o) { o->kappa = 0; }, "kappa"},
      {"kappa -1", [](StepperOptions* o) { o->kappa = -1; }, "kappa"},
      {"kappa NaN", [](StepperOptions* o) { o->kappa = kNaN; }, "kappa"},
      {"solver_tolerance 2e-3",
       [](StepperOptions* o) { o->solver.tolerance = 2e-3; }, "solver_tolerance"},
      {"solver_tolerance 0", [](StepperOptions* o) { o->solver.tolerance = 0; }, "tolerance"},
      {"max_iterations 0", [](StepperOptions* o) { o->solver.max_iterations = 0; },
       "max_iterations"},
      {"kappa·accuracy 0.5·0.01",
       [](StepperOptions* o) { o->kappa = 0.5, o->accuracy = 0.01; }, "kappa"},
      {"max_step -1", [](StepperOptions* o) { o->max_step = -1; }, "max_step"},
      {"max_step inf", [](StepperOptions* o) { o->max_step = kInf; }, "max_step"},
      {"initial_step -1", [](StepperOptions* o) { o->initial_step = -1; }, "initial_step"},
      {"initial_step inf", [](StepperOptions* o) { o->initial_step = kInf; }, "initial_step"},
      {"min_step -1", [](StepperOptions* o) { o->min_step = -1; }, "min_step"},
      {"min_step inf", [](StepperOptions* o) { o->min_step = kInf; }, "min_step"},
      {"length_scale 1e-7", [](StepperOptions* o) { o->length_scale = 1e-7; }, "length_scale"},
      {"length_scale -1", [](StepperOptions* o) { o->length_scale = -1; }, "length_scale"},
      {"length_scale inf", [](StepperOptions* o) { o->length_scale = kInf; }, "length_scale"},
      {"error_per_unit_step -1",
       [](StepperOptions* o) { o->error_per_unit_step = -1; }, "error_per_unit_step"},
      {"error_per_unit_step inf",
       [](StepperOptions* o) { o->error_per_unit_step = kInf; }, "error_per_unit_step"},
      // The floor: a 1 m model with L = 1e-3 m needs accuracy >= 1e-12·1e3.
      {"accuracy 1e-10 with length_scale 1e-3",
       [](StepperOptions* o) { o->accuracy = 1e-10, o->length_scale = 1e-3; }, "length_scale"},
      {"velocity_horizon 0", [](StepperOptions* o) { o->velocity_horizon = 0; },
       "velocity_horizon"},
      {"velocity_horizon inf", [](StepperOptions* o) { o->velocity_horizon = kInf; },
       "velocity_horizon"},
      {"min_step > max_step",
       [](StepperOptions* o) { o->max_step = 0.01, o->min_step = 0.02; }, "min_step"},
      {"min_step > default max_step", [](StepperOptions* o) { o->min_step = 0.2; }, "min_step"},
      {"initial_step > max_step",
       [](StepperOptions* o) { o->max_step = 0.01, o->initial_step = 0.02; }, "initial_step"},
      {"max_steps_per_call -1", [](StepperOptions* o) { o->max_steps_per_call = -1; },
       "max_steps_per_call"},
      {"stiction_tolerance 0", [](StepperOptions* o) { o->icf.stiction_tolerance = 0; },
       "stiction_tolerance"},
      {"mu_static_ratio 0.5", [](StepperOptions* o) { o->contact.mu_static_ratio = 0.5; },
       "mu_static_ratio"},
      {"mu_static_ratio 0.999",
       [](StepperOptions* o) { o->contact.mu_static_ratio = 0.999; }, "mu_static_ratio"},
      {"control.safety 0", [](StepperOptions* o) { o->control.safety = 0; }, "safety"},
      {"control.safety 1.1", [](StepperOptions* o) { o->control.safety = 1.1; }, "safety"},
      {"control.max_growth 1", [](StepperOptions* o) { o->control.max_growth = 1; },
       "max_growth"},
      {"control.min_shrink 0", [](StepperOptions* o) { o->control.min_shrink = 0; },
       "min_shrink"},
      {"control.min_shrink 1", [](StepperOptions* o) { o->control.min_shrink = 1; },
       "min_shrink"},
      {"control.order 0", [](StepperOptions* o) { o->control.order = 0; }, "order"},
      {"extrapolate with mode fixed",
       [](StepperOptions* o) { o->extrapolate = true, o->mode = Mode::kFixed; }, "extrapolate"},
      {"extrapolate with mode trapezoid",
       [](StepperOptions* o) { o->extrapolate = true, o->mode = Mode::kTrapezoid; },
       "extrapolate"},
      {"error_estimate embedded with mode trapezoid",
       [](StepperOptions* o) {
         o->error_estimate = ErrorEstimate::kEmbedded, o->mode = Mode::kTrapezoid;
       },
       "error_estimate"},
      {"extrapolate with error_estimate embedded",
       [](StepperOptions* o) { o->error_estimate = ErrorEstimate::kEmbedded, o->extrapolate = true; },
       "extrapolate"},
      {"global_accuracy with mode fixed",
       [](StepperOptions* o) { o->global_accuracy = true, o->mode = Mode::kFixed; },
       "global_accuracy"},
  };
  for (const Case& c : cases) {
    const absl::Status s = Resolve(c.set);
    EXPECT_FALSE(s.ok()) << c.name << " accepted";
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << c.name << ": " << s;
    EXPECT_NE(std::string(s.message()).find("mjcenic"), std::string::npos) << c.name << ": " << s;
    EXPECT_NE(std::string(s.message()).find(c.key), std::string::npos)
        << c.name << ": the error does not name " << c.key << ": " << s;
  }
}

TEST_F(OptionsValidation, EveryBoundItselfIsAccepted) {
  const Case cases[] = {
      {"accuracy 1e-12", [](StepperOptions* o) { o->accuracy = 1e-12; }, ""},
      {"accuracy 1 (kappa 1e-3)", [](StepperOptions* o) { o->accuracy = 1; }, ""},
      {"kappa 1 with accuracy 1e-3", [](StepperOptions* o) { o->kappa = 1; }, ""},
      {"kappa 1 without the adaptive tolerance",
       [](StepperOptions* o) { o->kappa = 1, o->adaptive_tolerance = false; }, ""},
      {"solver_tolerance 1e-3", [](StepperOptions* o) { o->solver.tolerance = 1e-3; }, ""},
      {"max_iterations 1", [](StepperOptions* o) { o->solver.max_iterations = 1; }, ""},
      {"length_scale 1e-6 with accuracy 1e-3",
       [](StepperOptions* o) { o->length_scale = 1e-6; }, ""},
      {"accuracy 1e-8 with length_scale 1e-3",
       [](StepperOptions* o) { o->accuracy = 1e-8, o->length_scale = 1e-3; }, ""},
      {"min_step = max_step = initial_step",
       [](StepperOptions* o) { o->max_step = o->min_step = o->initial_step = 0.01; }, ""},
      {"max_steps_per_call 0", [](StepperOptions* o) { o->max_steps_per_call = 0; }, ""},
      {"mu_static_ratio 1", [](StepperOptions* o) { o->contact.mu_static_ratio = 1; }, ""},
      {"control.safety 1", [](StepperOptions* o) { o->control.safety = 1; }, ""},
      {"error_estimate embedded with mode cenic",
       [](StepperOptions* o) { o->error_estimate = ErrorEstimate::kEmbedded; }, ""},
      {"extrapolate with mode cenic", [](StepperOptions* o) { o->extrapolate = true; }, ""},
  };
  for (const Case& c : cases) {
    const absl::Status s = Resolve(c.set);
    EXPECT_TRUE(s.ok()) << c.name << ": " << s;
  }
}

}  // namespace
}  // namespace mjcenic

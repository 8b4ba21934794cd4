#include "mjcenic.h"

#include <cstdio>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>

#include "mjcenic/integrator/stepper.h"
#include "plugin.h"

struct mjcenicStepper_ {
  std::unique_ptr<mjcenic::Stepper> stepper;
};
struct mjcenicOptions_ {
  mjcenic::StepperOptions options;
};

namespace {

void CopyError(const std::string& msg, char* error, int error_sz) {
  if (error && error_sz > 0) std::snprintf(error, error_sz, "%s", msg.c_str());
}

// Steppers owned on behalf of mjcenic_step callers, keyed by (model, data).
// Each stepper is independent; the map itself is guarded by a mutex.
struct Registry {
  std::mutex mutex;
  std::map<std::pair<const mjModel*, const mjData*>, std::unique_ptr<mjcenic::Stepper>> map;
};
Registry& GetRegistry() {
  static Registry* registry = new Registry;  // intentionally never destroyed
  return *registry;
}

}  // namespace

extern "C" {

mjcenicStepper* mjcenic_create(const mjModel* m, char* error, int error_sz) {
  mjcenic::StepperOptions options;
  if (m) {
    const absl::Status os = mjcenic::plugin::OptionsFromModel(m, &options);
    if (!os.ok()) {
      CopyError(std::string(os.message()), error, error_sz);
      return nullptr;
    }
  }
  auto s = mjcenic::Stepper::Create(m, options);
  if (!s.ok()) {
    CopyError(std::string(s.status().message()), error, error_sz);
    return nullptr;
  }
  return new mjcenicStepper_{std::move(*s)};
}

void mjcenic_destroy(mjcenicStepper* s) { delete s; }

mjcenicOptions* mjcenic_options_create(const mjModel* m, char* error, int error_sz) {
  auto* o = new mjcenicOptions_;
  if (m) {
    const absl::Status s = mjcenic::plugin::OptionsFromModel(m, &o->options);
    if (!s.ok()) {
      CopyError(std::string(s.message()), error, error_sz);
      delete o;
      return nullptr;
    }
  }
  return o;
}

void mjcenic_options_destroy(mjcenicOptions* o) { delete o; }

int mjcenic_options_set(mjcenicOptions* o, const char* key, const char* value, char* error,
                        int error_sz) {
  if (!o || !key || !value) {
    CopyError("mjcenic: null options, key or value", error, error_sz);
    return 1;
  }
  const absl::Status s = mjcenic::SetOption(&o->options, key, value);
  if (s.ok()) return 0;
  CopyError(std::string(s.message()), error, error_sz);
  return 1;
}

mjcenicStepper* mjcenic_create_with_options(const mjModel* m, const mjcenicOptions* o,
                                            char* error, int error_sz) {
  auto s = mjcenic::Stepper::Create(m, o ? o->options : mjcenic::StepperOptions{});
  if (!s.ok()) {
    CopyError(std::string(s.status().message()), error, error_sz);
    return nullptr;
  }
  return new mjcenicStepper_{std::move(*s)};
}

int mjcenic_advance_to(mjcenicStepper* s, mjData* d, double t, char* error, int error_sz) {
  if (!s || !d) {
    CopyError("mjcenic: null stepper or data", error, error_sz);
    return 1;
  }
  const absl::Status st = s->stepper->AdvanceTo(d, t);
  if (st.ok()) return 0;
  CopyError(std::string(st.message()), error, error_sz);
  return 1;
}

int mjcenic_step_once(mjcenicStepper* s, mjData* d, char* error, int error_sz) {
  if (!s || !d) {
    CopyError("mjcenic: null stepper or data", error, error_sz);
    return 1;
  }
  const absl::Status st = s->stepper->StepOnce(d);
  if (st.ok()) return 0;
  CopyError(std::string(st.message()), error, error_sz);
  return 1;
}

void mjcenic_get_stats(const mjcenicStepper* s, mjcenicStats* out) {
  const mjcenic::StepperStats& st = s->stepper->stats();
  out->steps = st.steps;
  out->rejected_steps = st.rejected_steps;
  out->solves = st.solves;
  out->newton_iterations = st.newton_iterations;
  out->factorizations = st.factorizations;
  out->ls_iterations = st.ls_iterations;
  out->geometry_queries = st.geometry_queries;
  out->h_min = st.h_min;
  out->h_median = st.h_median;
  out->h_max = st.h_max;
  out->last_h = st.last_h;
  out->max_penetration = st.max_penetration;
  out->time_geometry = st.time_geometry;
  out->time_assembly = st.time_assembly;
  out->time_solve = st.time_solve;
  out->time_total = st.time_total;
}

int mjcenic_stepper_step(mjcenicStepper* s, mjData* d, char* error, int error_sz) {
  if (!s || !d) {
    CopyError("mjcenic: null stepper or data", error, error_sz);
    return 1;
  }
  const absl::Status st = s->stepper->Step(d);
  if (st.ok()) return 0;
  CopyError(std::string(st.message()), error, error_sz);
  return 1;
}

void mjcenic_step(const mjModel* m, mjData* d) {
  mjcenic::Stepper* stepper = mjcenic::plugin::StepperOf(m, d);
  if (!stepper) {
    Registry& r = GetRegistry();
    std::lock_guard<std::mutex> lock(r.mutex);
    auto& slot = r.map[{m, d}];
    if (!slot) {
      mjcenic::StepperOptions options;
      absl::Status os = mjcenic::plugin::OptionsFromModel(m, &options);
      auto s = os.ok() ? mjcenic::Stepper::Create(m, options)
                       : absl::StatusOr<std::unique_ptr<mjcenic::Stepper>>(os);
      if (!s.ok()) {
        r.map.erase({m, d});
        mju_warning("%s", std::string(s.status().message()).c_str());
        mj_warning(d, mjWARN_BADQACC, 0);
        return;
      }
      slot = std::move(*s);
    }
    stepper = slot.get();
  }
  const absl::Status st = stepper->Step(d);
  if (!st.ok()) {
    mju_warning("%s", std::string(st.message()).c_str());
    mj_warning(d, mjWARN_BADQACC, 0);
  }
}

void mjcenic_forget(const mjData* d) {
  Registry& r = GetRegistry();
  std::lock_guard<std::mutex> lock(r.mutex);
  for (auto it = r.map.begin(); it != r.map.end();)
    it = (it->first.second == d) ? r.map.erase(it) : std::next(it);
}

}  // extern "C"

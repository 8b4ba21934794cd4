#include "mjcenic.h"

#include <cstdio>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>

#include "mjcenic/integrator/stepper.h"

struct mjcenicStepper_ {
  std::unique_ptr<mjcenic::Stepper> stepper;
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
  auto s = mjcenic::Stepper::Create(m);
  if (!s.ok()) {
    CopyError(std::string(s.status().message()), error, error_sz);
    return nullptr;
  }
  return new mjcenicStepper_{std::move(*s)};
}

void mjcenic_destroy(mjcenicStepper* s) { delete s; }

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
  mjcenic::Stepper* stepper = nullptr;
  {
    Registry& r = GetRegistry();
    std::lock_guard<std::mutex> lock(r.mutex);
    auto& slot = r.map[{m, d}];
    if (!slot) {
      auto s = mjcenic::Stepper::Create(m);
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

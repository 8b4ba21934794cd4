#include "mjcenic.h"

#include <cstdio>
#include <cstring>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <utility>

#include <absl/strings/string_view.h>

#include "mjcenic/integrator/options_table.h"
#include "mjcenic/integrator/stepper.h"
#include "mujoco_errors.h"
#include "plugin.h"

struct mjcenicStepper_ {
  std::unique_ptr<mjcenic::Stepper> stepper;
  mjcenic::plugin::FatalErrorGuard guard;
};
struct mjcenicOptions_ {
  mjcenic::StepperOptions options;
};

namespace {

void CopyError(const std::string& msg, char* error, int error_sz) {
  if (error && error_sz > 0) std::snprintf(error, error_sz, "%s", msg.c_str());
}

// How mjcenic_step reports a failure (it has mj_step's signature): a MuJoCo
// warning with the text, and mjWARN_BADQACC counted in d.
void Warn(mjData* d, absl::string_view message) {
  mju_warning("%s", std::string(message).c_str());
  mj_warning(d, mjWARN_BADQACC, 0);
}

mjcenicStepper* Wrap(std::unique_ptr<mjcenic::Stepper> s) {
  const mjModel* m = s->model();
  return new mjcenicStepper_{std::move(s), mjcenic::plugin::FatalErrorGuard(m)};
}

// d must have been made for the stepper's model (Python checks the same).
absl::Status CheckData(const mjModel* m, const mjData* d) {
  if (d->signature != m->signature || d->narena != m->narena)
    return absl::InvalidArgumentError(
        "mjcenic: this mjData was not made for the stepper's mjModel (signature or arena size "
        "differ); make it with mj_makeData(m) for the model the stepper was created for");
  return absl::OkStatus();
}

// The common body of the stepping calls: null and model checks, then fn with
// MuJoCo fatal errors turned into a status; 0 on success.
template <class Fn>
int Run(mjcenicStepper* s, mjData* d, char* error, int error_sz, Fn&& fn) {
  if (!s || !d) {
    CopyError("mjcenic: null stepper or data", error, error_sz);
    return 1;
  }
  const mjModel* m = s->stepper->model();
  absl::Status st = CheckData(m, d);
  if (st.ok()) st = s->guard.Run(m, d, fn);
  if (st.ok()) return 0;
  CopyError(std::string(st.message()), error, error_sz);
  return 1;
}

// Steppers owned on behalf of mjcenic_step callers, one per (model, data)
// address pair, most recently used first. The address alone is not trusted:
// an entry also records what it saw of the model and the data (model
// signature and buffer, data buffer and arena, and the time it left d at);
// if any differs, d is a new mjData (or the model a new one) at a reused
// address, or d was reset or moved in time by the caller, and the entry gets
// a fresh stepper. At most kRegistryCapacity entries are kept: the least
// recently stepped one goes first (it is rebuilt if that data steps again).
// Each stepper is independent; the list is guarded by a mutex.
constexpr size_t kRegistryCapacity = 64;

struct Fingerprint {
  const mjModel* m = nullptr;
  const mjData* d = nullptr;
  uint64_t model_signature = 0;
  const void* model_buffer = nullptr;
  const void* data_buffer = nullptr;
  const void* data_arena = nullptr;
  double time = 0;  // d->time after the last step through this entry

  static Fingerprint Of(const mjModel* m, const mjData* d) {
    return {m, d, m->signature, m->buffer, d->buffer, d->arena, d->time};
  }
  bool SameRun(const Fingerprint& o) const {
    return model_signature == o.model_signature && model_buffer == o.model_buffer &&
           data_buffer == o.data_buffer && data_arena == o.data_arena && time == o.time;
  }
};

struct Entry {
  Fingerprint seen;
  std::shared_ptr<mjcenic::Stepper> stepper;  // shared: stepped outside the lock
};

struct Registry {
  std::mutex mutex;
  std::list<Entry> entries;  // most recently used first
};
Registry& GetRegistry() {
  static Registry* registry = new Registry;  // intentionally never destroyed
  return *registry;
}

// The stepper of the entry for (m, d), made or renewed as needed (the entry
// moves to the front); null (with a warning raised) if none can be made.
std::shared_ptr<mjcenic::Stepper> FindOrMake(Registry& r, const mjModel* m, mjData* d) {
  const Fingerprint now = Fingerprint::Of(m, d);
  auto it = r.entries.begin();
  while (it != r.entries.end() && !(it->seen.m == m && it->seen.d == d)) ++it;
  if (it != r.entries.end()) {
    if (it->seen.SameRun(now)) {
      r.entries.splice(r.entries.begin(), r.entries, it);
      return it->stepper;
    }
    r.entries.erase(it);  // a new mjData/mjModel at a reused address, or a reset
  }
  mjcenic::StepperOptions options;
  absl::Status os = mjcenic::plugin::OptionsFromModel(m, &options);
  auto s = os.ok() ? mjcenic::Stepper::Create(m, options)
                   : absl::StatusOr<std::unique_ptr<mjcenic::Stepper>>(os);
  if (!s.ok()) {
    Warn(d, s.status().message());
    return nullptr;
  }
  r.entries.push_front(Entry{now, std::move(*s)});
  while (r.entries.size() > kRegistryCapacity) r.entries.pop_back();
  return r.entries.front().stepper;
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
  return Wrap(std::move(*s));
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
  return Wrap(std::move(*s));
}

int mjcenic_advance_to(mjcenicStepper* s, mjData* d, double t, char* error, int error_sz) {
  return Run(s, d, error, error_sz, [&] { return s->stepper->AdvanceTo(d, t); });
}

int mjcenic_step_once(mjcenicStepper* s, mjData* d, char* error, int error_sz) {
  return Run(s, d, error, error_sz, [&] { return s->stepper->StepOnce(d); });
}

void mjcenic_get_stats(const mjcenicStepper* s, mjcenicStats* out) {
  const mjcenic::StepperStats& st = s->stepper->stats();
  // Every statistic of the table; a missing mjcenicStats member fails to compile.
#define MJCENIC_COPY_STAT(name, type, doc) out->name = st.name;
  MJCENIC_STATS(MJCENIC_COPY_STAT)
#undef MJCENIC_COPY_STAT
}

int mjcenic_get_stat(const mjcenicStepper* s, const char* name, double* value) {
  if (!s || !name || !value) return 1;
  const mjcenic::StepperStats& st = s->stepper->stats();
#define MJCENIC_GET_STAT(stat, type, doc) \
  if (std::strcmp(name, #stat) == 0) {     \
    *value = static_cast<double>(st.stat); \
    return 0;                              \
  }
  MJCENIC_STATS(MJCENIC_GET_STAT)
#undef MJCENIC_GET_STAT
  return 1;
}

const char* mjcenic_stat_name(int i) {
#define MJCENIC_STAT_NAME(name, type, doc) #name,
  static const char* const names[] = {MJCENIC_STATS(MJCENIC_STAT_NAME)};
#undef MJCENIC_STAT_NAME
  const int n = static_cast<int>(sizeof(names) / sizeof(names[0]));
  return i >= 0 && i < n ? names[i] : nullptr;
}

const char* mjcenic_option_name(int i) {
  const auto& keys = mjcenic::OptionKeys();
  return i >= 0 && i < static_cast<int>(keys.size()) ? keys[i].c_str() : nullptr;
}

int mjcenic_stepper_step(mjcenicStepper* s, mjData* d, char* error, int error_sz) {
  return Run(s, d, error, error_sz, [&] { return s->stepper->Step(d); });
}

void mjcenic_step(const mjModel* m, mjData* d) {
  if (!m || !d) return;
  if (const absl::Status c = CheckData(m, d); !c.ok()) {
    Warn(d, c.message());
    return;
  }
  if (mjcenic::Stepper* plugin_stepper = mjcenic::plugin::StepperOf(m, d)) {
    if (const absl::Status st = plugin_stepper->Step(d); !st.ok()) Warn(d, st.message());
    return;
  }
  Registry& r = GetRegistry();
  std::shared_ptr<mjcenic::Stepper> stepper;
  {
    std::lock_guard<std::mutex> lock(r.mutex);
    stepper = FindOrMake(r, m, d);
  }
  if (!stepper) return;
  const absl::Status st = stepper->Step(d);
  {
    std::lock_guard<std::mutex> lock(r.mutex);
    for (Entry& e : r.entries)
      if (e.stepper == stepper) e.seen.time = d->time;
  }
  if (!st.ok()) Warn(d, st.message());
}

void mjcenic_forget(const mjData* d) {
  Registry& r = GetRegistry();
  std::lock_guard<std::mutex> lock(r.mutex);
  r.entries.remove_if([d](const Entry& e) { return e.seen.d == d; });
}

int mjcenic_registry_size(void) {
  Registry& r = GetRegistry();
  std::lock_guard<std::mutex> lock(r.mutex);
  return static_cast<int>(r.entries.size());
}

}  // extern "C"

#include "plugin.h"

#include <cstdint>
#include <cstdio>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

namespace mjcenic::plugin {

namespace {

constexpr const char* kName = "mjcenic";

int Slot() {
  int slot = -1;
  mjp_getPlugin(kName, &slot);
  return slot;
}

// The steppers this copy of the plugin made, by the mjData each belongs to.
// d->plugin_data holds the same pointer (MuJoCo's slot for it) but is not
// trusted: code that copies an mjData's raw fields, such as the mujoco
// package's MjData unpickling (it restores plugin_data verbatim), would
// otherwise make two mjData own one stepper, or one own an address from
// another process, and mj_deleteData would free it twice or free garbage.
struct OwnedSteppers {
  std::mutex mutex;
  std::unordered_map<const mjData*, Stepper*> by_data;
};

OwnedSteppers& Owned() {
  static OwnedSteppers* owned = new OwnedSteppers;  // intentionally never destroyed
  return *owned;
}

const char* InstanceName(const mjModel* m, int instance) {
  const char* name = mj_id2name(m, mjOBJ_PLUGIN, instance);
  return name ? name : "";
}

// Called by mj_makeData (also while MuJoCo compiles the model). A failure is
// reported with mju_error and our text: while compiling, MuJoCo's compiler
// catches it and its load error (mj_loadXML's error, Python's ValueError)
// carries the text; outside compilation it is as fatal as MuJoCo's own
// "plugin->init failed" would be, but names the problem.
int Init(const mjModel* m, mjData* d, int instance) {
  d->plugin_data[instance] = 0;
  const int first = FindInstance(m);
  if (first != instance) {
    mju_error("mjcenic: the model declares more than one mjcenic plugin instance ('%s' and "
              "'%s'); a model has one stepper configuration",
              InstanceName(m, first), InstanceName(m, instance));
    return -1;
  }
  StepperOptions options;
  absl::Status s = OptionsFromModel(m, &options);
  absl::StatusOr<std::unique_ptr<Stepper>> stepper =
      s.ok() ? Stepper::Create(m, options) : absl::StatusOr<std::unique_ptr<Stepper>>(s);
  if (!stepper.ok()) {
    mju_error("mjcenic plugin instance '%s': %s", InstanceName(m, instance),
              std::string(stepper.status().message()).c_str());
    return -1;
  }
  Stepper* made = stepper->release();
  {
    OwnedSteppers& owned = Owned();
    std::lock_guard<std::mutex> lock(owned.mutex);
    Stepper*& slot = owned.by_data[d];
    delete slot;  // a stepper d already had (an Init without a Destroy)
    slot = made;
  }
  d->plugin_data[instance] = reinterpret_cast<uintptr_t>(made);
  return 0;
}

void Destroy(mjData* d, int instance) {
  Stepper* own = nullptr;
  {
    OwnedSteppers& owned = Owned();
    std::lock_guard<std::mutex> lock(owned.mutex);
    auto it = owned.by_data.find(d);
    if (it != owned.by_data.end()) {
      own = it->second;
      owned.by_data.erase(it);
    }
  }
  delete own;
  d->plugin_data[instance] = 0;
}

// mj_copyData: dest gets a fresh stepper of its own (statistics and warm
// start restart); the one it had is released.
void Copy(mjData* dest, const mjModel* m, const mjData*, int instance) {
  Destroy(dest, instance);
  Init(m, dest, instance);
}

void Reset(const mjModel*, mjtNum* state, void*, int) { state[0] = 0; }

int NState(const mjModel*, int) { return 1; }

void Compute(const mjModel*, mjData*, int, int) {}

}  // namespace

void Register() {
  if (Slot() >= 0) return;
  static std::vector<const char*> attributes;  // registration copies the strings
  attributes.clear();
  for (const std::string& k : OptionKeys()) attributes.push_back(k.c_str());
  mjpPlugin p;
  mjp_defaultPlugin(&p);
  p.name = kName;
  p.nattribute = static_cast<int>(attributes.size());
  p.attributes = attributes.data();
  p.capabilityflags = 0;  // configuration and state only; never called by mj_step
  p.nstate = NState;
  p.init = Init;
  p.destroy = Destroy;
  p.copy = Copy;
  p.reset = Reset;
  p.compute = Compute;
  mjp_registerPlugin(&p);
}

int FindInstance(const mjModel* m) {
  const int slot = Slot();
  if (slot < 0) return -1;
  for (int i = 0; i < m->nplugin; ++i)
    if (m->plugin[i] == slot) return i;
  return -1;
}

absl::Status OptionsFromModel(const mjModel* m, StepperOptions* options) {
  const int instance = FindInstance(m);
  if (instance < 0) return absl::OkStatus();
  for (const std::string& key : OptionKeys()) {
    const char* value = mj_getPluginConfig(m, instance, key.c_str());
    if (!value || !value[0]) continue;
    if (absl::Status s = SetOption(options, key, value); !s.ok()) return s;
  }
  return absl::OkStatus();
}

Stepper* StepperOf(const mjModel* m, const mjData* d) {
  const int instance = FindInstance(m);
  if (instance < 0) return nullptr;
  // The plugin may have been registered by another copy of this code (the
  // Python extension and libmjcenic.so both carry it); only a stepper made by
  // this copy's Init may be used here.
  const mjpPlugin* p = mjp_getPluginAtSlot(m->plugin[instance]);
  if (!p || p->init != &Init) return nullptr;
  OwnedSteppers& owned = Owned();
  std::lock_guard<std::mutex> lock(owned.mutex);
  auto it = owned.by_data.find(d);
  return it == owned.by_data.end() ? nullptr : it->second;
}

}  // namespace mjcenic::plugin

mjPLUGIN_LIB_INIT(mjcenic) { mjcenic::plugin::Register(); }

// Drops a sphere with the C++ API and prints its height at t = 0.2 s and 1.5 s,
// the mjcenic version and the MuJoCo version it was built against:
//   consumer_cxx MODEL.xml  ->  "<z at 0.2> <z at 1.5> <steps> <mjcenic> <mujoco>"
#include <cstdio>
#include <memory>

#include <mujoco/mujoco.h>

#include "mjcenic/integrator/stepper.h"
#include "mjcenic/version.h"

int main(int argc, char** argv) {
  char err[1000] = "";
  if (argc != 2) return 2;
  std::unique_ptr<mjModel, void (*)(mjModel*)> m(mj_loadXML(argv[1], nullptr, err, sizeof(err)),
                                                 mj_deleteModel);
  if (!m) { std::fprintf(stderr, "load: %s\n", err); return 1; }
  std::unique_ptr<mjData, void (*)(mjData*)> d(mj_makeData(m.get()), mj_deleteData);
  mjcenic::StepperOptions options;
  options.accuracy = 1e-3;
  auto stepper = mjcenic::Stepper::Create(m.get(), options);
  if (!stepper.ok()) { std::fprintf(stderr, "%s\n", stepper.status().ToString().c_str()); return 1; }
  if (absl::Status s = (*stepper)->AdvanceTo(d.get(), 0.2); !s.ok()) return 1;
  const double z_fall = d->qpos[2];
  if (absl::Status s = (*stepper)->AdvanceTo(d.get(), 1.5); !s.ok()) return 1;
  std::printf("%.9f %.9f %ld %s %s\n", z_fall, d->qpos[2], static_cast<long>((*stepper)->stats().steps),
              MJCENIC_VERSION_STRING, MJCENIC_MUJOCO_BUILD_VERSION_STRING);
  return 0;
}

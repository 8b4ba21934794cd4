// Shared helpers of the C++ tests: owning pointers for MuJoCo objects.
#pragma once

#include <memory>
#include <string>

#include <mujoco/mujoco.h>

namespace mjcenic::test_util {

struct ModelDeleter {
  void operator()(mjModel* m) const { mj_deleteModel(m); }
};
struct DataDeleter {
  void operator()(mjData* d) const { mj_deleteData(d); }
};
using ModelPtr = std::unique_ptr<mjModel, ModelDeleter>;
using DataPtr = std::unique_ptr<mjData, DataDeleter>;

inline std::string ModelPath(const char* file) {
  return std::string(MJCENIC_MODELS_DIR) + "/" + file;
}

}  // namespace mjcenic::test_util

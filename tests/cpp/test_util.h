// Shared helpers of the C++ tests: owning pointers for MuJoCo objects, model
// loaders, data at a keyframe, a stepper from options, a problem build.
#pragma once

#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>

#include <gtest/gtest.h>
#include <mujoco/mujoco.h>

#include "mjcenic/adapter/mujoco_adapter.h"
#include "mjcenic/icf/icf_model.h"
#include "mjcenic/icf/parameters.h"
#include "mjcenic/integrator/stepper.h"

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

// A third-party model: $MJCENIC_SHARED_MODELS/<file>, default <source>/../shared/models
// (docs/development.md, "Third-party models").
inline std::string SharedModelPath(const char* file) {
  const char* dir = std::getenv("MJCENIC_SHARED_MODELS");
  return std::string(dir && *dir ? dir : MJCENIC_SHARED_MODELS_DIR) + "/" + file;
}

// Declares `const std::string var` = SharedModelPath(file); when that file is
// missing, the test is skipped (and fails under CI=true).
#define MJCENIC_SHARED_MODEL_OR_SKIP(var, file)                                              \
  const std::string var = ::mjcenic::test_util::SharedModelPath(file);                       \
  if (!std::filesystem::exists(var)) {                                                       \
    const char* ci = std::getenv("CI");                                                      \
    if (ci && std::string(ci) == "true") GTEST_FAIL() << "CI=true: third-party model missing: " << var; \
    GTEST_SKIP() << "third-party model not found: " << var                                  \
                 << " (set MJCENIC_SHARED_MODELS; docs/development.md)";                     \
  }

// Compiles an MJCF string; null (and *error says why: the parser's or the
// compiler's message) if it does not compile.
inline ModelPtr ModelFromXml(const std::string& xml, std::string* error) {
  char err[1000] = "";
  mjSpec* spec = mj_parseXMLString(xml.c_str(), nullptr, err, sizeof(err));
  if (!spec) {
    *error = err;
    return nullptr;
  }
  ModelPtr m(mj_compile(spec, nullptr));
  if (!m) *error = mjs_getError(spec);
  mj_deleteSpec(spec);
  return m;
}

// A scene of models/ and an mjData at its named keyframe; model is null (and
// *error says why) if the file does not load.
struct Scene {
  ModelPtr model;
  DataPtr data;
};
inline Scene LoadSceneAtKey(const char* file, const char* key, std::string* error) {
  char err[1000] = "";
  Scene s;
  s.model.reset(mj_loadXML(ModelPath(file).c_str(), nullptr, err, sizeof(err)));
  *error = err;
  if (!s.model) return s;
  s.data.reset(mj_makeData(s.model.get()));
  mj_resetDataKeyframe(s.model.get(), s.data.get(), mj_name2id(s.model.get(), mjOBJ_KEY, key));
  return s;
}

// A model file (a path; LoadScene: a scene of models/); null, with a test
// failure naming the file and MuJoCo's message, if it does not load.
inline ModelPtr LoadModel(const std::string& path) {
  char error[1024] = "";
  ModelPtr m(mj_loadXML(path.c_str(), nullptr, error, sizeof(error)));
  EXPECT_TRUE(m) << path << ": " << error;
  return m;
}
inline ModelPtr LoadScene(const char* file) { return LoadModel(ModelPath(file)); }

// An MJCF string compiled (ModelFromXml); null, with a test failure, if not.
inline ModelPtr LoadXml(const std::string& xml) {
  std::string error;
  ModelPtr m = ModelFromXml(xml, &error);
  EXPECT_TRUE(m) << error;
  return m;
}

// New data at keyframe `key` (nullptr: qpos0) with all stages computed.
inline DataPtr MakeData(const mjModel* m, const char* key = nullptr) {
  DataPtr d(mj_makeData(m));
  if (key) {
    const int k = mj_name2id(m, mjOBJ_KEY, key);
    EXPECT_GE(k, 0) << "no keyframe " << key;
    if (k >= 0) mj_resetDataKeyframe(m, d.get(), k);
  }
  mj_forward(m, d.get());
  return d;
}

// Stepper::Create; null, with a test failure naming the status, on an error.
inline std::unique_ptr<Stepper> MakeStepper(const mjModel* m, const StepperOptions& o = {}) {
  auto s = Stepper::Create(m, o);
  EXPECT_TRUE(s.ok()) << s.status();
  return s.ok() ? std::move(s).value() : nullptr;
}

// What one MujocoAdapter::Build made: the ICF problem, where its rows came
// from, and what the build saw.
struct BuiltProblem {
  icf::IcfModel problem;
  adapter::BuildRecords records;
  adapter::BuildInfo info;
};

// builder->Build at the state of d (stages computed) for step h, with the
// default ICF parameters and no controller, into *out (its problem rebuilt
// in place, as the stepper's is).
inline void BuildProblem(adapter::MujocoAdapter* builder, const mjModel* m, mjData* d, double h,
                         BuiltProblem* out) {
  out->records = adapter::BuildRecords{};
  builder->Build(m, d, h, icf::IcfParameters{}, nullptr, &out->problem, &out->records,
                 &out->info);
}

}  // namespace mjcenic::test_util

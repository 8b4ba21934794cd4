// Shared helpers of the C++ tests: owning pointers for MuJoCo objects.
#pragma once

#include <cstdlib>
#include <filesystem>
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

}  // namespace mjcenic::test_util

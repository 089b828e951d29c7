// validate_volcano_job FILE: checks the first YAML document of FILE (a manifest that `hetrun plan
// --emit volcano` wrote) the way the tests check emitted jobs: against the Volcano Job CRD's
// schema (tests/data/volcano/) and the admission webhook's rules. Prints every problem; exit 0
// when there is none, 1 when there are, 2 when FILE cannot be read or parsed. The documentation's
// runnable blocks (tests/docs/) use it to validate the manifests their tutorials emit.
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <stdexcept>

#include "openapi_validator.h"
#include "yaml_json.h"

namespace {

namespace fs = std::filesystem;

bool ReadFile(const fs::path& path, std::string* text) {
  std::ifstream in(path);
  if (!in) return false;
  std::stringstream buffer;
  buffer << in.rdbuf();
  *text = buffer.str();
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: validate_volcano_job FILE\n";
    return 2;
  }
  std::string manifest;
  std::string crd;
  fs::path crd_path =
      fs::path(HETRUN_SOURCE_DIR) / "tests" / "data" / "volcano" / "volcano-batch-job-crd.yaml";
  if (!ReadFile(argv[1], &manifest) || !ReadFile(crd_path, &crd)) {
    std::cerr << "validate_volcano_job: cannot read " << argv[1] << " or " << crd_path << "\n";
    return 2;
  }
  std::vector<nlohmann::json> docs;
  nlohmann::json schema;
  try {
    docs = hetrun::testing::YamlDocumentsToJson(manifest);
    schema = hetrun::testing::CrdSchema(hetrun::testing::YamlToJson(crd), "v1alpha1");
  } catch (const std::exception& error) {
    std::cerr << "validate_volcano_job: " << argv[1] << ": " << error.what() << "\n";
    return 2;
  }
  if (docs.empty() || docs[0].value("kind", "") != "Job" ||
      docs[0].value("apiVersion", "") != "batch.volcano.sh/v1alpha1") {
    std::cerr << argv[1] << ": the first document is not a batch.volcano.sh/v1alpha1 Job\n";
    return 1;
  }
  std::vector<std::string> errors = hetrun::testing::VolcanoAdmissionErrors(docs[0]);
  for (const std::string& error : hetrun::testing::ValidateOpenApi(schema, docs[0])) {
    errors.push_back(error);
  }
  for (const std::string& error : errors) std::cerr << argv[1] << ": " << error << "\n";
  if (errors.empty()) {
    std::cout << argv[1] << ": valid Volcano Job (CRD schema and admission rules), " << docs.size()
              << " document(s)\n";
  }
  return errors.empty() ? 0 : 1;
}

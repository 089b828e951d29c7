#include "summary_file.h"

#include <fstream>

namespace hetrun::testing {

std::map<std::string, std::string> ReadSummary(const std::string& path) {
  std::map<std::string, std::string> values;
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);) {
    size_t eq = line.find('=');
    if (eq != std::string::npos) values[line.substr(0, eq)] = line.substr(eq + 1);
  }
  return values;
}

}  // namespace hetrun::testing

#include "metrics/prometheus_text.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace hetrun::launcher {

void PrometheusText::Family(const std::string& name, const std::string& type,
                            const std::string& help) {
  std::string escaped;
  for (char c : help) {
    if (c == '\\') {
      escaped += "\\\\";
    } else if (c == '\n') {
      escaped += "\\n";
    } else {
      escaped += c;
    }
  }
  text_ += "# HELP " + name + " " + escaped + "\n# TYPE " + name + " " + type + "\n";
}

void PrometheusText::Sample(const std::string& name, const Labels& labels, double value) {
  text_ += name;
  if (!labels.empty()) {
    text_ += "{";
    for (size_t i = 0; i < labels.size(); ++i) {
      text_ += (i ? "," : "") + labels[i].first + "=\"" + EscapeLabel(labels[i].second) + "\"";
    }
    text_ += "}";
  }
  text_ += " " + FormatValue(value) + "\n";
}

std::string PrometheusText::EscapeLabel(const std::string& value) {
  std::string out;
  for (char c : value) {
    if (c == '\\' || c == '"') {
      out += '\\';
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

std::string PrometheusText::FormatValue(double value) {
  if (std::isnan(value)) return "NaN";
  if (std::isinf(value)) return value > 0 ? "+Inf" : "-Inf";
  // The shortest of %.15g / %.17g that reads back as the same double.
  char buffer[64];
  std::snprintf(buffer, sizeof(buffer), "%.15g", value);
  if (std::strtod(buffer, nullptr) != value) std::snprintf(buffer, sizeof(buffer), "%.17g", value);
  return buffer;
}

}  // namespace hetrun::launcher

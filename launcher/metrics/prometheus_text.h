// Prometheus text exposition format (version 0.0.4): one family at a time, with its HELP and
// TYPE lines, label values escaped, numbers in a form Prometheus parses (NaN, +Inf, -Inf).
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace hetrun::launcher {

using Labels = std::vector<std::pair<std::string, std::string>>;

class PrometheusText {
 public:
  /// Starts a family: `type` is gauge or counter. Families must not repeat.
  void Family(const std::string& name, const std::string& type, const std::string& help);
  /// One sample of the current family (labels in the order given).
  void Sample(const std::string& name, const Labels& labels, double value);
  const std::string& text() const { return text_; }

  /// `value` with \ " and newline escaped, as a label value.
  static std::string EscapeLabel(const std::string& value);
  static std::string FormatValue(double value);

 private:
  std::string text_;
};

}  // namespace hetrun::launcher

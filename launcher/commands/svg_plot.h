// A minimal SVG line chart (no dependencies): one polyline per series over a shared x axis.
#pragma once

#include <string>
#include <vector>

namespace hetrun::launcher {

struct PlotSeries {
  std::string name;
  std::vector<double> values;  ///< y per x = 0, 1, 2, ...
  std::string color;           ///< any SVG color
  bool dashed = false;
};

/// The chart as an SVG document: title, axes with min/max labels, legend.
std::string RenderLineChart(const std::string& title, const std::string& x_label,
                            const std::string& y_label, const std::vector<PlotSeries>& series);

}  // namespace hetrun::launcher

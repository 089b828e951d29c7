// SVG line chart writer for `hetrun simulate --plot`.
#include "commands/svg_plot.h"

#include <algorithm>
#include <cmath>
#include <sstream>

namespace hetrun::launcher {
namespace {

std::string Escape(const std::string& text) {
  std::string out;
  for (char ch : text) {
    switch (ch) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        out += ch;
    }
  }
  return out;
}

}  // namespace

std::string RenderLineChart(const std::string& title, const std::string& x_label,
                            const std::string& y_label, const std::vector<PlotSeries>& series) {
  constexpr double kWidth = 900, kHeight = 500, kLeft = 80, kRight = 200, kTop = 40, kBottom = 60;
  const double plot_w = kWidth - kLeft - kRight;
  const double plot_h = kHeight - kTop - kBottom;
  double y_min = INFINITY, y_max = -INFINITY;
  size_t points = 1;
  for (const PlotSeries& s : series) {
    for (double v : s.values) {
      if (!std::isfinite(v)) continue;
      y_min = std::min(y_min, v);
      y_max = std::max(y_max, v);
    }
    points = std::max(points, s.values.size());
  }
  if (!std::isfinite(y_min)) y_min = 0, y_max = 1;
  y_min = std::min(0.0, y_min);
  if (y_max <= y_min) y_max = y_min + 1;
  y_max *= 1.05;
  auto x_of = [&](size_t i) {
    return kLeft +
           (points > 1 ? plot_w * static_cast<double>(i) / static_cast<double>(points - 1) : 0);
  };
  auto y_of = [&](double v) { return kTop + plot_h * (1 - (v - y_min) / (y_max - y_min)); };

  std::ostringstream svg;
  svg.precision(6);
  svg << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << kWidth << "\" height=\"" << kHeight
      << "\" font-family=\"sans-serif\" font-size=\"12\">\n"
      << "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
      << "<text x=\"" << kLeft << "\" y=\"24\" font-size=\"15\">" << Escape(title) << "</text>\n"
      << "<line x1=\"" << kLeft << "\" y1=\"" << kTop + plot_h << "\" x2=\"" << kLeft + plot_w
      << "\" y2=\"" << kTop + plot_h << "\" stroke=\"black\"/>\n"
      << "<line x1=\"" << kLeft << "\" y1=\"" << kTop << "\" x2=\"" << kLeft << "\" y2=\""
      << kTop + plot_h << "\" stroke=\"black\"/>\n";
  for (int tick = 0; tick <= 4; ++tick) {
    double v = y_min + (y_max - y_min) * tick / 4;
    svg << "<text x=\"" << kLeft - 6 << "\" y=\"" << y_of(v) + 4 << "\" text-anchor=\"end\">" << v
        << "</text>\n";
  }
  svg << "<text x=\"" << kLeft << "\" y=\"" << kTop + plot_h + 18 << "\">0</text>\n"
      << "<text x=\"" << kLeft + plot_w << "\" y=\"" << kTop + plot_h + 18
      << "\" text-anchor=\"end\">" << points - 1 << "</text>\n"
      << "<text x=\"" << kLeft + plot_w / 2 << "\" y=\"" << kHeight - 20
      << "\" text-anchor=\"middle\">" << Escape(x_label) << "</text>\n"
      << "<text x=\"20\" y=\"" << kTop + plot_h / 2 << "\" transform=\"rotate(-90 20 "
      << kTop + plot_h / 2 << ")\" text-anchor=\"middle\">" << Escape(y_label) << "</text>\n";
  for (size_t k = 0; k < series.size(); ++k) {
    const PlotSeries& s = series[k];
    svg << "<polyline fill=\"none\" stroke=\"" << Escape(s.color) << "\" stroke-width=\"1.8\""
        << (s.dashed ? " stroke-dasharray=\"6 4\"" : "") << " points=\"";
    for (size_t i = 0; i < s.values.size(); ++i) {
      if (!std::isfinite(s.values[i])) continue;
      svg << x_of(i) << "," << y_of(s.values[i]) << " ";
    }
    svg << "\"/>\n";
    double ly = kTop + 10 + 20 * static_cast<double>(k);
    svg << "<line x1=\"" << kWidth - kRight + 15 << "\" y1=\"" << ly << "\" x2=\""
        << kWidth - kRight + 45 << "\" y2=\"" << ly << "\" stroke=\"" << Escape(s.color)
        << "\" stroke-width=\"2\"" << (s.dashed ? " stroke-dasharray=\"6 4\"" : "") << "/>\n"
        << "<text x=\"" << kWidth - kRight + 52 << "\" y=\"" << ly + 4 << "\">" << Escape(s.name)
        << "</text>\n";
  }
  svg << "</svg>\n";
  return svg.str();
}

}  // namespace hetrun::launcher

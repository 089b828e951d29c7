// The layout a pipeline starts from when a layout state exists (layout_state_resume.h).
#include "preflight/layout_state_resume.h"

#include <spdlog/spdlog.h>

#include <utility>

#include "hetrun/pipeline/layout_state.h"

namespace hetrun::launcher {

std::string ReadLayoutStateForStart(const std::string& path) {
  Result<std::optional<std::string>> text = pipeline::ReadLayoutStateText(path);
  if (!text.ok()) {
    spdlog::warn("ignoring the layout state {}: unreadable ({}); starting from the plan", path,
                 text.status().ToString());
    return "";
  }
  if (!*text) {
    spdlog::info("no layout state at {} yet: starting from the plan", path);
    return "";
  }
  if ((*text)->empty()) {
    spdlog::warn("ignoring the layout state {}: the file is empty; starting from the plan", path);
    return "";
  }
  return std::move(**text);
}

bool ResumeFromLayoutState(std::optional<pipeline::JobLayout>& layout, const std::string& text,
                           const std::string& path) {
  if (text.empty()) return false;
  if (!layout) {
    spdlog::info("layout state {} unused: this job runs no pipeline layout", path);
    return false;
  }
  pipeline::LayoutStartChoice choice = pipeline::ChooseStartLayout(*layout, text, path);
  if (choice.resumed) {
    spdlog::info("{}", choice.message);
    layout = std::move(choice.layout);
    return true;
  }
  spdlog::warn("{}", choice.message);
  return false;
}

}  // namespace hetrun::launcher

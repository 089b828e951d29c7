// The torch check before the rendezvous plugin is loaded: the record beside it, the installed
// torch's version.py, and the messages naming both versions (exit 78).
#include "rendezvous/plugin_torch.h"

#include <gtest/gtest.h>

#include "hetrun/base/exit_code.h"
#include "run_process.h"

namespace hetrun::launcher {
namespace {

// site-packages/hetrun/libhetrun_rendezvous.so (an empty stand-in: nothing is loaded) with its
// record, and site-packages/torch/version.py when `installed` is not empty.
std::filesystem::path WheelLayout(const testing::TempDir& dir, const std::string& record,
                                  const std::string& installed) {
  dir.WriteFile("site-packages/hetrun/libhetrun_rendezvous.so", "");
  dir.WriteFile("site-packages/hetrun/libhetrun_rendezvous.torch", record);
  if (!installed.empty()) {
    dir.WriteFile("site-packages/torch/version.py",
                  "from typing import Optional\n__all__ = ['__version__']\n__version__ = '" +
                      installed + "'\ndebug = False\n");
  }
  return std::filesystem::path(dir.path()) / "site-packages/hetrun/libhetrun_rendezvous.so";
}

constexpr const char* kWheelRecord = "# comment\ntorch_version=2.11.0+cu130\ntorch_dir=../torch\n";

TEST(PluginTorchTest, RecordNamesTheVersionAndTheFolder) {
  auto record = ParsePluginTorchRecord(kWheelRecord, "r");
  ASSERT_TRUE(record.ok()) << record.status().ToString();
  EXPECT_EQ(record->version, "2.11.0+cu130");
  EXPECT_EQ(record->dir, "../torch");
  auto partial = ParsePluginTorchRecord("torch_version=2.11.0\n", "the/record");
  ASSERT_FALSE(partial.ok());
  EXPECT_NE(partial.status().message().find("the/record: needs torch_version= and torch_dir="),
            std::string::npos);
  EXPECT_FALSE(ParsePluginTorchRecord("torch_version 2.11.0\ntorch_dir=/x\n", "r").ok());
}

TEST(PluginTorchTest, SameReleaseIgnoresTheLocalPartOnly) {
  EXPECT_TRUE(SameTorchRelease("2.11.0+cu130", "2.11.0+cpu"));
  EXPECT_TRUE(SameTorchRelease("2.11.0", "2.11.0+cu128"));
  EXPECT_FALSE(SameTorchRelease("2.11.0+cu130", "2.10.0+cu130"));
  EXPECT_FALSE(SameTorchRelease("2.11.0", "2.11.1"));
  EXPECT_FALSE(SameTorchRelease("", ""));
}

TEST(PluginTorchTest, MatchingTorchBesideThePluginGivesItsLibFolder) {
  testing::TempDir dir;
  auto plugin = WheelLayout(dir, kWheelRecord, "2.11.0+cpu");
  bool asked = false;
  auto lib = CheckPluginTorch(plugin, [&]() -> Result<std::filesystem::path> {
    asked = true;
    return NotFoundError("not asked");
  });
  ASSERT_TRUE(lib.ok()) << lib.status().ToString();
  EXPECT_EQ(*lib, std::filesystem::path(dir.path()) / "site-packages/torch/lib");
  EXPECT_FALSE(asked) << "the interpreter is asked only when the recorded folder has no torch";
}

TEST(PluginTorchTest, OtherTorchReleaseExits78NamingBothVersions) {
  testing::TempDir dir;
  auto plugin = WheelLayout(dir, kWheelRecord, "2.10.0+cu128");
  auto lib = CheckPluginTorch(plugin, nullptr);
  ASSERT_FALSE(lib.ok());
  EXPECT_EQ(ExitCodeFor(lib.status()), 78);
  const std::string& message = lib.status().message();
  EXPECT_NE(message.find("built for torch 2.11.0+cu130, but the installed torch is 2.10.0+cu128"),
            std::string::npos)
      << message;
  EXPECT_NE(message.find("install torch 2.11.0, or build hetrun against torch 2.10.0"),
            std::string::npos)
      << message;
}

TEST(PluginTorchTest, NoTorchAnywhereExits78NamingTheVersionAndWhereItLooked) {
  testing::TempDir dir;
  auto plugin = WheelLayout(dir, kWheelRecord, "");
  auto lib = CheckPluginTorch(plugin, []() -> Result<std::filesystem::path> {
    return FailedPreconditionError("python3 finds no torch package");
  });
  ASSERT_FALSE(lib.ok());
  EXPECT_EQ(ExitCodeFor(lib.status()), 78);
  const std::string& message = lib.status().message();
  EXPECT_NE(message.find("built for torch 2.11.0+cu130, but no torch is installed ("),
            std::string::npos)
      << message;
  EXPECT_NE(message.find("site-packages/torch has no torch, and python3 finds no torch package"),
            std::string::npos)
      << message;
}

TEST(PluginTorchTest, TorchElsewhereIsFoundThroughTheInterpreter) {
  testing::TempDir dir;
  auto plugin = WheelLayout(dir, kWheelRecord, "");
  dir.WriteFile("other/torch/version.py", "__version__ = \"2.11.0+cu130\"\n");
  const std::filesystem::path other = std::filesystem::path(dir.path()) / "other/torch";
  auto lib = CheckPluginTorch(plugin, [&]() -> Result<std::filesystem::path> { return other; });
  ASSERT_TRUE(lib.ok()) << lib.status().ToString();
  EXPECT_EQ(*lib, other / "lib");
}

TEST(PluginTorchTest, AbsoluteRecordedFolderAndMissingRecord) {
  testing::TempDir dir;
  dir.WriteFile("torch/version.py", "__version__ = '2.11.0'\n");
  auto plugin = WheelLayout(dir, "torch_version=2.11.0\ntorch_dir=" + dir.path() + "/torch\n", "");
  auto lib = CheckPluginTorch(plugin, nullptr);
  ASSERT_TRUE(lib.ok()) << lib.status().ToString();
  EXPECT_EQ(*lib, std::filesystem::path(dir.path()) / "torch/lib");
  std::filesystem::remove(plugin.parent_path() / kPluginTorchRecordName);
  auto missing = CheckPluginTorch(plugin, nullptr);
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(ExitCodeFor(missing.status()), 78);
  EXPECT_NE(missing.status().message().find("has no readable torch record"), std::string::npos)
      << missing.status().message();
}

TEST(PluginTorchTest, VersionFileWithoutVersionIsNamed) {
  testing::TempDir dir;
  dir.WriteFile("torch/version.py", "debug = False\n");
  auto version = TorchPackageVersion(std::filesystem::path(dir.path()) / "torch");
  ASSERT_FALSE(version.ok());
  EXPECT_NE(version.status().message().find("version.py: no __version__ = '...' line"),
            std::string::npos)
      << version.status().message();
}

}  // namespace
}  // namespace hetrun::launcher

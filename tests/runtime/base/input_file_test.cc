// Bounded reading of untrusted input files: regular files only, a size limit, a nesting limit.
#include "hetrun/base/input_file.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <string>

#include "run_process.h"

namespace hetrun {
namespace {

TEST(InputFileTest, ReadsARegularFileWhole) {
  testing::TempDir dir;
  std::string path = dir.WriteFile("a.json", "{\"x\": 1}\n");
  Result<std::string> text = ReadRegularFile(path, 100, "model file");
  ASSERT_TRUE(text.ok()) << text.status().ToString();
  EXPECT_EQ(*text, "{\"x\": 1}\n");
}

TEST(InputFileTest, RefusesFifosDevicesAndDirectoriesWithoutBlocking) {
  testing::TempDir dir;
  std::string fifo = dir.path() + "/fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  for (const auto& [path, kind] : std::vector<std::pair<std::string, std::string>>{
           {fifo, "a FIFO"}, {"/dev/zero", "a character device"}, {dir.path(), "a directory"}}) {
    Result<std::string> text = ReadRegularFile(path, 1 << 20, "model file");
    ASSERT_FALSE(text.ok()) << path;
    EXPECT_EQ(text.status().code(), StatusCode::kInvalidArgument) << path;
    EXPECT_NE(text.status().message().find("model file " + path + ": " + kind), std::string::npos)
        << text.status().message();
  }
}

TEST(InputFileTest, RefusesFilesOverTheLimitAndNamesMissingOnes) {
  testing::TempDir dir;
  std::string path = dir.WriteFile("big", std::string(2048, 'x'));
  Result<std::string> text = ReadRegularFile(path, 1024, "scenario file");
  ASSERT_FALSE(text.ok());
  EXPECT_NE(text.status().message().find("larger than 1 KiB"), std::string::npos)
      << text.status().message();
  Result<std::string> missing = ReadRegularFile(dir.path() + "/none", 1024, "scenario file");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
}

TEST(InputFileTest, JsonDepthCountsArraysAndObjectsButNotBracketsInStrings) {
  EXPECT_TRUE(CheckJsonDepth(R"({"a": [[1], {"b": [2]}]})", 4, "t").ok());
  EXPECT_FALSE(CheckJsonDepth(R"({"a": [[1], {"b": [2]}]})", 3, "t").ok());
  EXPECT_TRUE(CheckJsonDepth(R"({"s": "[[[[[[\"[[[["})", 1, "t").ok());
  Status deep = CheckJsonDepth(std::string(100'000, '['), kMaxJsonDepth, "model.json");
  ASSERT_FALSE(deep.ok());
  EXPECT_NE(deep.message().find("model.json: JSON nested deeper than 64 levels (byte 64)"),
            std::string::npos)
      << deep.message();
}

}  // namespace
}  // namespace hetrun

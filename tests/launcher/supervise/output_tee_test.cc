#include "supervise/output_tee.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>

#include "run_process.h"

namespace hetrun::launcher {
namespace {

std::string ReadWholeFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

class OutputTeeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    console_path_ = dir_.path() + "/console";
    log_path_ = dir_.path() + "/log";
    console_ = ::open(console_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    log_ = ::open(log_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ASSERT_GE(console_, 0);
    ASSERT_GE(log_, 0);
    sink_ = std::make_unique<ConsoleSink>(console_, "console");
  }
  void TearDown() override {
    sink_.reset();
    ::close(console_);
    ::close(log_);
  }
  std::string Console() const { return ReadWholeFile(console_path_); }
  std::string Log() const { return ReadWholeFile(log_path_); }

  testing::TempDir dir_;
  std::string console_path_, log_path_;
  int console_ = -1, log_ = -1;
  std::unique_ptr<ConsoleSink> sink_;
};

TEST_F(OutputTeeTest, PrefixesWholeLinesAssembledFromPieces) {
  OutputTee tee(sink_.get(), "[rank 2] ", log_, 0);
  tee.Consume("hel");
  tee.Consume("lo\nwor");
  tee.Consume("ld\n\n");
  EXPECT_EQ(Console(), "[rank 2] hello\n[rank 2] world\n[rank 2] \n");
  EXPECT_EQ(Log(), "hello\nworld\n\n") << "the log file is unprefixed";
}

TEST_F(OutputTeeTest, JsonModeWrapsEachConsoleLineAndKeepsTheLogFileRaw) {
  OutputTee tee(sink_.get(), "[rank 2] ", log_, 1);
  tee.WrapAsJson(2, "stderr");
  tee.Consume("say \"hi\"\nbyte \xff\n");
  std::string console = Console();
  size_t newline = console.find('\n');
  ASSERT_NE(newline, std::string::npos);
  nlohmann::json first = nlohmann::json::parse(console.substr(0, newline));
  nlohmann::json second = nlohmann::json::parse(console.substr(newline + 1));
  EXPECT_EQ(first["rank"], 2);
  EXPECT_EQ(first["stream"], "stderr");
  EXPECT_EQ(first["msg"], "say \"hi\"");
  EXPECT_TRUE(first.contains("time"));
  EXPECT_EQ(second["msg"].get<std::string>().rfind("byte ", 0), 0u);
  EXPECT_EQ(Log(), "say \"hi\"\nbyte \xff\n");
  EXPECT_EQ(tee.Tail(), (std::vector<std::string>{"byte \xff"})) << "the tail stays raw";
}

TEST_F(OutputTeeTest, FinishAddsTheMissingNewline) {
  OutputTee tee(sink_.get(), "", -1, 0);
  tee.Consume("no newline");
  EXPECT_EQ(Console(), "");
  tee.Finish();
  EXPECT_EQ(Console(), "no newline\n");
}

TEST_F(OutputTeeTest, SplitsOverlongLinesIntoPrefixedPieces) {
  OutputTee tee(sink_.get(), "> ", -1, 0);
  tee.Consume(std::string(OutputTee::kMaxLineBytes + 10, 'x'));
  tee.Finish();
  EXPECT_EQ(Console(), "> " + std::string(OutputTee::kMaxLineBytes, 'x') + "\n> " +
                           std::string(10, 'x') + "\n");
}

TEST_F(OutputTeeTest, KeepsTheLastLinesForTheTerminationLog) {
  OutputTee tee(nullptr, "", -1, 3);
  for (int i = 0; i < 10; ++i) tee.Consume("line " + std::to_string(i) + "\n");
  EXPECT_EQ(tee.Tail(), (std::vector<std::string>{"line 7", "line 8", "line 9"}));
}

// Issue 28 item 15: a kept line was cut at 512 bytes even inside a UTF-8 character.
TEST_F(OutputTeeTest, AKeptTailLineIsCutBetweenCharacters) {
  OutputTee tee(sink_.get(), "[rank 0] ", log_, 1);
  std::string line = std::string(511, 'a') + "\xE2\x82\xAC" + "\n";
  tee.Consume(line);
  EXPECT_EQ(tee.Tail(), (std::vector<std::string>{std::string(511, 'a')}));
}

}  // namespace
}  // namespace hetrun::launcher

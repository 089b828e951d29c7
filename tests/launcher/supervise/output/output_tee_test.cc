#include "supervise/output/output_tee.h"

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

// Issue 28 item 4: output was forwarded only at newlines, so progress bars (carriage-return
// updates) showed all at once at the end. A segment ending in '\r' goes out at once.
TEST_F(OutputTeeTest, ACarriageReturnForwardsTheSegmentAtOnce) {
  OutputTee tee(sink_.get(), "[rank 0] ", log_, 2);
  tee.Consume(" 10%|#\r");
  EXPECT_EQ(Console(), "[rank 0]  10%|#\r");
  tee.Consume(" 20%|##\r 100%|#####\n");
  EXPECT_EQ(Console(), "[rank 0]  10%|#\r[rank 0]  20%|##\r[rank 0]  100%|#####\n");
  EXPECT_EQ(Log(), " 10%|#\r 20%|##\r 100%|#####\n") << "the log file gets the raw bytes";
  tee.Consume("done\r\n");
  EXPECT_EQ(tee.Tail(), (std::vector<std::string>{" 100%|#####", "done"}))
      << "the tail keeps the last state of each line";
}

TEST_F(OutputTeeTest, AQuietPartialLineIsForwardedAfter100Milliseconds) {
  using namespace std::chrono_literals;
  OutputTee tee(sink_.get(), "[rank 1] ", log_, 0);
  const OutputTee::Clock::time_point t0 = OutputTee::Clock::now();
  tee.Consume("Password: ", t0);
  ASSERT_TRUE(tee.NextTick().has_value());
  EXPECT_EQ(*tee.NextTick(), t0 + 100ms);
  tee.Tick(t0 + 50ms);
  EXPECT_EQ(Console(), "") << "not quiet long enough";
  tee.Tick(t0 + 100ms);
  EXPECT_EQ(Console(), "[rank 1] Password: ");
  EXPECT_FALSE(tee.NextTick().has_value()) << "nothing left to forward";
  tee.Consume("ok\nnext\n", t0 + 2s);
  EXPECT_EQ(Console(), "[rank 1] Password: ok\n[rank 1] next\n") << "one prefix per line";
  tee.Consume("tail", t0 + 3s);
  tee.Tick(t0 + 3s + 100ms);
  tee.Finish();
  EXPECT_EQ(Console(), "[rank 1] Password: ok\n[rank 1] next\n[rank 1] tail\n");
  EXPECT_EQ(Log(), "Password: ok\nnext\ntail") << "raw: no newline added";
}

TEST_F(OutputTeeTest, JsonModeForwardsProgressAtMostAboutOncePerSecond) {
  using namespace std::chrono_literals;
  OutputTee tee(sink_.get(), "", log_, 0);
  tee.WrapAsJson(3, "stderr");
  const OutputTee::Clock::time_point t0 = OutputTee::Clock::now();
  for (int i = 0; i < 300; ++i) {
    tee.Consume("step " + std::to_string(i) + "\r", t0 + i * 1ms);
    tee.Tick(t0 + i * 1ms);
  }
  auto records = [this] {
    std::vector<nlohmann::json> out;
    std::istringstream lines(Console());
    for (std::string line; std::getline(lines, line);) out.push_back(nlohmann::json::parse(line));
    return out;
  };
  ASSERT_EQ(records().size(), 1u) << Console();
  EXPECT_EQ(records()[0]["msg"], "step 0");
  ASSERT_TRUE(tee.NextTick().has_value());
  tee.Tick(t0 + 1s);
  ASSERT_EQ(records().size(), 2u) << Console();
  EXPECT_EQ(records()[1]["msg"], "step 299") << "the latest state, not every update";
  EXPECT_FALSE(tee.NextTick().has_value());
  tee.Consume("finished\n", t0 + 1100ms);
  ASSERT_EQ(records().size(), 3u) << "whole lines are never held back";
  EXPECT_EQ(records()[2]["msg"], "finished");
  std::string raw;
  for (int i = 0; i < 300; ++i) raw += "step " + std::to_string(i) + "\r";
  EXPECT_EQ(Log(), raw + "finished\n") << "the log file gets every raw byte";
}

// Issue 39 item 10: a quiet partial line forwarded for a progress bar let another rank's line
// land in its middle, and the rest printed without a rank prefix.
TEST_F(OutputTeeTest, AnotherRanksLineEndsAnOpenPartialLineAndTheRestIsPrefixedAgain) {
  using namespace std::chrono_literals;
  OutputTee zero(sink_.get(), "[rank 0] ", log_, 0);
  OutputTee one(sink_.get(), "[rank 1] ", -1, 0);
  const OutputTee::Clock::time_point t0 = OutputTee::Clock::now();
  zero.Consume("loading ", t0);
  zero.Tick(t0 + 100ms);
  one.Consume("hello\n", t0 + 200ms);
  zero.Consume("done\n", t0 + 300ms);
  EXPECT_EQ(Console(), "[rank 0] loading \n[rank 1] hello\n[rank 0] done\n");
  zero.Consume(" 50%\r", t0 + 400ms);
  one.Consume("again\n", t0 + 500ms);
  zero.Consume(" 100%\n", t0 + 600ms);
  EXPECT_EQ(Console(),
            "[rank 0] loading \n[rank 1] hello\n[rank 0] done\n[rank 0]  50%\r\n[rank 1] "
            "again\n[rank 0]  100%\n")
      << "a progress bar's line is ended before another rank's, not overwritten";
  zero.Consume("more", t0 + 700ms);
  zero.Tick(t0 + 800ms);
  zero.Consume(" of it", t0 + 900ms);
  zero.Tick(t0 + 1000ms);
  zero.Finish();
  one.Finish();
  EXPECT_NE(Console().find("[rank 0] more of it\n"), std::string::npos)
      << "its own continuation needs no prefix";
}

}  // namespace
}  // namespace hetrun::launcher

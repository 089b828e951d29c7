// TORCHELASTIC_ERROR_FILE as torch's @record writes it: the message and the innermost frames,
// read with bounds; anything else is ignored rather than trusted.
#include "supervise/report/worker_error_file.h"

#include <gtest/gtest.h>

#include "hetrun/base/shown_text.h"
#include "run_process.h"

namespace hetrun::launcher {
namespace {

const char kTraceback[] =
    "Traceback (most recent call last):\n"
    "  File \"/app/train.py\", line 40, in <module>\n"
    "    main()\n"
    "  File \"/app/train.py\", line 31, in main\n"
    "    loss = step(model, batch)\n"
    "           ^^^^^^^^^^^^^^^^^^\n"
    "  File \"/app/train.py\", line 12, in step\n"
    "    return model(batch).sum()\n"
    "  File \"/usr/lib/torch/nn/module.py\", line 1775, in _call_impl\n"
    "    return forward_call(*args, **kwargs)\n"
    "RuntimeError: boom\n";

TEST(WorkerErrorFileTest, KeepsTheInnermostFramesWithTheirSourceLines) {
  std::vector<std::string> frames = LastTracebackFrames(kTraceback, 3);
  ASSERT_EQ(frames.size(), 3u);
  EXPECT_EQ(frames[0], "File \"/app/train.py\", line 31, in main: loss = step(model, batch)");
  EXPECT_EQ(frames[1], "File \"/app/train.py\", line 12, in step: return model(batch).sum()");
  EXPECT_EQ(frames[2],
            "File \"/usr/lib/torch/nn/module.py\", line 1775, in _call_impl: return "
            "forward_call(*args, **kwargs)");
}

TEST(WorkerErrorFileTest, ReadsTorchsRecordFormat) {
  testing::TempDir dir;
  std::string path = dir.WriteFile(
      "error.json", R"({"message": {"message": "RuntimeError: boom", "extraInfo": {)"
                    R"("py_callstack": "Traceback (most recent call last):\n  File \"t.py\", )"
                    R"(line 2, in <module>\n    f()\nRuntimeError: boom\n", "timestamp": "1"}}})");
  std::optional<WorkerErrorReport> report = ReadWorkerErrorFile(path);
  ASSERT_TRUE(report.has_value());
  EXPECT_EQ(report->message, "RuntimeError: boom");
  EXPECT_EQ(report->last_frames,
            (std::vector<std::string>{"File \"t.py\", line 2, in <module>: f()"}));
}

TEST(WorkerErrorFileTest, AcceptsAPlainStringMessage) {
  testing::TempDir dir;
  std::string path = dir.WriteFile("error.json", R"({"message": "SIGSEGV in worker"})");
  std::optional<WorkerErrorReport> report = ReadWorkerErrorFile(path);
  ASSERT_TRUE(report.has_value());
  EXPECT_EQ(report->message, "SIGSEGV in worker");
}

TEST(WorkerErrorFileTest, MissingMalformedDeepOrHugeFilesAreIgnored) {
  testing::TempDir dir;
  EXPECT_FALSE(ReadWorkerErrorFile(dir.path() + "/none.json").has_value());
  EXPECT_FALSE(ReadWorkerErrorFile(dir.WriteFile("bad.json", "{not json")).has_value());
  EXPECT_FALSE(ReadWorkerErrorFile(dir.WriteFile("list.json", "[1, 2]")).has_value());
  EXPECT_FALSE(
      ReadWorkerErrorFile(dir.WriteFile("deep.json", std::string(10'000, '['))).has_value());
  std::string huge = R"({"message": ")" + std::string(kMaxErrorFileBytes, 'x') + R"("})";
  EXPECT_FALSE(ReadWorkerErrorFile(dir.WriteFile("huge.json", huge)).has_value());
  EXPECT_FALSE(ReadWorkerErrorFile("/dev/zero").has_value());
}

// Issue 28 item 15: messages were cut at 240 bytes mid-character and control characters were
// kept raw (the termination log and the terminal got them).
TEST(WorkerErrorFileTest, LongOrHostileMessagesAreCutBetweenCharactersAndEscaped) {
  testing::TempDir dir;
  const std::string euro = "\xE2\x82\xAC";
  std::string long_message = "a";  // 1 + 3 x 79 = 238: byte 240 falls inside the 80th euro
  while (long_message.size() < 300) long_message += euro;
  std::string path = dir.WriteFile("error.json", R"({"message": ")" + long_message + R"("})");
  std::optional<WorkerErrorReport> report = ReadWorkerErrorFile(path);
  ASSERT_TRUE(report.has_value());
  EXPECT_TRUE(IsValidUtf8(report->message)) << "no partial character";
  EXPECT_EQ(report->message, long_message.substr(0, 238) + "...");
  std::string hostile = dir.WriteFile(
      "hostile.json",
      R"({"message": {"message": "boom\u001b[2J\u0007\nsecond line", "extraInfo": {)"
      R"("py_callstack": "  File \"t\u001b]0;x\u0007.py\", line 2, in f\n    g()\n"}}})");
  std::optional<WorkerErrorReport> escaped = ReadWorkerErrorFile(hostile);
  ASSERT_TRUE(escaped.has_value());
  EXPECT_EQ(escaped->message, "boom\\x1b[2J\\x07\nsecond line");
  ASSERT_EQ(escaped->last_frames.size(), 1u);
  EXPECT_EQ(escaped->last_frames[0], "File \"t\\x1b]0;x\\x07.py\", line 2, in f: g()");
}

}  // namespace
}  // namespace hetrun::launcher

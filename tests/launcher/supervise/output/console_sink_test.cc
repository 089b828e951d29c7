// ConsoleSink against a real pipe whose reader stopped reading: writing never blocks, whole lines
// are queued up to the bound and then dropped and counted, and what was queued arrives in order
// once the reader reads again. OutputTee counts the lines a full disk (/dev/full) refused.
#include "supervise/output/console_sink.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <string>

#include "supervise/output/output_tee.h"

namespace hetrun::launcher {
namespace {

std::string ReadAvailable(int fd) {
  std::string text;
  char buffer[65536];
  while (true) {
    ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n <= 0) break;
    text.append(buffer, static_cast<size_t>(n));
  }
  return text;
}

TEST(ConsoleSinkTest, StoppedReaderNeverBlocksAndDroppedLinesAreCounted) {
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);  // a blocking pipe, as a console usually is
  const std::string line = std::string(1023, 'x') + "\n";
  {
    ConsoleSink sink(fds[1], "stdout", 64 * 1024);
    // 64 KiB fit in the pipe, 64 KiB in the buffer; the rest of 1 MiB must be dropped, and
    // this loop must return (a blocking write would hang here).
    for (int i = 0; i < 1024; ++i) sink.WriteLine(line);
    EXPECT_TRUE(sink.Pending());
    EXPECT_GE(sink.dropped_lines(), 1024u - 2 * 64u - 8u);
    EXPECT_LE(sink.dropped_lines(), 1024u - 64u);
    EXPECT_EQ(sink.dropped_bytes(), sink.dropped_lines() * line.size());
    ::fcntl(fds[0], F_SETFL, O_NONBLOCK);
    std::string got = ReadAvailable(fds[0]);
    sink.FlushFor(1000);
    got += ReadAvailable(fds[0]);
    EXPECT_FALSE(sink.Pending());
    EXPECT_EQ(got.size() + sink.dropped_bytes(), 1024u * line.size());
    EXPECT_EQ(got.size() % line.size(), 0u) << "only whole lines";
  }
  ::close(fds[0]);
  ::close(fds[1]);
}

TEST(ConsoleSinkTest, CallersFileDescriptionStaysBlocking) {
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  {
    ConsoleSink sink(fds[1], "stdout");
    sink.WriteLine("hello\n");
  }
  EXPECT_EQ(::fcntl(fds[1], F_GETFL) & O_NONBLOCK, 0);
  char buffer[16] = {};
  EXPECT_EQ(::read(fds[0], buffer, sizeof buffer), 6);
  ::close(fds[0]);
  ::close(fds[1]);
}

TEST(ConsoleSinkTest, LogLinesRefusedByAFullDiskAreCounted) {
  int full = ::open("/dev/full", O_WRONLY | O_CLOEXEC);
  if (full < 0) GTEST_SKIP() << "no /dev/full";
  OutputTee tee(nullptr, "", full, 0);
  tee.Consume("one\ntwo\nthree\n");
  EXPECT_EQ(tee.log_lost_lines(), 3u);
  EXPECT_EQ(tee.log_error(), ENOSPC);
  ::close(full);
}

}  // namespace
}  // namespace hetrun::launcher

#include "hetrun/base/status.h"

#include <gtest/gtest.h>

#include <cerrno>
#include <memory>
#include <set>

namespace hetrun {
namespace {

Result<int> Half(int x) {
  if (x % 2 != 0) return InvalidArgumentError(std::to_string(x) + " is odd");
  return x / 2;
}

Result<int> Quarter(int x) {
  HETRUN_ASSIGN_OR_RETURN(int half, Half(x));
  HETRUN_ASSIGN_OR_RETURN(int quarter, Half(half));
  return quarter;
}

Status CheckPositive(int x) {
  if (x <= 0) return InvalidArgumentError("not positive");
  return Status::Ok();
}

Status CheckBoth(int a, int b) {
  HETRUN_RETURN_IF_ERROR(CheckPositive(a));
  HETRUN_RETURN_IF_ERROR(CheckPositive(b));
  return Status::Ok();
}

TEST(StatusTest, DefaultIsOkAndPrintsOk) {
  Status status;
  EXPECT_TRUE(status.ok());
  EXPECT_EQ(status.ToString(), "ok");
}

TEST(StatusTest, ErrorCarriesCodeAndMessage) {
  Status status = ArchMismatchError("sm_90 only on an A100");
  EXPECT_FALSE(status.ok());
  EXPECT_EQ(status.code(), StatusCode::kArchMismatch);
  EXPECT_EQ(status.ToString(), "arch mismatch: sm_90 only on an A100");
}

TEST(StatusTest, WithContextPrependsAndKeepsCode) {
  Status status = NotFoundError("no such file").WithContext("reading plan.json");
  EXPECT_EQ(status.code(), StatusCode::kNotFound);
  EXPECT_EQ(status.message(), "reading plan.json: no such file");
  EXPECT_TRUE(Status::Ok().WithContext("ignored").ok());
}

TEST(StatusTest, ErrnoErrorClassifiesMissingFilesAsNotFound) {
  EXPECT_EQ(ErrnoError("open", "/x", ENOENT).code(), StatusCode::kNotFound);
  EXPECT_EQ(ErrnoError("open", "/x", EACCES).code(), StatusCode::kInvalidArgument);
  Status other = ErrnoError("mmap", "/x", ENOMEM);
  EXPECT_EQ(other.code(), StatusCode::kInternal);
  EXPECT_NE(other.message().find("mmap(/x): "), std::string::npos);
}

TEST(StatusTest, ReturnIfErrorStopsAtFirstFailure) {
  EXPECT_TRUE(CheckBoth(1, 2).ok());
  EXPECT_EQ(CheckBoth(1, -2).code(), StatusCode::kInvalidArgument);
}

TEST(ResultTest, HoldsValueOrStatus) {
  Result<int> good = Half(8);
  ASSERT_TRUE(good.ok());
  EXPECT_EQ(*good, 4);
  EXPECT_TRUE(good.status().ok());

  Result<int> bad = Half(3);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(), "3 is odd");
}

TEST(ResultTest, AssignOrReturnPropagatesTheFirstError) {
  EXPECT_EQ(*Quarter(8), 2);
  Result<int> odd_half = Quarter(6);
  ASSERT_FALSE(odd_half.ok());
  EXPECT_EQ(odd_half.status().message(), "3 is odd");
}

TEST(ResultTest, MovesOutMoveOnlyValues) {
  Result<std::unique_ptr<int>> r = std::make_unique<int>(7);
  std::unique_ptr<int> taken = std::move(r).value();
  ASSERT_NE(taken, nullptr);
  EXPECT_EQ(*taken, 7);
}

TEST(StatusTest, EveryCodeHasADistinctName) {
  std::set<std::string_view> names;
  for (int c = 0; c <= static_cast<int>(StatusCode::kInternal); ++c) {
    names.insert(StatusCodeName(static_cast<StatusCode>(c)));
  }
  EXPECT_EQ(names.size(), static_cast<size_t>(StatusCode::kInternal) + 1);
  EXPECT_EQ(names.count("unknown"), 0u);
}

}  // namespace
}  // namespace hetrun

#include "hetrun/pipeline/layout_state.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

namespace hetrun::pipeline {
namespace {

JobLayout TwoStages() {
  JobLayout layout;
  layout.num_layers = 6;
  layout.layer_names = {"embedding", "block.0", "block.1", "block.2", "block.3", "head"};
  layout.micro_batches = 4;
  layout.stages = {{0, 2, {0, 1}, {"ampere", "ampere"}, {1, 2}}, {2, 4, {2}, {"hopper"}, {1}}};
  return layout;
}

// The plan moved to 4,2 by two live moves.
JobLayout Moved() {
  JobLayout moved = TwoStages();
  moved.stages[0].layers = 4;
  moved.stages[1].first_layer = 4;
  moved.stages[1].layers = 2;
  moved.revision = 2;
  return moved;
}

TEST(LayoutStateTest, AStateOfTheSameJobGivesItsSplitAndRevisionAndKeepsThePlansRest) {
  JobLayout moved = Moved();
  moved.stages[0].shares = {5, 5};  // the plan's shares and families stay
  moved.stages[1].families = {"x"};
  LayoutStartChoice choice = ChooseStartLayout(TwoStages(), JobLayoutJson(moved), "s.json");
  ASSERT_TRUE(choice.resumed) << choice.message;
  EXPECT_EQ(choice.message,
            "resuming from the layout state s.json, revision 2, split 4,2 (the plan's was 2,4)");
  EXPECT_EQ(SplitText(choice.layout), "4,2");
  EXPECT_EQ(choice.layout.revision, 2);
  EXPECT_EQ(choice.layout.stages[1].first_layer, 4);
  EXPECT_EQ(choice.layout.stages[0].shares, (std::vector<double>{1, 2}));
  EXPECT_EQ(choice.layout.stages[1].families, (std::vector<std::string>{"hopper"}));
  EXPECT_EQ(choice.layout.micro_batches, 4);
}

TEST(LayoutStateTest, AStateOfAnotherJobKeepsThePlanAndSaysWhy) {
  auto why = [](const JobLayout& state) {
    LayoutStartChoice choice = ChooseStartLayout(TwoStages(), JobLayoutJson(state), "s.json");
    EXPECT_FALSE(choice.resumed);
    EXPECT_EQ(SplitText(choice.layout), "2,4");
    EXPECT_EQ(choice.layout.revision, 0);
    EXPECT_EQ(choice.message.rfind("ignoring the layout state s.json: ", 0), 0u) << choice.message;
    EXPECT_NE(choice.message.find("; starting from the plan's split 2,4"), std::string::npos);
    return choice.message;
  };
  JobLayout other = Moved();
  other.num_layers = 7;
  other.layer_names.push_back("extra");
  other.stages[1].layers = 3;
  EXPECT_NE(why(other).find("it has 7 layers, the plan 6 (another model?)"), std::string::npos);
  other = Moved();
  other.layer_names[3] = "mlp";
  EXPECT_NE(why(other).find("its layer 3 is 'mlp', the plan's 'block.2'"), std::string::npos);
  other = Moved();
  other.layer_names.clear();
  EXPECT_NE(why(other).find("it names no layers, the plan does"), std::string::npos);
  other = Moved();
  other.stages = {{0, 6, {0, 1, 2}, {"", "", ""}, {1, 1, 1}}};
  EXPECT_NE(why(other).find("it has 1 stages, the plan 2"), std::string::npos);
  other = Moved();
  other.stages[0].ranks = {0};
  other.stages[0].families = {""};
  other.stages[0].shares = {1};
  other.stages[1].ranks = {1};
  EXPECT_NE(why(other).find("its stage 0 has ranks 0, the plan's 0,1"), std::string::npos);
  other = Moved();
  other.revision = 0;
  EXPECT_NE(why(other).find("its revision 0 is not above the plan's 0"), std::string::npos);
}

TEST(LayoutStateTest, AMalformedStateKeepsThePlanNamingTheError) {
  for (const char* text : {"", "{", "[1, 2]", "{\"num_layers\": 6}"}) {
    LayoutStartChoice choice = ChooseStartLayout(TwoStages(), text, "s.json");
    EXPECT_FALSE(choice.resumed) << text;
    EXPECT_NE(choice.message.find("ignoring the layout state s.json: malformed: s.json"),
              std::string::npos)
        << choice.message;
    EXPECT_EQ(SplitText(choice.layout), "2,4");
  }
}

TEST(LayoutStateTest, RankZeroWritesTheStateAndLocalRankZeroTheLayoutFile) {
  char dir_template[] = "/tmp/hetrun_layout_state_XXXXXX";
  ASSERT_NE(::mkdtemp(dir_template), nullptr);
  const std::string dir = dir_template;
  const std::string layout_path = dir + "/layout.json", state = dir + "/state.json";
  ASSERT_FALSE(ReadLayoutStateText(state)->has_value()) << "no state yet";
  // Local rank 0 of another node: its layout file only.
  ASSERT_TRUE(WriteMovedLayout(Moved(), layout_path, state, 2, 0).ok());
  EXPECT_TRUE(std::filesystem::exists(layout_path));
  EXPECT_FALSE(std::filesystem::exists(state));
  std::filesystem::remove(layout_path);
  // Another local rank: nothing.
  ASSERT_TRUE(WriteMovedLayout(Moved(), layout_path, state, 1, 1).ok());
  EXPECT_FALSE(std::filesystem::exists(layout_path));
  // Global rank 0: both, the same layout.
  ASSERT_TRUE(WriteMovedLayout(Moved(), layout_path, state, 0, 0).ok());
  Result<std::optional<std::string>> text = ReadLayoutStateText(state);
  ASSERT_TRUE(text.ok() && text->has_value()) << text.status().ToString();
  EXPECT_EQ(**text, JobLayoutJson(Moved()));
  EXPECT_TRUE(ChooseStartLayout(TwoStages(), **text, state).resumed);
  // A state folder that is gone: the error names the state.
  Status gone = WriteMovedLayout(Moved(), layout_path, dir + "/gone/state.json", 0, 0);
  ASSERT_FALSE(gone.ok());
  EXPECT_NE(gone.message().find("HETRUN_LAYOUT_STATE"), std::string::npos) << gone.message();
  // Not a regular file: an error, not "no state".
  EXPECT_FALSE(ReadLayoutStateText(dir).ok());
  std::filesystem::remove_all(dir);
}

// Issue 28 item 14: the state's temporary file was a fixed STATE.tmp opened without O_EXCL or
// O_NOFOLLOW, so a symlink planted there (the state lives on shared storage) had its target
// overwritten with the layout.
TEST(LayoutStateTest, ASymlinkPlantedAtTheTemporaryNameIsNotFollowed) {
  char dir_template[] = "/tmp/hetrun_layout_state_XXXXXX";
  ASSERT_NE(::mkdtemp(dir_template), nullptr);
  const std::string dir = dir_template;
  const std::string layout_path = dir + "/layout.json", state = dir + "/state.json";
  const std::string victim = dir + "/victim";
  { std::ofstream(victim) << "precious\n"; }
  ASSERT_EQ(::symlink(victim.c_str(), (state + ".tmp").c_str()), 0);
  ASSERT_EQ(::symlink(victim.c_str(), (layout_path + ".tmp").c_str()), 0);
  ASSERT_TRUE(WriteMovedLayout(Moved(), layout_path, state, 0, 0).ok());
  std::ifstream in(victim);
  std::string content((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(content, "precious\n") << "the planted link's target was overwritten";
  EXPECT_EQ(**ReadLayoutStateText(state), JobLayoutJson(Moved()));
  EXPECT_FALSE(std::filesystem::is_symlink(state));
  // Only the planted links are left beside the files: no temporary of ours.
  size_t entries = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    (void)entry;
    ++entries;
  }
  EXPECT_EQ(entries, 5u) << "victim, two links, layout.json, state.json";
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace hetrun::pipeline

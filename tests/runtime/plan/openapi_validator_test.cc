// The CRD schema validator (tests/testing/openapi_validator.h) on the keywords the JobSet, Kueue
// and Volcano CRDs use, each with a value it must accept and one it must reject.
#include "openapi_validator.h"

#include <gtest/gtest.h>

namespace hetrun::testing {
namespace {

using nlohmann::json;

std::string Joined(const std::vector<std::string>& errors) {
  std::string out;
  for (const std::string& error : errors) out += error + "\n";
  return out;
}

// A quantity as the CRDs declare it: anyOf integer/string, int-or-string, a pattern.
const json kQuantity = {{"anyOf", json::array({{{"type", "integer"}}, {{"type", "string"}}})},
                        {"pattern", "^[0-9]+([KMG]i)?$"},
                        {"x-kubernetes-int-or-string", true}};

TEST(OpenApiValidatorTest, IntOrStringWithAnyOfTakesBothAndNothingElse) {
  EXPECT_EQ(Joined(ValidateOpenApi(kQuantity, 16)), "");
  EXPECT_EQ(Joined(ValidateOpenApi(kQuantity, "16Gi")), "");
  EXPECT_NE(Joined(ValidateOpenApi(kQuantity, "16 GB")).find("does not match"), std::string::npos);
  EXPECT_NE(Joined(ValidateOpenApi(kQuantity, true)).find("expected integer or string"),
            std::string::npos);
}

TEST(OpenApiValidatorTest, AnyOfWithoutATypeNeedsOneBranchToAccept) {
  json schema = {{"anyOf", json::array({{{"type", "integer"}}, {{"type", "boolean"}}})}};
  EXPECT_EQ(Joined(ValidateOpenApi(schema, 3)), "");
  EXPECT_NE(Joined(ValidateOpenApi(schema, "x")).find("matches no anyOf branch"),
            std::string::npos);
}

TEST(OpenApiValidatorTest, PreserveUnknownFieldsAcceptsWhatPropertiesDoNotName) {
  json schema = {{"type", "object"},
                 {"properties", {{"known", {{"type", "string"}}}}},
                 {"x-kubernetes-preserve-unknown-fields", true}};
  EXPECT_EQ(Joined(ValidateOpenApi(schema, {{"known", "a"}, {"other", {{"deep", 1}}}})), "");
  schema.erase("x-kubernetes-preserve-unknown-fields");
  EXPECT_NE(Joined(ValidateOpenApi(schema, {{"other", 1}})).find("$.other: unknown field"),
            std::string::npos);
}

TEST(OpenApiValidatorTest, ListTypeSetAndMapRejectDuplicates) {
  json set = {
      {"type", "array"}, {"items", {{"type", "integer"}}}, {"x-kubernetes-list-type", "set"}};
  EXPECT_EQ(Joined(ValidateOpenApi(set, {1, 2, 3})), "");
  EXPECT_NE(Joined(ValidateOpenApi(set, {1, 2, 1})).find("$[2]: duplicate entry"),
            std::string::npos);
  json map = {{"type", "array"},
              {"items", {{"type", "object"}}},
              {"x-kubernetes-list-type", "map"},
              {"x-kubernetes-list-map-keys", {"name"}}};
  EXPECT_EQ(Joined(ValidateOpenApi(map, json::array({{{"name", "a"}}, {{"name", "b"}}}))), "");
  EXPECT_NE(Joined(ValidateOpenApi(map, json::array({{{"name", "a"}}, {{"name", "a"}}})))
                .find("duplicate entry"),
            std::string::npos);
}

TEST(OpenApiValidatorTest, SizeBoundsAreChecked) {
  json items = {{"type", "array"}, {"maxItems", 2}, {"minItems", 1}};
  EXPECT_EQ(Joined(ValidateOpenApi(items, {1, 2})), "");
  EXPECT_NE(Joined(ValidateOpenApi(items, {1, 2, 3})).find("more than 2 items"), std::string::npos);
  json text = {{"type", "string"}, {"minLength", 1}, {"maxLength", 3}};
  EXPECT_NE(Joined(ValidateOpenApi(text, "")).find("shorter than 1"), std::string::npos);
  EXPECT_NE(Joined(ValidateOpenApi(text, "abcd")).find("longer than 3"), std::string::npos);
  json object = {{"type", "object"}, {"maxProperties", 1}, {"additionalProperties", true}};
  EXPECT_NE(Joined(ValidateOpenApi(object, {{"a", 1}, {"b", 2}})).find("more than 1 properties"),
            std::string::npos);
  json number = {{"type", "integer"}, {"minimum", 0}, {"maximum", 255}};
  EXPECT_EQ(Joined(ValidateOpenApi(number, 255)), "");
  EXPECT_NE(Joined(ValidateOpenApi(number, 256)).find("more than the maximum"), std::string::npos);
}

}  // namespace
}  // namespace hetrun::testing

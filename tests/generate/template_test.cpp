// The template language of prompts/: substitution, dropped lines for empty values, and errors that name the
// template, the line and the placeholder.
#include "prompt/template.h"

#include <gtest/gtest.h>

#include "core/error.h"

namespace pkb::prompt {
namespace {

std::string error_of(std::string_view text, const Vars& vars) {
  try {
    render(text, vars, "t.txt");
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(PromptTemplate, SubstitutesEveryPlaceholder) {
  EXPECT_EQ(render("W = {{world}}, again {{world}}; {{x}}.\n", {{"world", "4"}, {"x", "y"}}, "t"),
            "W = 4, again 4; y.\n");
  EXPECT_EQ(render("no placeholders\n", {}, "t"), "no placeholders\n");
}

TEST(PromptTemplate, ValuesAreInsertedVerbatimNotRescanned) {
  // Code in values may contain braces: `int a[2][2] = {{1, 2}, {3, 4}};` must survive untouched.
  EXPECT_EQ(render("{{code}}\n", {{"code", "int a[2][2] = {{1, 2}, {3, 4}}; {{x}}"}}, "t"),
            "int a[2][2] = {{1, 2}, {3, 4}}; {{x}}\n");
}

TEST(PromptTemplate, LineWithAnEmptyValueIsDropped) {
  Vars v = {{"a", "1"}, {"rate", ""}, {"example", ""}};
  EXPECT_EQ(render("first {{a}}\n- peer rate: {{rate}} GB/s\n{{example}}\nlast\n", v, "t"), "first 1\nlast\n");
  EXPECT_EQ(render("end {{rate}}", v, "t"), "");  // last line without newline
  v["rate"] = "335";
  EXPECT_EQ(render("- peer rate: {{rate}} GB/s\n", v, "t"), "- peer rate: 335 GB/s\n");
}

TEST(PromptTemplate, UnknownPlaceholderNamesFileLineAndKnownNames) {
  std::string e = error_of("ok\nW = {{wrold}}\n", {{"world", "2"}});
  EXPECT_NE(e.find("t.txt: line 2: unknown placeholder {{wrold}}"), std::string::npos) << e;
  EXPECT_NE(e.find("known: world"), std::string::npos) << e;
}

TEST(PromptTemplate, MalformedPlaceholdersAreErrors) {
  EXPECT_NE(error_of("a {{b\n", {{"b", ""}}).find("line 1: '{{' without '}}'"), std::string::npos);
  EXPECT_NE(error_of("{{not a name}}", {}).find("is not a placeholder"), std::string::npos);
}

TEST(PromptTemplate, ListsPlaceholdersInOrderOnce) {
  EXPECT_EQ(placeholders("{{b}} {{a}} {{b}}", "t"), (std::vector<std::string>{"b", "a"}));
}

}  // namespace
}  // namespace pkb::prompt

#include "concord/core/progress_bar.h"

#include <cstdio>
#include <string>

#include <gtest/gtest.h>

namespace concord::core {
namespace {

TEST(ProgressFormat, CountsRatesDurations) {
  EXPECT_EQ(format_count(0), "0");
  EXPECT_EQ(format_count(999), "999");
  EXPECT_EQ(format_count(1234567), "1,234,567");
  EXPECT_EQ(format_rate(2.5e6), "2.50M");
  EXPECT_EQ(format_rate(12345.0), "12.3k");
  EXPECT_EQ(format_rate(42.0), "42");
  EXPECT_EQ(format_duration(3725.0), "1:02:05");
  EXPECT_EQ(format_duration(-1.0), "-");
}

TEST(ProgressFormat, FullLine) {
  EXPECT_EQ(format_progress_line("CartPole-v1", 350000, 1000000, 2.5e6, 21.34, true),
            "CartPole-v1 [#######.............] 35%  350,000/1,000,000  2.50M steps/s  return 21.3  ETA 0:00:00");
  EXPECT_EQ(format_progress_line("", 0, 100, 0.0, std::nullopt, false), "0%  0/100  - steps/s  return -  ETA -");
}

TEST(ProgressBar, PlainModePrintsWholeLinesAndFinishes) {
  std::FILE* out = std::tmpfile();
  ASSERT_NE(out, nullptr);
  {
    ProgressBarOptions options;
    options.label = "test";
    options.force_terminal = false;
    options.plain_interval_seconds = 1000.0;
    options.out = out;
    ProgressBar bar(100, options);
    EXPECT_FALSE(bar.is_terminal());
    bar.update(10, 5.0);  // first update always draws
    bar.update(20, 6.0);  // within the interval: no line
    bar.update(100, 7.0);
  }  // destructor finishes
  std::rewind(out);
  char buffer[1024] = {};
  const size_t read = std::fread(buffer, 1, sizeof(buffer) - 1, out);
  std::fclose(out);
  const std::string text(buffer, read);
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 2) << text;
  EXPECT_EQ(text.find('\r'), std::string::npos);
  EXPECT_NE(text.find("100%  100/100"), std::string::npos) << text;
  EXPECT_NE(text.find("return 7.0"), std::string::npos) << text;
}

TEST(ProgressBar, TerminalModeRedrawsInPlace) {
  std::FILE* out = std::tmpfile();
  ASSERT_NE(out, nullptr);
  {
    ProgressBarOptions options;
    options.force_terminal = true;
    options.out = out;
    ProgressBar bar(10, options);
    bar.update(5);
    bar.update(10);  // too soon to redraw, but finish() shows it
    bar.finish();
  }
  std::rewind(out);
  char buffer[1024] = {};
  const size_t read = std::fread(buffer, 1, sizeof(buffer) - 1, out);
  std::fclose(out);
  const std::string text(buffer, read);
  EXPECT_EQ(text.front(), '\r');
  EXPECT_EQ(text.back(), '\n');
  EXPECT_NE(text.find("[####################] 100%  10/10"), std::string::npos) << text;
}

// A resumed run's bar starts at the resumed step: that many steps count toward 100% but not
// toward the rate, which would otherwise be the whole earlier run over a fraction of a second.
TEST(ProgressBar, ResumedRunRatesOnlyItsOwnSteps) {
  std::FILE* out = std::tmpfile();
  ASSERT_NE(out, nullptr);
  {
    ProgressBarOptions options;
    options.force_terminal = false;
    options.plain_interval_seconds = 1000.0;
    options.out = out;
    options.start_steps = 1865083;
    ProgressBar bar(5000000, options);
    bar.update(1865083);  // the first update at the resumed step: no steps taken yet
  }                       // finishing with no new steps: still no rate
  std::rewind(out);
  char buffer[1024] = {};
  const size_t read = std::fread(buffer, 1, sizeof(buffer) - 1, out);
  std::fclose(out);
  const std::string text(buffer, read);
  EXPECT_EQ(text,
            "37%  1,865,083/5,000,000  - steps/s  return -  ETA -\n"
            "37%  1,865,083/5,000,000  - steps/s  return -  ETA -\n");
}

}  // namespace
}  // namespace concord::core

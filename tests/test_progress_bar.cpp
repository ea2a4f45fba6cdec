// The progress bar's line (trainers/progress_bar.h) as a pure function of the step, the total and
// the elapsed time, each expected line worked out by hand; and that a bar draws nothing unless
// bars are shown.
#include <gtest/gtest.h>

#include <cmath>

#include "trainers/progress_bar.h"

using namespace qdq;

TEST(ProgressBar, HalfwayAtAKnownRate) {
    // 5 steps in 2 s: 2.5 it/s, and the 5 left take 2 s more. Half of 30 columns filled.
    EXPECT_EQ(progress_line("eval", {.step = 5, .total = 10, .elapsed_seconds = 2.0}),
              "eval [===============>              ] 5/10  50%  2.50 it/s  elapsed 0:02  remaining 0:02");
}

TEST(ProgressBar, FirstCallHasNoRateYet) {
    EXPECT_EQ(progress_line("calibrate", {.step = 0, .total = 8, .elapsed_seconds = 0.0}),
              "calibrate [>                             ] 0/8   0%  ? it/s  elapsed 0:00  remaining ?");
}

TEST(ProgressBar, AResumedRunCountsItsOwnStepsAndSlowRatesReadSecondsPerStep) {
    // Resumed at step 10: 2 steps in 4 s is 0.5 it/s, shown as 2.00 s/it; 88 steps left take 176 s.
    EXPECT_EQ(progress_line("train", {.step = 12, .total = 100, .start_step = 10, .elapsed_seconds = 4.0}, "loss 0.5000"),
              "train [===>                          ] 12/100  12%  2.00 s/it  elapsed 0:04  remaining 2:56  loss 0.5000");
}

TEST(ProgressBar, UnknownTotalShowsTheCountAlone) {
    EXPECT_EQ(progress_line("eval", {.step = 7, .total = 0, .elapsed_seconds = 3.5}), "eval 7  2.00 it/s  elapsed 0:04");
}

TEST(ProgressBar, TheLastStepFillsTheBar) {
    EXPECT_EQ(progress_line("eval", {.step = 10, .total = 10, .elapsed_seconds = 4.0}),
              "eval [==============================] 10/10 100%  2.50 it/s  elapsed 0:04  remaining 0:00");
}

TEST(ProgressBar, Durations) {
    EXPECT_EQ(format_duration(3723), "1:02:03");
    EXPECT_EQ(format_duration(245), "4:05");
    EXPECT_EQ(format_duration(NAN), "?");
}

TEST(ProgressBar, DrawsInPlaceOnlyWhenShown) {
    ::testing::internal::CaptureStderr();
    {
        ProgressBar bar("eval", 4);
        bar.update(1);
    }
    EXPECT_EQ(::testing::internal::GetCapturedStderr(), "");

    set_progress_bars_shown(true);
    ::testing::internal::CaptureStderr();
    {
        ProgressBar bar("eval", 4);
        bar.update(4);
    }
    set_progress_bars_shown(false);
    const std::string drawn = ::testing::internal::GetCapturedStderr();
    // A carriage return, the line, the rest of the terminal line cleared; erased at the end.
    EXPECT_TRUE(drawn.starts_with("\reval [==============================] 4/4 100%")) << drawn;
    EXPECT_TRUE(drawn.ends_with("\033[K\r\033[K")) << drawn;
}

// Learning-rate schedules against PyTorch 1.13 (tests/fixtures/make_optim.py): LambdaLR over
// transformers' schedule formulas, step by step, and torch's ReduceLROnPlateau, evaluation by
// evaluation; the settings' errors name the key or the value.
#include <gtest/gtest.h>

#include <string>

#include <nlohmann/json.hpp>

#include "optim/plateau.h"
#include "optim/schedule.h"
#include "tests/support/expect_error.h"
#include "tests/support/fixture.h"

using namespace qdq;
using namespace qdq::testing;
using nlohmann::json;

namespace {

const Fixture& fixture() {
    static const Fixture f("optim.json");
    return f;
}

}  // namespace

// lr per step as HF computes it. Same double operations in the same order as transformers'
// lambdas, so only std::cos against Python's libm cos could differ: by an ulp, within the
// 4 ulps of EXPECT_DOUBLE_EQ.
TEST(Schedule, MatchesHuggingFace) {
    int cases = 0;
    for (const auto& [name, c] : fixture().cases().items()) {
        if (!name.starts_with("schedule_")) continue;
        SCOPED_TRACE(name);
        ++cases;
        const json& p = c.at("params");
        ScheduleOptions options = p.at("config").get<ScheduleOptions>();
        EXPECT_EQ(warmup_steps(options), p.at("warmup").get<int64_t>());
        for (size_t s = 0; s < p.at("lr").size(); ++s)
            EXPECT_DOUBLE_EQ(learning_rate(options, (int64_t)s), p.at("lr")[s].get<double>())
                << "step " << s;
    }
    EXPECT_EQ(cases, 24);
    // The trainer's schedule in the AdamW case gives the lr torch used there.
    const json& p = fixture().at("adamw").at("params");
    ScheduleOptions adamw_schedule = p.at("schedule").get<ScheduleOptions>();
    for (size_t s = 0; s < p.at("lr").size(); ++s)
        EXPECT_DOUBLE_EQ(learning_rate(adamw_schedule, (int64_t)s), p.at("lr")[s].get<double>());
}

// The rate after each evaluation as torch's ReduceLROnPlateau sets it; the state, read back from
// the JSON a checkpoint holds after every evaluation, carries on the same.
TEST(Plateau, MatchesTorch) {
    int cases = 0;
    for (const auto& [name, c] : fixture().cases().items()) {
        if (!name.starts_with("plateau_")) continue;
        SCOPED_TRACE(name);
        ++cases;
        const json& p = c.at("params");
        const PlateauOptions options = plateau_options(schedule_kwargs_from_json(p.at("kwargs"), "kwargs", name));
        PlateauState state = plateau_start(p.at("base_lr").get<double>());
        for (size_t i = 0; i < p.at("metrics").size(); ++i) {
            state = plateau_state_from_json(json::parse(plateau_state_to_json(state).dump()));
            plateau_step(options, state, p.at("metrics")[i].get<double>());
            EXPECT_EQ(state.lr, p.at("lr")[i].get<double>()) << "evaluation " << i;
        }
    }
    EXPECT_EQ(cases, 4);
}

TEST(Plateau, KwargsAreTorchsAndTheRateIsNotTheSteps) {
    auto parse = [](const char* text) { return json::parse(text).get<ScheduleOptions>(); };
    expect_error([&] { parse(R"({"name": "reduce_lr_on_plateau", "kwargs": {"factor": 1.0}})"); },
                 {"factor must lie in (0, 1), got 1.0"});
    expect_error([&] { parse(R"({"name": "reduce_lr_on_plateau", "kwargs": {"mode": "mean"}})"); },
                 {"'kwargs.mode' must be one of min, max"});
    expect_error([&] { parse(R"({"name": "reduce_lr_on_plateau", "kwargs": {"patience": -1}})"); },
                 {"patience must be >= 0, got -1"});
    expect_error([&] { parse(R"({"name": "reduce_lr_on_plateau", "kwargs": {"min_lr_rate": 0.1}})"); },
                 {"'reduce_lr_on_plateau' takes no kwarg 'min_lr_rate'"});
    expect_error([&] { parse(R"({"name": "reduce_lr_on_plateau", "warmup_ratio": 0.1})"); }, {"takes no warmup"});
    expect_error([&] { parse(R"({"name": "linear", "kwargs": {"patience": 2}})"); }, {"'linear' takes no kwarg 'patience'"});
    const ScheduleOptions plateau = parse(
        R"({"name": "reduce_lr_on_plateau", "kwargs": {"mode": "max", "threshold_mode": "abs", "cooldown": 3}})");
    EXPECT_EQ(json(json(plateau).get<ScheduleOptions>()), json(plateau));
    const PlateauOptions options = plateau_options(plateau.kwargs);
    EXPECT_EQ(options.mode, PlateauMode::Max);
    EXPECT_EQ(options.cooldown, 3);
    EXPECT_EQ(options.patience, 10);  // torch's default
    expect_error([&] { learning_rate(plateau, 0); }, {"takes its rate from the evaluations"});
}

TEST(Schedule, JsonErrorsNameTheKeyOrValue) {
    auto parse = [](const char* text) { return json::parse(text).get<ScheduleOptions>(); };
    expect_error([&] { parse(R"({"name": "linear", "warmup": 10})"); }, {"'warmup' is not a known setting"});
    expect_error([&] { parse(R"({"name": "cosine_annealing"})"); }, {"got 'cosine_annealing'"});
    expect_error([&] { parse(R"({"name": "polynomial", "base_lr": 1e-8})"); },
                 {"'polynomial' decays to lr_end 1e-07: base_lr must be above it"});
    // HF's get_polynomial_decay_schedule_with_warmup raises unless lr_init > lr_end.
    expect_error([&] { parse(R"({"name": "polynomial", "base_lr": 1e-6, "kwargs": {"lr_end": 1e-6}})"); },
                 {"must be above it"});
    expect_error([&] { parse(R"({"name": "linear", "kwargs": {"num_cycles": 2}})"); },
                 {"'linear' takes no kwarg 'num_cycles'"});
    // HF's get_scheduler drops kwargs given to inverse_sqrt; a timescale set there would be ignored.
    expect_error([&] { parse(R"({"name": "inverse_sqrt", "kwargs": {"power": 2}})"); },
                 {"'inverse_sqrt' takes no kwarg 'power'"});
    expect_error([&] { parse(R"({"name": "cosine", "kwargs": {"num_cycle": 2}})"); },
                 {"'kwargs.num_cycle' is not a known setting"});
    expect_error([&] { parse(R"({"name": "cosine", "kwargs": {"num_cycles": 0}})"); }, {"num_cycles must be positive"});
    expect_error([&] { parse(R"({"name": "cosine_with_min_lr"})"); },
                 {"takes exactly one of the kwargs min_lr and min_lr_rate"});
    expect_error([&] { parse(R"({"name": "cosine_with_min_lr", "kwargs": {"min_lr": 1e-6, "min_lr_rate": 0.1}})"); },
                 {"takes exactly one of the kwargs min_lr and min_lr_rate"});
    expect_error([&] { parse(R"({"name": "cosine_with_min_lr", "kwargs": {"min_lr_rate": 1.5}})"); },
                 {"min_lr_rate must lie in [0, 1]"});
    expect_error([&] { parse(R"({"name": "cosine_warmup_with_min_lr", "kwargs": {"min_lr_rate": 0.1, "warmup_lr_rate": -1}})"); },
                 {"warmup_lr_rate must lie in [0, 1]"});
    expect_error([&] { parse(R"({"name": "cosine_warmup_with_min_lr", "kwargs": {"num_cycles": 1}})"); },
                 {"'cosine_warmup_with_min_lr' takes exactly one of the kwargs min_lr and min_lr_rate"});
    expect_error([&] { parse(R"({"name": "cosine_with_min_lr", "kwargs": {"min_lr_rate": 0.1, "warmup_lr_rate": 0.5}})"); },
                 {"'cosine_with_min_lr' takes no kwarg 'warmup_lr_rate'"});
    expect_error([&] { parse(R"({"name": "warmup_stable_decay"})"); }, {"needs the kwarg num_decay_steps"});
    expect_error([&] { parse(R"({"name": "warmup_stable_decay", "kwargs": {"num_decay_steps": 1.5}})"); },
                 {"'kwargs.num_decay_steps' must be an integer"});
    expect_error([&] { parse(R"({"name": "warmup_stable_decay", "kwargs": {"num_decay_steps": -2}})"); },
                 {"num_decay_steps must be >= 0, got -2"});
    expect_error([&] { parse(R"({"name": "warmup_stable_decay", "kwargs": {"num_decay_steps": 2, "num_stable_steps": -1}})"); },
                 {"num_stable_steps must be >= 0, got -1"});
    expect_error([&] { parse(R"({"name": "warmup_stable_decay", "kwargs": {"num_decay_steps": 2, "decay_type": "sqrt"}})"); },
                 {"'kwargs.decay_type' must be one of linear, cosine, 1-sqrt"});
    expect_error([&] { parse(R"({"name": "warmup_stable_decay", "kwargs": {"num_decay_steps": 2, "min_lr_ratio": 2}})"); },
                 {"min_lr_ratio must lie in [0, 1]"});
    expect_error([&] { parse(R"({"name": "linear", "kwargs": {"warmup_type": "cosine"}})"); },
                 {"'linear' takes no kwarg 'warmup_type'"});
    // HF would count a negative stable phase; here warmup and decay longer than the run are refused.
    expect_error([&] { parse(R"({"name": "warmup_stable_decay", "warmup_steps": 6, "total_steps": 10,
                                 "kwargs": {"num_decay_steps": 5}})"); },
                 {"warms up for 6 steps and decays for 5, more than the 10 steps of the run"});
    expect_error([&] { parse(R"({"warmup_steps": 2.5})"); }, {"'warmup_steps' must be an integer"});
    expect_error([&] { parse(R"({"base_lr": "3e-5"})"); }, {"'base_lr' must be a number"});
    expect_error([&] { parse(R"({"warmup_steps": 10, "warmup_ratio": 0.1})"); }, {"not both"});
    expect_error([&] { parse(R"({"warmup_ratio": 1.5})"); }, {"warmup_ratio must lie in [0, 1]"});
    expect_error([&] { parse(R"({"total_steps": -1})"); }, {"total_steps must be >= 0"});
    expect_error([&] { parse(R"({"name": "constant", "warmup_steps": 3})"); },
                 {"constant_with_warmup"});
    expect_error([&] { parse(R"(["linear"])"); }, {"must be a JSON object"});
}

TEST(Schedule, DefaultsRoundTripAndMissingTotalSteps) {
    ScheduleOptions defaults = json::object().get<ScheduleOptions>();
    // HF TrainingArguments: linear, 5e-5, no warmup.
    EXPECT_EQ(defaults.name, ScheduleName::Linear);
    EXPECT_EQ(defaults.base_lr, 5e-5);
    ScheduleOptions cosine{ScheduleName::Cosine, 4e-5, 0, 0.1, 1000, {}};
    ScheduleOptions back = json(cosine).get<ScheduleOptions>();
    EXPECT_EQ(json(back), json(cosine));
    EXPECT_EQ(warmup_steps(back), 100);
    expect_error([&] { learning_rate(defaults, 0); }, {"'linear' needs total_steps"});
    expect_error([&] { learning_rate({ScheduleName::Constant, 1e-3, 0, 0.1, 0, {}}, 0); }, {"no warmup"});
    expect_error([&] { learning_rate({ScheduleName::ConstantWithWarmup, 1e-3, 0, 0.1, 0, {}}, 0); },
                 {"warmup_ratio needs total_steps"});
    EXPECT_EQ(learning_rate({ScheduleName::ConstantWithWarmup, 1e-3, 4, 0, 0, {}}, 2), 5e-4);
    // A WSD schedule with its stable phase given needs no step count, as in HF.
    ScheduleKwargs wsd_kwargs;
    wsd_kwargs.num_decay_steps = 4;
    expect_error([&] { learning_rate({ScheduleName::WarmupStableDecay, 1e-3, 2, 0, 0, wsd_kwargs}, 0); },
                 {"'warmup_stable_decay' needs total_steps or the kwarg num_stable_steps"});
    wsd_kwargs.num_stable_steps = 3;
    wsd_kwargs.decay_type = RampShape::Linear;
    EXPECT_EQ(learning_rate({ScheduleName::WarmupStableDecay, 1e-3, 2, 0, 0, wsd_kwargs}, 7), 1e-3 * 0.5);
    ScheduleOptions wsd{ScheduleName::WarmupStableDecay, 1e-3, 2, 0, 0, wsd_kwargs};
    EXPECT_EQ(json(json(wsd).get<ScheduleOptions>()), json(wsd));
    EXPECT_EQ(json(wsd).at("kwargs").at("decay_type"), "linear");
}

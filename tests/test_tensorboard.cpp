// training.report_to "tensorboard" (trainers/tensorboard_events.h): the event files of a tiny
// run, read by tests/read_tfevents.py (its own CRC-32C and protobuf wire decoding, no code of the
// writer's), hold every number of metrics.jsonl at its step under Hugging Face's TensorBoard
// names; a flipped byte is caught; a resumed run adds a file and repeats nothing. And the
// report_to and logging_dir keys.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>

#include "tests/support/expect_error.h"
#include "tests/support/metrics_records.h"
#include "tests/support/run_command.h"
#include "tests/support/temp_dir.h"
#include "tests/support/tiny_task.h"
#include "trainers/tensorboard_events.h"
#include "trainers/trainer.h"

using namespace qdq;
using qdq::testing::expect_error;
using qdq::testing::Process;
using qdq::testing::run_command;
using qdq::testing::TempDir;
using qdq::testing::tiny_config;
using qdq::testing::write_task_files;
namespace fs = std::filesystem;

namespace {

RunConfig parse(const nlohmann::json& raw) { return parse_run_config(raw, "test.json", "."); }

TrainOutcome train_config(const nlohmann::json& raw) {
    RunConfig config = parse(raw);
    std::unique_ptr<Task> task = make_task(config, {});
    return train(config, *task);
}

// Skips (under CI=true fails, as every missing prerequisite does there) without the python3
// that runs the reader.
void require_python3() {
    if (run_command("/usr/bin/python3 -c pass").status == 0) return;
    const char* ci = std::getenv("CI");
    const std::string message = "no /usr/bin/python3 to run tests/read_tfevents.py";
    if (ci && std::string(ci) == "true") FAIL() << message << "; CI=true, so this is a failure";
    GTEST_SKIP() << message;
}

#define QDQ_REQUIRE_PYTHON3()                                                           \
    do {                                                                                \
        require_python3();                                                              \
        if (::testing::Test::IsSkipped() || ::testing::Test::HasFatalFailure()) return; \
    } while (0)

// The reader run on `path`, from the file's folder: run from the repository, python would take
// its onnx/ folder for the onnx module.
Process read_events(const std::string& path) {
    const std::string folder = fs::path(path).parent_path().string();
    return run_command("cd '" + folder + "' && /usr/bin/python3 '" QDQ_TESTS_DIR "/read_tfevents.py' '" + path +
                                "'");
}

nlohmann::json read_events_json(const std::string& path) {
    const Process p = read_events(path);
    EXPECT_EQ(p.status, 0) << p.output;
    return p.status == 0 ? nlohmann::json::parse(p.output) : nlohmann::json::array();
}

// One step's scalars: (tag, value) pairs, sorted, so that the order within a record is free.
using Scalars = std::vector<std::pair<std::string, double>>;
struct StepScalars {
    int64_t step;
    Scalars values;
    bool operator==(const StepScalars&) const = default;
};

// What HF's TensorBoardCallback writes for the records of metrics.jsonl, spelt out here: eval_x
// as eval/x, the other numbers as train/<name>, each a float32 (TensorBoard's simple_value).
std::vector<StepScalars> expected_from_jsonl(const std::vector<nlohmann::json>& records) {
    std::vector<StepScalars> out;
    for (const nlohmann::json& r : records) {
        StepScalars s{r.at("step").get<int64_t>(), {}};
        for (const auto& [key, value] : r.items()) {
            if (key == "step" || !value.is_number()) continue;
            const std::string tag = key.rfind("eval_", 0) == 0 ? "eval/" + key.substr(5) : "train/" + key;
            s.values.emplace_back(tag, (double)value.get<float>());
        }
        std::sort(s.values.begin(), s.values.end());
        out.push_back(s);
    }
    return out;
}

// The scalar events of the files, in name order, as the reader decoded them; checks that each
// file opens with its version record.
std::vector<StepScalars> read_scalars(const std::vector<std::string>& files, bool with_seconds) {
    std::vector<StepScalars> out;
    for (const std::string& file : files) {
        const nlohmann::json events = read_events_json(file);
        if (events.empty()) continue;
        EXPECT_EQ(events[0].value("file_version", ""), "brain.Event:2") << file;
        EXPECT_EQ(events[0]["step"], 0);
        for (size_t i = 1; i < events.size(); ++i) {
            StepScalars s{events[i].at("step").get<int64_t>(), {}};
            for (const nlohmann::json& v : events[i].at("values"))
                if (with_seconds || v[0] != "train/seconds") s.values.emplace_back(v[0], v[1].get<double>());
            std::sort(s.values.begin(), s.values.end());
            out.push_back(s);
        }
    }
    return out;
}

std::vector<nlohmann::json> jsonl_records(const fs::path& run) {
    std::vector<nlohmann::json> out;
    std::ifstream in(run / "metrics.jsonl");
    for (std::string line; std::getline(in, line);) out.push_back(nlohmann::json::parse(line));
    return out;
}

std::string file_bytes(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

nlohmann::json tensorboard_config(const TempDir& dir) {
    nlohmann::json raw = tiny_config(dir, "run");  // 12 steps, logs every 3, evals every 5, saves every 4
    raw["training"]["report_to"] = "tensorboard";
    return raw;
}

}  // namespace

TEST(TensorBoardEvents, Crc32cOfTheCheckString) {
    // CRC-32C's published check value, and TFRecord's mask of it: 0xE3069283 rotated right by
    // 15 bits is 0x2507C60D, plus 0xa282ead8 modulo 2^32.
    EXPECT_EQ(crc32c("123456789", 9), 0xE3069283u);
    EXPECT_EQ(masked_crc32c("123456789", 9), 0xC78AB0E5u);
    EXPECT_EQ(crc32c("", 0), 0u);
}

TEST(TensorBoardConfig, ReportToTakesHuggingFacesNames) {
    TempDir dir;
    write_task_files(dir);
    nlohmann::json raw = tiny_config(dir, "run");
    EXPECT_TRUE(parse(raw).training.report_to.empty());  // "none" by default
    const std::vector<ReportTo> tensorboard{ReportTo::tensorboard};
    for (const nlohmann::json& value : {nlohmann::json("none"), nlohmann::json({"none"}), nlohmann::json::array()}) {
        raw["training"]["report_to"] = value;
        EXPECT_TRUE(parse(raw).training.report_to.empty()) << value;
    }
    for (const nlohmann::json& value : {nlohmann::json("tensorboard"), nlohmann::json("all"), nlohmann::json({"all"}),
                                        nlohmann::json({"tensorboard", "tensorboard"})}) {
        raw["training"]["report_to"] = value;
        EXPECT_EQ(parse(raw).training.report_to, tensorboard) << value;
    }
    for (const nlohmann::json& value : {nlohmann::json("wandb"), nlohmann::json({"none", "tensorboard"}), nlohmann::json(1)}) {
        raw["training"]["report_to"] = value;
        expect_error([&] { parse(raw); }, {"test.json", "training.report_to"});
    }
    raw["training"]["report_to"] = {"tensorboard"};
    raw["training"]["logging_dir"] = "tb/run1";
    const RunConfig config = parse(raw);
    EXPECT_EQ(config.training.logging_dir, "tb/run1");
    const nlohmann::json saved = run_config_to_json(config);
    EXPECT_EQ(saved["training"]["report_to"], nlohmann::json({"tensorboard"}));
    EXPECT_EQ(run_config_to_json(parse(saved)), saved);
}

TEST(TensorBoard, EventsSayWhatMetricsJsonlSays) {
    QDQ_REQUIRE_PYTHON3();
    TempDir dir;
    write_task_files(dir);
    ASSERT_EQ(train_config(tensorboard_config(dir)).status, TrainStatus::finished);
    const fs::path run = dir.path() / "run";
    const std::vector<std::string> files = event_files((run / "runs").string());
    ASSERT_EQ(files.size(), 1u);
    EXPECT_NE(fs::path(files[0]).filename().string().find("events.out.tfevents."), std::string::npos);

    const std::vector<nlohmann::json> records = jsonl_records(run);
    const std::vector<StepScalars> events = read_scalars(files, true);
    EXPECT_EQ(events, expected_from_jsonl(records));
    // HF's names for the numbers a Trainer user looks for, at the steps they were logged.
    std::map<std::string, std::vector<int64_t>> steps_of;
    for (const StepScalars& s : events)
        for (const auto& [tag, value] : s.values) steps_of[tag].push_back(s.step);
    const std::vector<int64_t> logged{3, 6, 9, 12}, evaluated{5, 10, 12};
    for (const char* tag : {"train/loss", "train/learning_rate", "train/grad_norm"}) EXPECT_EQ(steps_of[tag], logged) << tag;
    for (const char* tag : {"eval/accuracy", "eval/loss", "eval/examples"}) EXPECT_EQ(steps_of[tag], evaluated) << tag;
}

TEST(TensorBoard, TheReaderRejectsAFlippedByteAndATornTail) {
    QDQ_REQUIRE_PYTHON3();
    TempDir dir;
    write_task_files(dir);
    ASSERT_EQ(train_config(tensorboard_config(dir)).status, TrainStatus::finished);
    const std::vector<std::string> files = event_files((dir.path() / "run" / "runs").string());
    ASSERT_EQ(files.size(), 1u);
    const std::string bytes = file_bytes(files[0]);
    ASSERT_GT(bytes.size(), 100u);
    EXPECT_EQ(read_events(files[0]).status, 0);
    // A byte of the first record's length, of its length's CRC, of its data, one in the middle
    // of the file and the last (the last record's data CRC).
    for (size_t at : {size_t{0}, size_t{9}, size_t{14}, bytes.size() / 2, bytes.size() - 1}) {
        std::string flipped = bytes;
        flipped[at] = (char)(flipped[at] ^ 0x10);
        const Process p = read_events(dir.write("flipped.tfevents", flipped));
        EXPECT_EQ(p.status, 1) << "byte " << at;
        EXPECT_NE(p.output.find("CRC does not match"), std::string::npos) << "byte " << at << ": " << p.output;
    }
    const Process torn = read_events(dir.write("torn.tfevents", bytes.substr(0, bytes.size() - 3)));
    EXPECT_EQ(torn.status, 1);
    EXPECT_NE(torn.output.find("past the file's end"), std::string::npos) << torn.output;
}

// The run is resumed from checkpoint-8 (its later checkpoint and results removed): its first
// file then holds steps up to 8, a new file the rest, and together they say what metrics.jsonl
// says and what the uninterrupted run said (resuming is bit-exact; the wall-clock seconds aside).
// A finished run run again writes nothing.
TEST(TensorBoard, AResumedRunAddsAFileAndRepeatsNothing) {
    QDQ_REQUIRE_PYTHON3();
    TempDir dir;
    write_task_files(dir);
    const nlohmann::json raw = tensorboard_config(dir);
    ASSERT_EQ(train_config(raw).status, TrainStatus::finished);
    const fs::path run = dir.path() / "run";
    const std::string events_dir = (run / "runs").string();
    const std::vector<StepScalars> uninterrupted = read_scalars(event_files(events_dir), false);

    for (const char* file : {"checkpoint-12.h5", "model.h5", "eval_results.json"}) ASSERT_TRUE(fs::remove(run / file));
    ASSERT_EQ(train_config(raw).status, TrainStatus::finished);
    const std::vector<std::string> files = event_files(events_dir);
    ASSERT_EQ(files.size(), 2u);
    for (const StepScalars& s : read_scalars({files[0]}, false)) EXPECT_LE(s.step, 8);
    for (const StepScalars& s : read_scalars({files[1]}, false)) EXPECT_GT(s.step, 8);
    EXPECT_EQ(read_scalars(files, true), expected_from_jsonl(jsonl_records(run)));
    EXPECT_EQ(read_scalars(files, false), uninterrupted);

    const std::string first = file_bytes(files[0]), second = file_bytes(files[1]);
    ASSERT_EQ(train_config(raw).status, TrainStatus::finished);
    EXPECT_EQ(event_files(events_dir), files);
    EXPECT_EQ(file_bytes(files[0]), first);
    EXPECT_EQ(file_bytes(files[1]), second);
}

// logging_dir names the folder; without report_to no event file is written anywhere.
TEST(TensorBoard, LoggingDirAndNone) {
    TempDir dir;
    write_task_files(dir);
    nlohmann::json raw = tensorboard_config(dir);
    raw["training"]["max_steps"] = 3;
    raw["training"]["logging_dir"] = (dir.path() / "tb").string();
    ASSERT_EQ(train_config(raw).status, TrainStatus::finished);
    EXPECT_EQ(event_files((dir.path() / "tb").string()).size(), 1u);
    EXPECT_FALSE(fs::exists(dir.path() / "run" / "runs"));

    raw["training"].erase("report_to");
    raw["training"]["output_dir"] = (dir.path() / "plain").string();
    raw["training"]["logging_dir"] = (dir.path() / "tb_plain").string();
    ASSERT_EQ(train_config(raw).status, TrainStatus::finished);
    EXPECT_FALSE(fs::exists(dir.path() / "tb_plain"));
    EXPECT_FALSE(fs::exists(dir.path() / "plain" / "runs"));
}

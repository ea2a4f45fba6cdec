#include "bench/bench_task.h"

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <stdexcept>

#include "autograd/rng.h"
#include "nn/pretrained.h"
#include "qdqbert/qdq_placement.h"

namespace qdq::bench {

namespace fs = std::filesystem;

namespace {

constexpr int kVocab = 30522, kFirstWord = 5;  // after [PAD] [UNK] [CLS] [SEP] [MASK]

void write_file(const fs::path& path, const std::string& text) {
    std::ofstream out(path);
    out << text;
    if (!out) throw std::runtime_error("bench: cannot write " + path.string());
}

std::string random_words(int count, Rng& rng) {
    std::string s;
    for (int i = 0; i < count; ++i) {
        if (i) s += ' ';
        s += 'w';
        s += std::to_string(kFirstWord + (int)(rng.next_u64() % (kVocab - kFirstWord)));
    }
    return s;
}

void write_files(const fs::path& dir) {
    std::string vocab = "[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\n";
    for (int i = kFirstWord; i < kVocab; ++i) {
        vocab += 'w';
        vocab += std::to_string(i);
        vocab += '\n';
    }
    write_file(dir / "vocab.txt", vocab);
    Rng rng(5);
    std::string rows = "sentence\tlabel\n";
    for (int64_t i = 0; i < kBatch; ++i) {
        rows += random_words((int)(kSeq - 16 * (i % 4) - 2), rng);
        rows += '\t';
        rows += std::to_string(i % 2);
        rows += '\n';
    }
    write_file(dir / "train.tsv", rows);
    // One document of exactly 32 sequences' worth of tokens: 126 between [CLS] and [SEP] each.
    write_file(dir / "corpus.txt", random_words((int)(kBatch * (kSeq - 2)), rng) + "\n");
}

}  // namespace

BenchData::BenchData() {
    std::string pattern = (fs::temp_directory_path() / "qdq_bench_XXXXXX").string();
    if (!mkdtemp(pattern.data())) throw std::runtime_error("bench: cannot make a scratch folder");
    dir_ = pattern;
    write_files(dir_);
}

BenchData::~BenchData() {
    std::error_code ignored;
    fs::remove_all(dir_, ignored);
}

RunConfig BenchData::config(BenchTask task, const ModelSize& size, Products products) const {
    nlohmann::json model = {{"vocab_size", kVocab},          {"hidden_size", size.hidden},
                            {"num_hidden_layers", size.layers}, {"num_attention_heads", size.heads},
                            {"intermediate_size", size.ffn},   {"max_position_embeddings", 512}};
    const bool mlm = task == BenchTask::MaskedLm;
    nlohmann::json data = {{"task", mlm ? "mlm" : "classification"},
                           {"data_dir", dir_},
                           {"vocab", "vocab.txt"},
                           {"train_files", mlm ? "corpus.txt" : "train.tsv"},
                           {"eval_files", mlm ? "corpus.txt" : "train.tsv"},
                           {"max_seq_length", kSeq}};
    if (!mlm) data["dataset"] = "sst2";
    nlohmann::json raw = {{"model", {{"config", model}}},
                          {"data", data},
                          {"training",
                           {{"output_dir", dir_ + "/out"},
                            {"seed", 1},
                            {"bf16", products == Products::bf16},
                            {"tf32", products == Products::tf32}}}};
    if (task == BenchTask::Qat || task == BenchTask::QatDistilled) raw["quantization"] = nlohmann::json::object();
    if (task == BenchTask::QatLsq)
        raw["quantization"] = {{"input", {{"calib_method", "max"}, {"learn_step_size", true}}},
                               {"weight", {{"axis", 0}, {"learn_step_size", true}}},
                               {"calibrator", "max"}};
    if (task == BenchTask::QatDistilled) {
        const std::string teacher = dir_ + "/teacher_" + size.name + ".h5";
        if (!fs::exists(teacher)) {
            RunConfig float_config = config(BenchTask::Classification, size, products);
            std::unique_ptr<Task> float_task = make_task(float_config, {.train = false, .eval = false});
            nn::save_hdf5(float_task->model(), float_task->model_config(), teacher);
        }
        raw["distillation"] = {{"teacher", teacher}, {"temperature", 2.0}, {"alpha", 0.5}};
    }
    return parse_run_config(raw, "bench_train", dir_);
}

std::unique_ptr<Task> make_bench_task(const RunConfig& config, BenchTask task) {
    std::unique_ptr<Task> made = make_task(config, {.train = true, .eval = false});
    if (task == BenchTask::Classification || task == BenchTask::MaskedLm) return made;
    nn::Module& model = made->model();
    calibrate_weights(model);
    for (auto& [name, quantizer] : model.named_quantizers()) {
        std::vector<float> amax = quantizer->amax.to_vector();  // the ranges may live on the GPU
        for (float& a : amax)
            if (std::isnan(a)) a = 8.0f;
        quantizer->amax.copy_from(from_vector(quantizer->amax.shape(), amax));
    }
    set_quant_mode(model, QuantMode::Quantizing);
    return made;
}

}  // namespace qdq::bench

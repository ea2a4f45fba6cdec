// resolve() and load_run_config: the part of reading a config that touches files
// (trainers/run_config.h); run_config.cpp reads the JSON itself, run_config_write.cpp writes it.
#include <filesystem>
#include <stdexcept>

#include "data/data_dir.h"
#include "data/document_slice.h"
#include "data/tokenizer.h"
#include "json/json_fields.h"
#include "json/json_file.h"
#include "trainers/checkpoint.h"
#include "trainers/qat_variant.h"
#include "trainers/run_config.h"

namespace qdq {

namespace fs = std::filesystem;

namespace {

std::string joined(const std::string& base, const std::string& path) {
    if (path.empty() || fs::path(path).is_absolute()) return path;
    return (fs::path(base) / path).lexically_normal().string();
}

void apply_override(nlohmann::json& json, const std::string& assignment, const std::string& source) {
    size_t eq = assignment.find('=');
    if (eq == std::string::npos || eq == 0)
        throw std::runtime_error("--set expects key=value, got '" + assignment + "'");
    std::string key = assignment.substr(0, eq), text = assignment.substr(eq + 1);
    nlohmann::json value = nlohmann::json::parse(text, nullptr, false);
    if (value.is_discarded()) value = text;  // a bare word is a string
    set_config_key(json, key, value, source + ": --set " + key);
}

// Errors name the config's key as JsonFields does: "<source>: 'data.<key>' ...".
[[noreturn]] void fail(const std::string& source, const std::string& key, const std::string& what) {
    throw std::runtime_error(source + ": '" + key + "' " + what);
}

// One list of corpus files, joined to data_dir, each checked to exist (a document slice's file,
// data/document_slice.h).
void resolve_files(const std::string& source, const char* key, const std::string& data_dir,
                   std::vector<std::string>& files) {
    for (std::string& f : files) {
        f = joined(data_dir, f);
        const DocumentSlice slice = parse_document_slice(f);
        if (!fs::exists(slice.path)) fail(source, std::string("data.") + key, "names a missing file: " + slice.path);
    }
}

// The tokenizer a config without data.vocab takes from its model.init, as
// AutoTokenizer.from_pretrained reads the model's own: a directory's files, or the data.vocab
// (and do_lower_case) a checkpoint's run was resolved with. Empty for a file that names none.
std::string tokenizer_of_init(const std::string& model_init, DataSettings& d) {
    if (model_init.empty() || !fs::exists(model_init)) return "";
    if (fs::is_directory(model_init)) return model_init;
    std::optional<RunConfig> run;
    try {
        run = checkpoint_run_config(model_init);
    } catch (const std::exception&) {
        return "";  // not a readable checkpoint: loading its weights will say what is wrong
    }
    if (!run || run->data.vocab.empty()) return "";
    if (!d.do_lower_case) d.do_lower_case = run->data.do_lower_case;
    return run->data.vocab;
}

// data.vocab names the tokenizer's files (data/tokenizer.h: a vocab.txt, a vocab.json or a Hugging
// Face directory). Unset, it is model.init's (tokenizer_of_init), else kDefaultVocab. A
// directory's tokenizer_config.json gives do_lower_case (WordPiece's only) unless data sets it.
void resolve_tokenizer(const std::string& source, DataSettings& d, const std::string& model_init) {
    const std::string from_init = d.vocab.empty() ? tokenizer_of_init(model_init, d) : "";
    d.vocab = !from_init.empty() ? from_init : joined(d.data_dir, d.vocab.empty() ? kDefaultVocab : d.vocab);
    const std::string unset = "is unset, so the tokenizer is model.init's (" + model_init + "): ";
    if (!fs::exists(d.vocab)) fail(source, "data.vocab", (from_init.empty() ? "" : unset) + "names a missing file: " + d.vocab);
    TokenizerFiles files;
    try {
        files = tokenizer_files(d.vocab);
    } catch (const std::runtime_error& e) {
        fail(source, "data.vocab", (from_init.empty() ? "names no tokenizer: " : unset) + std::string(e.what()));
    }
    if (d.do_lower_case) return;
    d.do_lower_case = true;
    if (files.kind != TokenizerKind::WordPiece || files.config.empty()) return;
    const nlohmann::json tokenizer_config = read_json_file(files.config);
    bool lower = true;
    JsonFields(tokenizer_config, "", files.config).read("do_lower_case", lower);
    d.do_lower_case = lower;
}

void resolve_data(const std::string& source, DataSettings& d, const std::string& model_init) {
    if (d.data_dir.empty()) d.data_dir = data_dir();
    resolve_files(source, "train_files", d.data_dir, d.train_files);
    resolve_files(source, "eval_files", d.data_dir, d.eval_files);
    for (EvalSet& set : d.eval_sets) resolve_files(source, "eval_files", d.data_dir, set.files);
    resolve_tokenizer(source, d, model_init);
}

void resolve_model(ModelSettings& m, const std::string& base_dir) {
    if (!m.config_file.empty()) {
        m.config_file = joined(base_dir, m.config_file);
        m.config = nn::bert_config_from_json(read_json_file(m.config_file), m.config_file);
        m.config_file.clear();  // read: the config is m.config now, as a saved run keeps it
    }
    m.init = joined(base_dir, m.init);
}

}  // namespace

void resolve_teacher(DistillationSettings& d, const std::string& base_dir, const std::string& source) {
    if (d.teacher.empty()) return;
    d.teacher = fs::absolute(joined(base_dir, d.teacher)).lexically_normal().string();
    if (!fs::exists(d.teacher)) fail(source, "distillation.teacher", "names a missing file: " + d.teacher);
}

void resolve(RunConfig& c, const std::string& base_dir) {
    c.base_dir = base_dir;
    const std::string& out = c.training.output_dir;
    if (out.empty()) fail(c.source, "training.output_dir", "is empty; it names the run's folder");
    if (fs::exists(out) && !fs::is_directory(out)) fail(c.source, "training.output_dir", "names a file, not a folder: " + out);
    resolve_model(c.model, base_dir);
    resolve_data(c.source, c.data, c.model.init);
    if (c.distillation) resolve_teacher(*c.distillation, base_dir, c.source);
    for (const QatVariant& v : c.pipeline.qat_variants) qat_variant_config(c, v);  // errors now, not after FP32
}

RunConfig parse_run_config(const nlohmann::json& json, const std::string& source, const std::string& base_dir) {
    RunConfig c = run_config_from_json(json, source);
    resolve(c, base_dir);
    return c;
}

namespace {

// The file's JSON over its "base" file's, recursively (see run_config.h).
nlohmann::json read_with_base(const std::string& path, int depth) {
    nlohmann::json file = read_json_file(path);
    if (!file.is_object() || !file.contains("base")) return file;
    if (!file["base"].is_string()) throw std::runtime_error(path + ": 'base' must be the path of a config file");
    if (depth >= 8) throw std::runtime_error(path + ": 'base' chain deeper than 8 files (a cycle?)");
    const fs::path folder = fs::path(path).parent_path();
    nlohmann::json merged = read_with_base((folder / file["base"].get<std::string>()).string(), depth + 1);
    // The base's model and teacher paths are relative to the base's own folder: fixed here,
    // before this file's folder would be taken for them.
    const fs::path base_folder = (folder / file["base"].get<std::string>()).parent_path();
    const std::pair<const char*, const char*> paths[] = {{"model", "config"}, {"model", "init"}, {"distillation", "teacher"}};
    for (const auto& [section, key] : paths) {
        if (!merged.contains(section) || !merged[section].is_object() || !merged[section].contains(key)) continue;
        nlohmann::json& value = merged[section][key];
        if (value.is_string() && !value.get<std::string>().empty() && fs::path(value.get<std::string>()).is_relative())
            value = fs::absolute(base_folder / value.get<std::string>()).lexically_normal().string();
    }
    file.erase("base");
    merged.merge_patch(file);
    return merged;
}

}  // namespace

RunConfig load_run_config(const std::string& path, const std::vector<std::string>& overrides) {
    nlohmann::json json = read_with_base(path, 0);
    for (const std::string& o : overrides) apply_override(json, o, path);
    const std::string base = fs::path(path).parent_path().string();
    return parse_run_config(json, path, base.empty() ? "." : base);
}

}  // namespace qdq

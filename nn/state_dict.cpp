#include "nn/state_dict.h"

#include <map>
#include <stdexcept>

#include "nn/init.h"

namespace qdq::nn {

namespace {

// Old TensorFlow-converted checkpoints name LayerNorm parameters gamma and beta.
std::string modern_layer_norm_name(std::string key) {
    if (key.ends_with("LayerNorm.gamma")) key.replace(key.size() - 5, 5, "weight");
    else if (key.ends_with("LayerNorm.beta")) key.replace(key.size() - 4, 4, "bias");
    return key;
}

// The MLM decoder shares the word embeddings and cls.predictions.bias; HF files may carry
// either alias, and neither is a separate parameter here.
bool is_tied_alias(const std::string& key) {
    return key == "cls.predictions.decoder.weight" || key == "cls.predictions.decoder.bias";
}

}  // namespace

std::string LoadReport::summary() const {
    std::string s;
    auto list = [](const std::vector<std::string>& keys) {
        std::string out;
        for (const std::string& k : keys) out += (out.empty() ? "" : ", ") + k;
        return out;
    };
    if (!missing.empty())
        s += "Some weights of the model were not in the file and are newly initialized: [" +
             list(missing) + "]\n";
    if (!unexpected.empty())
        s += "Some weights of the file were not used: [" + list(unexpected) + "]\n";
    return s;
}

LoadReport load_state_dict(Module& model, const NamedTensors& tensors, const std::string& source) {
    std::map<std::string, Tensor> targets;
    bool model_has_bert_prefix = false;
    for (const NamedTensor& t : model.state_dict()) {
        targets.emplace(t.name, t.tensor);
        model_has_bert_prefix |= t.name.starts_with("bert.");
    }
    bool file_has_bert_prefix = false;
    for (const NamedTensor& t : tensors) file_has_bert_prefix |= t.name.starts_with("bert.");

    LoadReport report;
    std::map<std::string, bool> loaded;
    for (const NamedTensor& t : tensors) {
        std::string key = modern_layer_norm_name(t.name);
        // A bare BertModel file loads into a task model and the other way round, as in HF.
        if (model_has_bert_prefix && !file_has_bert_prefix && !targets.count(key) &&
            targets.count("bert." + key))
            key = "bert." + key;
        else if (!model_has_bert_prefix && key.starts_with("bert."))
            key = key.substr(5);
        if (is_tied_alias(key) && targets.count("cls.predictions.bias")) continue;
        auto it = targets.find(key);
        if (it == targets.end()) {
            report.unexpected.push_back(t.name);
            continue;
        }
        Tensor& dst = it->second;
        if (dst.shape() != t.tensor.shape())
            throw std::runtime_error(source + ": '" + t.name + "' has shape " +
                                     shape_str(t.tensor.shape()) + ", the model expects " +
                                     shape_str(dst.shape()));
        if (dst.dtype() != t.tensor.dtype())
            throw std::runtime_error(source + ": '" + t.name + "' is " + dtype_name(t.tensor.dtype()) +
                                     ", the model expects " + dtype_name(dst.dtype()));
        dst.copy_from(t.tensor);  // a checkpoint loads into a model wherever it is
        loaded_over_deferred(dst);
        loaded[key] = true;
    }
    for (const auto& [key, tensor] : targets)
        if (!loaded.count(key)) report.missing.push_back(key);
    return report;
}

}  // namespace qdq::nn

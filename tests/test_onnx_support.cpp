#include "tests/test_onnx_support.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>

#include <nlohmann/json.hpp>

#include "autograd/ops.h"
#include "autograd/rng.h"
#include "autograd/tape.h"
#include "nn/heads.h"
#include "nn/state_dict.h"
#include "tests/support/run_command.h"

namespace qdq::testing {

namespace {

constexpr float kMinAmax = 1.0f / (1 << 24);  // PQ's tensor_quant: smaller ranges zero the channel

std::map<std::string, Tensor> by_name(const NamedTensors& state) {
    std::map<std::string, Tensor> out;
    for (const NamedTensor& t : state) out[t.name] = t.tensor;
    return out;
}

const char* kLinears[] = {"attention.self.query", "attention.self.key", "attention.self.value",
                          "attention.output.dense", "intermediate.dense", "output.dense"};

std::string quoted(const std::string& s) { return "'" + s + "'"; }

// CI must run every test: a missing tool there is a failure, elsewhere a skip that says why.
void require(bool available, const std::string& message) {
    if (available) return;
    const char* ci = std::getenv("CI");
    if (ci && std::string(ci) == "true") FAIL() << message << "; CI=true, so this is a failure";
    GTEST_SKIP() << message;
}

// Debian's python3-onnx lives under /usr/bin/python3, which a pyenv or venv python3 earlier in
// PATH would hide. Empty when neither imports onnx.
const std::string& python_with_onnx() {
    static const std::string found = [] {
        for (const char* python : {"/usr/bin/python3", "python3"})
            if (run_command(std::string(python) + " -c 'import onnx'").status == 0) return std::string(python);
        return std::string();
    }();
    return found;
}

}  // namespace

NamedTensors random_bert_state(const nn::BertConfig& config, OnnxHead head, uint64_t seed) {
    Rng rng(seed);
    std::unique_ptr<nn::Module> model;
    if (head == OnnxHead::SequenceClassification)
        model = std::make_unique<nn::BertForSequenceClassification>(config, rng);
    else
        model = std::make_unique<nn::BertForQuestionAnswering>(config, rng);
    NamedTensors state;
    for (const NamedTensor& p : model->state_dict()) {
        Tensor t = p.tensor.clone();
        float* v = t.f32();
        const bool norm = p.name.find("LayerNorm") != std::string::npos;
        const bool bias = p.name.ends_with(".bias");
        for (int64_t i = 0; i < t.numel(); ++i)
            v[i] = norm && !bias ? 1.0f + rng.normal(0, 0.1f) : rng.normal(0, bias ? 0.1f : 0.3f);
        const bool encoder_linear = p.name.starts_with("bert.encoder.") && !norm && !bias;
        if (encoder_linear) {
            const int64_t in = t.size(1);
            for (int64_t o = 0; o < t.size(0); ++o) {
                const float factor = 0.25f * std::pow(8.0f, rng.uniform());
                for (int64_t i = 0; i < in; ++i) v[o * in + i] *= factor;
            }
        }
        state.push_back({p.name, t});
    }
    return state;
}

nn::BertInputs padded_batch(const nn::BertConfig& config, int64_t B, int64_t T, uint64_t seed) {
    Rng rng(seed);
    std::vector<int32_t> ids((size_t)(B * T)), types((size_t)(B * T)), mask((size_t)(B * T));
    for (int64_t b = 0; b < B; ++b) {
        const int64_t real = b == 0 ? T : std::max<int64_t>(1, T - 1 - (b * 2) % T);
        for (int64_t t = 0; t < T; ++t) {
            const size_t i = (size_t)(b * T + t);
            mask[i] = t < real;
            ids[i] = t < real ? 1 + (int32_t)(rng.uniform() * (float)(config.vocab_size - 1)) : config.pad_token_id;
            types[i] = t < real && t >= real / 2;
        }
    }
    return {from_ints({B, T}, ids), from_ints({B, T}, types), from_ints({B, T}, mask)};
}

std::vector<Tensor> framework_forward(const NamedTensors& state, const nn::BertConfig& config, OnnxHead head,
                                      const nn::BertInputs& inputs) {
    NoGradGuard no_grad;
    Rng init(0);
    if (head == OnnxHead::SequenceClassification) {
        nn::BertForSequenceClassification model(config, init);
        nn::load_state_dict(model, state, "test state");
        model.eval();
        return {model.forward(inputs)};
    }
    nn::BertForQuestionAnswering model(config, init);
    nn::load_state_dict(model, state, "test state");
    model.eval();
    nn::SpanLogits logits = model.forward(inputs);
    return {logits.start, logits.end};
}

Tensor fake_quant(const Tensor& x, const std::vector<float>& amax) {
    const int64_t channels = (int64_t)amax.size();
    const int64_t per_channel = x.numel() / channels;
    if (channels > 1 && (x.dim() != 2 || x.size(0) != channels)) throw std::runtime_error("fake_quant: bad amax size");
    Tensor out = x.detach().clone();
    float* v = out.f32();
    for (int64_t c = 0; c < channels; ++c) {
        const float scale = amax[(size_t)c] / 127.0f;
        for (int64_t i = c * per_channel; i < (c + 1) * per_channel; ++i) {
            // std::nearbyint in the default rounding mode is round-half-to-even, as QuantizeLinear.
            const float q = std::clamp(std::nearbyint(v[i] / scale), -128.0f, 127.0f);
            v[i] = amax[(size_t)c] <= kMinAmax ? 0.0f : q * scale;
        }
    }
    return out;
}

std::vector<Tensor> reference_forward(const NamedTensors& named, const nn::BertConfig& c, OnnxHead head,
                                      const nn::BertInputs& in, std::map<std::string, float>* observed) {
    NoGradGuard no_grad;
    std::map<std::string, Tensor> s = by_name(named);
    auto amax_of = [&](const std::string& key) -> std::vector<float> {
        auto it = s.find(key);
        return it == s.end() ? std::vector<float>{} : it->second.to_vector();
    };
    auto act = [&](const Tensor& x, const std::string& key) {
        if (observed) {
            float m = 0;
            for (float v : x.to_vector()) m = std::max(m, std::fabs(v));
            (*observed)[key] = std::max((*observed)[key], m);
        }
        std::vector<float> amax = amax_of(key);
        return amax.empty() ? x : fake_quant(x, amax);
    };
    auto lin = [&](const Tensor& x, const std::string& key) {
        std::vector<float> amax = amax_of(key + "._weight_quantizer._amax");
        Tensor w = amax.empty() ? s.at(key + ".weight") : fake_quant(s.at(key + ".weight"), amax);
        return linear(act(x, key + "._input_quantizer._amax"), w, s.at(key + ".bias"));
    };
    auto add_norm = [&](const Tensor& x, const Tensor& residual, const std::string& key) {
        return add_layer_norm(x, residual, s.at(key + ".weight"), s.at(key + ".bias"), c.layer_norm_eps);
    };
    const int64_t B = in.input_ids.size(0), T = in.input_ids.size(1), C = c.hidden_size;
    std::vector<int32_t> positions((size_t)T);
    for (int64_t t = 0; t < T; ++t) positions[(size_t)t] = (int32_t)t;
    const std::string e = "bert.embeddings.";
    Tensor x = add(embedding(s.at(e + "word_embeddings.weight"), in.input_ids),
                   embedding(s.at(e + "position_embeddings.weight"), from_ints({T}, positions)));
    x = add_norm(x, embedding(s.at(e + "token_type_embeddings.weight"), in.token_type_ids), e + "LayerNorm");
    Tensor mask = nn::additive_attention_mask(in.attention_mask);
    const float scale = 1.0f / std::sqrt((float)c.head_dim());
    for (int i = 0; i < c.num_hidden_layers; ++i) {
        const std::string k = "bert.encoder.layer." + std::to_string(i) + ".";
        const std::string self = k + "attention.self.";
        auto heads = [&](const char* m) { return split_heads(lin(x, self + m), c.num_attention_heads); };
        Tensor q = heads("query"), kk = heads("key"), v = heads("value");
        Tensor scores = matmul(act(q, self + "matmul_q_input_quantizer._amax"),
                               act(kk, self + "matmul_k_input_quantizer._amax"), false, true);
        Tensor probs = softmax(scores, scale, mask);
        Tensor context = merge_heads(matmul(act(probs, self + "matmul_a_input_quantizer._amax"),
                                            act(v, self + "matmul_v_input_quantizer._amax")));
        auto residual_output = [&](const Tensor& h, const Tensor& residual, const std::string& m) {
            Tensor dense = lin(h, m + ".dense");
            return add_norm(act(dense, m + ".add_local_input_quantizer._amax"),
                            act(residual, m + ".add_residual_input_quantizer._amax"), m + ".LayerNorm");
        };
        Tensor attended = residual_output(context, x, k + "attention.output");
        x = residual_output(gelu(lin(attended, k + "intermediate.dense")), attended, k + "output");
    }
    if (head == OnnxHead::SequenceClassification) {
        Tensor first = reshape(slice(x, 1, 0, 1), {B, C});
        return {lin(tanh(lin(first, "bert.pooler.dense")), "classifier")};
    }
    Tensor logits = lin(x, "qa_outputs");  // [B, T, 2]
    return {reshape(slice(logits, 2, 0, 1), {B, T}), reshape(slice(logits, 2, 1, 2), {B, T})};
}

std::vector<std::string> two_disabled_quantizers() {
    return {"bert.encoder.layer.1.attention.self.matmul_a_input_quantizer._amax",
            "bert.encoder.layer.1.attention.output.dense._input_quantizer._amax"};
}

NamedTensors with_synthetic_ranges(const NamedTensors& state, const nn::BertConfig& config, OnnxHead head,
                                   const nn::BertInputs& calibration, const std::vector<std::string>& disabled) {
    std::map<std::string, float> observed;
    reference_forward(state, config, head, calibration, &observed);
    NamedTensors out = state;
    for (const auto& [key, max] : observed) {
        // The pooler and heads stay float, as in QDQBERT.
        if (!key.starts_with("bert.encoder.") || std::find(disabled.begin(), disabled.end(), key) != disabled.end())
            continue;
        out.push_back({key, from_vector({}, {0.9f * max})});  // PQ's per-tensor amax is a 0-d tensor
    }
    std::map<std::string, Tensor> s = by_name(state);
    for (int i = 0; i < config.num_hidden_layers; ++i) {
        for (const char* linear : kLinears) {
            const std::string key = "bert.encoder.layer." + std::to_string(i) + "." + linear;
            Tensor w = s.at(key + ".weight");
            const int64_t rows = w.size(0), cols = w.size(1);
            std::vector<float> amax((size_t)rows);
            for (int64_t o = 0; o < rows; ++o)
                for (int64_t j = 0; j < cols; ++j) amax[(size_t)o] = std::max(amax[(size_t)o], std::fabs(w.f32()[o * cols + j]));
            for (float& a : amax) a *= 0.9f;
            if (i == 1 && std::string(linear) == "intermediate.dense")
                out.push_back({key + "._weight_quantizer._amax", from_vector({}, {*std::max_element(amax.begin(), amax.end())})});
            else
                out.push_back({key + "._weight_quantizer._amax", from_vector({rows, 1}, amax)});  // PQ keeps dims
        }
    }
    return out;
}

std::string python_onnx_check(const std::string& model_path) {
    Process r = run_command(python_with_onnx() +
                                  " -c 'import sys, onnx; onnx.checker.check_model(onnx.load(sys.argv[1]), "
                                  "full_check=True)' " + quoted(model_path));
    return r.status == 0 ? "" : r.output.empty() ? "exit status " + std::to_string(r.status) : r.output;
}

void require_onnxruntime() {
    static const std::string why = onnxruntime_unavailable();
    require(why.empty(), why);
}

void require_python_onnx() {
    require(!python_with_onnx().empty(), "no python3 with the onnx module (Debian: apt-get install python3-onnx)");
}

}  // namespace qdq::testing

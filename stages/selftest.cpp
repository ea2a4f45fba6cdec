#include "stages/selftest.h"

#include <cmath>
#include <cstdlib>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "autograd/gemm.h"
#include "autograd/gemm_bf16.h"
#include "autograd/ops.h"
#include "autograd/rng.h"
#include "autograd/tape.h"
#include "cuda/backend.h"
#include "cuda/device_array.h"
#include "nn/heads.h"
#include "optim/adamw.h"
#include "optim/clip_grad.h"
#include "optim/param_groups.h"
#include "quant/calibrators.h"
#include "quant/fake_quant.h"

namespace qdq {

namespace {

using cuda::DeviceArray;

std::vector<float> uniform(int64_t n, uint64_t seed, float scale) {
    Rng rng(seed);
    std::vector<float> v((size_t)n);
    for (float& x : v) x = scale * (2.0f * rng.uniform() - 1.0f);
    return v;
}

// The worst |gpu − cpu| / (atol + rtol·|cpu|): at most 1 passes; atol = rtol = 0 asks for equality.
double worst(const std::vector<float>& gpu, const std::vector<float>& cpu, double atol, double rtol) {
    if (gpu.size() != cpu.size()) return INFINITY;
    double w = 0;
    for (size_t i = 0; i < gpu.size(); ++i) {
        const double d = std::fabs((double)gpu[i] - (double)cpu[i]), allowed = atol + rtol * std::fabs((double)cpu[i]);
        w = std::max(w, allowed == 0 ? (d == 0 ? 0.0 : INFINITY) : d / allowed);
    }
    return w;
}

using Check = std::function<double(int64_t C)>;  // the worst ratio at row length C

double check_elementwise(int64_t C) {
    const int64_t n = 3 * C;
    const std::vector<float> x = uniform(n, 1, 9.0f), b = uniform(n, 2, 1.0f);
    DeviceArray<float> dx(x), db(b), out(std::vector<float>((size_t)n)), grad(std::vector<float>((size_t)n, 0.0f));
    cuda::add(out.ptr, dx.ptr, db.ptr, n);
    double w = worst(out.host(), add(from_vector({n}, x), from_vector({n}, b)).to_vector(), 0, 0);
    Tensor xt = from_vector({n}, x).set_requires_grad();
    Tensor yt = gelu(xt);
    backward(yt, from_vector({n}, b));
    cuda::gelu_forward(out.ptr, dx.ptr, n);
    cuda::gelu_backward(grad.ptr, db.ptr, dx.ptr, n);
    w = std::max(w, worst(out.host(), yt.to_vector(), 1e-7, 1e-6));
    return std::max(w, worst(grad.host(), xt.grad().to_vector(), 1e-7, 1e-6));
}

double check_softmax(int64_t C) {
    const int64_t rows = 3;
    const std::vector<float> x = uniform(rows * C, 3, 6.0f), dy = uniform(rows * C, 4, 1.0f);
    Tensor xt = from_vector({rows, C}, x).set_requires_grad();
    Tensor yt = softmax(xt, 0.125f);
    backward(yt, from_vector({rows, C}, dy));
    DeviceArray<float> dx_in(x), ddy(dy), y(std::vector<float>((size_t)(rows * C))), dx(std::vector<float>((size_t)(rows * C), 0.0f));
    DeviceArray<int64_t> mask_rows(std::vector<int64_t>{0, 0, 0});
    cuda::softmax_rows_forward(y.ptr, dx_in.ptr, nullptr, mask_rows.ptr, 0.125f, rows, C);
    cuda::softmax_rows_backward(dx.ptr, ddy.ptr, y.ptr, 0.125f, rows, C);
    return std::max(worst(y.host(), yt.to_vector(), 1e-8, 4e-6), worst(dx.host(), xt.grad().to_vector(), 1e-8, 2e-5));
}

double check_layernorm(int64_t C) {
    const int64_t rows = 4;
    std::vector<float> x = uniform(rows * C, 5, 1.0f);
    for (float& v : x) v += 30.0f;
    const std::vector<float> res = uniform(rows * C, 6, 0.5f), gamma = uniform(C, 7, 2.0f), beta = uniform(C, 8, 1.0f),
                             dy = uniform(rows * C, 9, 1.0f);
    Tensor xt = from_vector({rows, C}, x).set_requires_grad(), rt = from_vector({rows, C}, res).set_requires_grad();
    Tensor gt = from_vector({C}, gamma).set_requires_grad(), bt = from_vector({C}, beta).set_requires_grad();
    backward(add_layer_norm(xt, rt, gt, bt, 1e-12f), from_vector({rows, C}, dy));
    const std::vector<float> zeros_rc((size_t)(rows * C), 0.0f), zeros_c((size_t)C, 0.0f), zeros_r((size_t)rows, 0.0f);
    DeviceArray<float> dxin(x), dres(res), dg(gamma), dbeta(beta), ddy(dy), y(zeros_rc), sum(zeros_rc), mean(zeros_r),
        rstd(zeros_r), gx(zeros_rc), gr(zeros_rc), ggamma(zeros_c), gbeta(zeros_c);
    cuda::layernorm_rows_forward(y.ptr, mean.ptr, rstd.ptr, sum.ptr, dxin.ptr, dres.ptr, dg.ptr, dbeta.ptr, 1e-12f, rows, C);
    cuda::layernorm_rows_backward(gx.ptr, gr.ptr, ggamma.ptr, gbeta.ptr, ddy.ptr, sum.ptr, mean.ptr, rstd.ptr, dg.ptr, rows, C);
    double w = worst(gx.host(), xt.grad().to_vector(), 2e-5, 2e-5);
    w = std::max(w, worst(gr.host(), rt.grad().to_vector(), 2e-5, 2e-5));
    w = std::max(w, worst(ggamma.host(), gt.grad().to_vector(), 2e-5, 2e-5));
    return std::max(w, worst(gbeta.host(), bt.grad().to_vector(), 2e-5, 2e-5));
}

double check_cross_entropy(int64_t C) {
    const int64_t rows = 4;
    std::vector<float> x = uniform(rows * C, 10, 4.0f);
    const std::vector<int32_t> labels = {0, (int32_t)(C - 1), -100, (int32_t)(C / 2)};
    Tensor xt = from_vector({rows, C}, x).set_requires_grad(), lt = empty({rows}, DType::I32);
    std::copy(labels.begin(), labels.end(), lt.i32());
    Tensor loss = cross_entropy(xt, lt, -100);
    backward(loss);
    const std::vector<float> zeros_r((size_t)rows, 0.0f);
    DeviceArray<float> dxin(x), losses(zeros_r), row_max(zeros_r), log_sum(zeros_r), dx(std::vector<float>((size_t)(rows * C), 0.0f));
    DeviceArray<int32_t> dl(labels);
    DeviceArray<float> upstream(std::vector<float>{1.0f});  // the loss's gradient, over the 3 rows counted
    cuda::cross_entropy_rows_forward(losses.ptr, row_max.ptr, log_sum.ptr, dxin.ptr, dl.ptr, -100, rows, C);
    cuda::cross_entropy_rows_backward(dx.ptr, dxin.ptr, row_max.ptr, log_sum.ptr, dl.ptr, -100, upstream.ptr, 3.0f, rows, C);
    double total = 0;
    for (float l : losses.host()) total += l;
    const double w = std::fabs(total / 3 - loss.item()) / (1e-6 * std::max(1.0, std::fabs((double)loss.item())));
    return std::max(w, worst(dx.host(), xt.grad().to_vector(), 1e-7, 2e-5));
}

// Dropout masks, embedding gathers and fake-quantization codes must be the CPU's exactly.
double check_exact_ops(int64_t C) {
    const int64_t n = 4 * C;
    const std::vector<float> x = uniform(n, 11, 3.0f);
    Rng rng(12);
    Tensor dropped = dropout(from_vector({n}, x), 0.3f, true, rng);
    DeviceArray<float> dx(x), y(std::vector<float>((size_t)n));
    cuda::dropout_forward(y.ptr, dx.ptr, Rng(12).next_u64(), 0.3f, 1.0f / 0.7f, n);
    double w = worst(y.host(), dropped.to_vector(), 0, 0);
    const std::vector<float> amax = {2.0f, 0.25f, 1e-30f, 1.0f};
    QuantParams params{.axis = 0};
    Tensor quantized = fake_quant(from_vector({4, C}, x), from_vector({4}, amax), params);
    DeviceArray<float> damax(amax);
    cuda::fake_quant_forward(y.ptr, dx.ptr, damax.ptr, quant_bound(params), quant_min(params), 4, C, n, false, false);
    w = std::max(w, worst(y.host(), quantized.to_vector(), 0, 0));
    const std::vector<int32_t> ids = {3, 0, 3, 1};
    Tensor id_tensor = empty({4}, DType::I32);
    std::copy(ids.begin(), ids.end(), id_tensor.i32());
    DeviceArray<int32_t> dids(ids);
    cuda::embedding_forward(y.ptr, dx.ptr, dids.ptr, 4, C);
    return std::max(w, worst(y.host(), embedding(from_vector({4, C}, x), id_tensor).to_vector(), 0, 0));
}

// cuBLAS's FP32 GEMM against the CPU's, and its bf16 GEMM against the CPU's FP32 GEMM of the
// operands rounded to bf16 (products of bf16 numbers are exact in FP32).
double check_gemm(int64_t C) {
    const int64_t M = 7, N = C, K = 33;
    double w = 0;
    for (bool bf16 : {false, true})
        for (bool ta : {false, true})
            for (bool tb : {false, true}) {
                std::vector<float> A = uniform(M * K, 13, 1.0f), B = uniform(K * N, 14, 1.0f);
                DeviceArray<float> dA(A), dB(B), dC(std::vector<float>((size_t)(M * N), 0.0f));
                if (bf16)
                    for (std::vector<float>* v : {&A, &B})
                        for (float& x : *v) x = round_to_bf16(x);
                std::vector<float> cpu((size_t)(M * N), 0.0f);
                gemm(ta, tb, M, N, K, 1.0f, A.data(), ta ? M : K, B.data(), tb ? K : N, 0.0f, cpu.data(), N);
                (bf16 ? cuda::gemm_bf16 : cuda::gemm)(ta, tb, M, N, K, 1.0f, dA.ptr, ta ? M : K, dB.ptr, tb ? K : N, 0.0f,
                                                      dC.ptr, N);
                w = std::max(w, worst(dC.host(), cpu, 1e-5, 1e-5));
            }
    return w;
}

// cuBLAS's TF32 GEMM: (1 + 2⁻¹²)·1 summed K times is K exactly, the 2⁻¹² below what 10 bits of
// mantissa hold, however the tensor cores shorten it (FP32 gives K + K·2⁻¹²); and a random
// product within what 10-bit operands allow of the FP32 one, Σ|a·b|·2⁻⁹ per element.
double check_gemm_tf32(int64_t C) {
    if (cuda::compute_capability() < 80) return 0;  // no tensor cores for TF32: cuBLAS multiplies in FP32
    const int64_t M = 7, N = C, K = 33;
    const std::vector<float> ones((size_t)(K * N), 1.0f), A = uniform(M * K, 19, 1.0f), B = uniform(K * N, 20, 1.0f);
    DeviceArray<float> dnear_one(std::vector<float>((size_t)(M * K), 1.0f + 0x1p-12f)), dones(ones), dA(A), dB(B);
    DeviceArray<float> dC(std::vector<float>((size_t)(M * N), 0.0f));
    cuda::gemm_tf32(false, false, M, N, K, 1.0f, dnear_one.ptr, K, dones.ptr, N, 0.0f, dC.ptr, N);
    double w = worst(dC.host(), std::vector<float>((size_t)(M * N), (float)K), 0, 0);
    cuda::gemm_tf32(false, false, M, N, K, 1.0f, dA.ptr, K, dB.ptr, N, 0.0f, dC.ptr, N);
    const std::vector<float> tf32 = dC.host();
    for (int64_t i = 0; i < M; ++i)
        for (int64_t j = 0; j < N; ++j) {
            double exact = 0, magnitude = 0;
            for (int64_t k = 0; k < K; ++k) {
                exact += (double)A[(size_t)(i * K + k)] * B[(size_t)(k * N + j)];
                magnitude += std::fabs((double)A[(size_t)(i * K + k)] * B[(size_t)(k * N + j)]);
            }
            w = std::max(w, std::fabs(tf32[(size_t)(i * N + j)] - exact) / (magnitude * 0x1p-9 + 1e-5));
        }
    return w;
}

// PACT and LSQ (per tensor and per channel) through the op on both devices: values and the
// input's gradient exactly, the range's gradient to rounding.
double check_learned_ranges(int64_t C) {
    const std::vector<float> x = uniform(4 * C, 17, 2.0f), dy = uniform(4 * C, 18, 1.0f);
    double w = 0;
    for (int rule = 0; rule < 3; ++rule) {
        QuantParams params{.num_bits = 4, .axis = rule == 2 ? std::optional<int64_t>(0) : std::nullopt};
        params.learn_amax = rule == 0;
        params.learn_step_size = rule > 0;
        const Tensor amax = rule == 2 ? from_vector({4}, {0.5f, 1.0f, 2.0f, 0.25f}) : from_vector({1}, {1.5f});
        Tensor leaf[2], range[2], y[2];
        for (int d = 0; d < 2; ++d) {
            const Device device = d == 0 ? Device::CUDA : Device::CPU;
            leaf[d] = from_vector({4, C}, x).to(device).set_requires_grad();
            range[d] = amax.to(device).set_requires_grad();
            y[d] = fake_quant(leaf[d], range[d], params);
            backward(y[d], from_vector({4, C}, dy).to(device));
        }
        w = std::max(w, worst(y[0].to_vector(), y[1].to_vector(), 0, 0));
        w = std::max(w, worst(leaf[0].grad().to_vector(), leaf[1].grad().to_vector(), 0, 0));
        w = std::max(w, worst(range[0].grad().to_vector(), range[1].grad().to_vector(), 1e-7, 1e-5));
    }
    return w;
}

// Distillation's KL at temperature 2 through the op on both devices: the loss and the
// student's gradient.
double check_kl_div(int64_t C) {
    const std::vector<float> s = uniform(3 * C, 19, 5.0f), t = uniform(3 * C, 20, 5.0f);
    Tensor student[2], loss[2];
    for (int d = 0; d < 2; ++d) {
        const Device device = d == 0 ? Device::CUDA : Device::CPU;
        student[d] = from_vector({3, C}, s).to(device).set_requires_grad();
        loss[d] = softmax_kl_div(student[d], from_vector({3, C}, t).to(device), 2.0f);
        backward(loss[d]);
    }
    return std::max(worst(loss[0].to_vector(), loss[1].to_vector(), 1e-7, 1e-5),
                    worst(student[0].grad().to_vector(), student[1].grad().to_vector(), 1e-8, 1e-5));
}

double check_optimizer(int64_t C) {
    const std::vector<float> param = uniform(C, 15, 1.0f), grad = uniform(C, 16, 0.5f), zeros((size_t)C, 0.0f);
    Tensor p = from_vector({C}, param).set_requires_grad();
    std::copy(grad.begin(), grad.end(), p.grad_buffer().f32());
    AdamW cpu = make_adamw({{{{"w", p}}, 0.01}});
    adamw_step(cpu, 1e-3);
    DeviceArray<float> dp(param), dm(zeros), dv(zeros), dg(grad);
    cuda::adamw_update({{dp.ptr, dm.ptr, dv.ptr, dg.ptr, C, adamw_scalars({}, 1e-3, 0.01, 1)}});
    const double w = worst(dp.host(), p.to_vector(), 1e-7, 1e-6);
    double norm = std::sqrt(cuda::sums_of_squares({{dg.ptr, C}})[0]), cpu_norm = 0;
    for (float g : grad) cpu_norm += (double)g * g;
    return std::max(w, std::fabs(norm - std::sqrt(cpu_norm)) / (1e-9 * std::max(1.0, norm)));
}

// Three steps of a small BERT classifier (dropout, padding, the pooler; clipping and AdamW) on the
// device and on the CPU from the same initialisation: every step's loss within float rounding
// (the first step's gradients decide the next two losses).
double check_bert_steps() {
    const nn::BertConfig c{.vocab_size = 30, .hidden_size = 32, .num_hidden_layers = 2, .num_attention_heads = 4,
                           .intermediate_size = 48, .max_position_embeddings = 16, .num_labels = 3};
    nn::BertInputs in{empty({2, 7}, DType::I32), zeros({2, 7}, DType::I32), empty({2, 7}, DType::I32)};
    for (int64_t i = 0; i < 14; ++i) {
        in.input_ids.i32()[i] = (int32_t)((i * 7 + 3) % 30);
        in.attention_mask.i32()[i] = i % 7 < (i < 7 ? 7 : 4);  // the second sequence has 3 pads
    }
    Tensor labels = empty({2}, DType::I32);
    labels.i32()[0] = 2;
    labels.i32()[1] = 0;
    auto losses = [&](Device device) {
        Rng init(5);
        nn::BertForSequenceClassification model(c, init);
        model.move_to(device);
        model.train();
        std::vector<ParamGroup> groups = weight_decay_groups(model.named_parameters(), 0.01);
        AdamW optimizer = make_adamw(groups);
        std::vector<float> out;
        for (int step = 0; step < 3; ++step) {
            Tensor loss = nn::BertForSequenceClassification::loss(model.forward(in), labels);
            backward(loss);
            out.push_back(loss.item());
            clip_grad_norm(groups, 0.5);
            adamw_step(optimizer, 1e-3);
            for (const ParamGroup& g : groups)
                for (NamedTensor p : g.params) p.tensor.zero_grad();
        }
        return out;
    };
    return worst(losses(Device::CUDA), losses(Device::CPU), 1e-6, 2e-5);
}

struct NamedCheck {
    const char* name;
    Check run;
};

// Every check at every row length; prints a line each. Returns whether all passed.
bool run_checks(std::ostream& out) {
    const NamedCheck checks[] = {{"add, gelu forward and backward", check_elementwise},
                                 {"softmax rows forward and backward", check_softmax},
                                 {"add & layernorm forward and backward", check_layernorm},
                                 {"cross-entropy forward and backward", check_cross_entropy},
                                 {"dropout, fake quantization, embedding (exact)", check_exact_ops},
                                 {"cuBLAS GEMM in FP32 and bf16, four transposes", check_gemm},
                                 {"cuBLAS GEMM in TF32 (compute capability 8.0 on)", check_gemm_tf32},
                                 {"PACT and LSQ forward and backward", check_learned_ranges},
                                 {"distillation's KL forward and backward", check_kl_div},
                                 {"AdamW and the gradient norm", check_optimizer}};
    bool all = true;
    auto report = [&](const char* name, double w) {
        const bool ok = w <= 1.0;
        all = all && ok;
        out << (ok ? "  ok        " : "  MISMATCH  ") << name << " (worst " << w << " of the tolerance)\n";
    };
    for (const NamedCheck& c : checks) {
        double w = 0;
        for (int64_t C : {1, 31, 33, 77, 768}) w = std::max(w, c.run(C));
        report(c.name, w);
    }
    report("three BERT classifier training steps, losses", check_bert_steps());
    return all;
}

}  // namespace

int run_selftest(std::ostream& out, const std::string& self_path) {
    out << "qdqtrain selftest\n  backend: " << cuda::device_description() << "\n";
    if (!cuda::unusable_gpu().empty()) {
        out << "selftest: FAILED: there is a GPU and it cannot be used (exit 1)\n";
        return 1;
    }
    if (!cuda::built_with_cuda() || cuda::device_count() == 0) {
        out << "selftest: no CUDA device here, nothing to check (exit " << kSelftestNoDevice << ")\n";
        return kSelftestNoDevice;
    }
    out << "  " << cuda::runtime_versions() << "\n";
    bool ok = run_checks(out);
    const bool nested = std::getenv("QDQ_SELFTEST_UNDER_SANITIZER") != nullptr;
    if (!nested && !self_path.empty() && std::system("command -v compute-sanitizer > /dev/null 2>&1") == 0) {
        out << "  again under compute-sanitizer:\n" << std::flush;
        const std::string command = std::string("QDQ_SELFTEST_UNDER_SANITIZER=1 compute-sanitizer --error-exitcode 1 '") +
                                    self_path + "' selftest";
        ok = std::system(command.c_str()) == 0 && ok;
    }
    out << (ok ? "selftest: every check agrees\n" : "selftest: FAILED\n");
    return ok ? 0 : 1;
}

}  // namespace qdq

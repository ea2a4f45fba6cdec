#include "trainers/sharded_evaluation.h"

#include <cstring>
#include <stdexcept>

#include "parallel/communicator.h"

namespace qdq {

namespace {

template <typename T>
void put(std::string& out, const T& value) {
    out.append(reinterpret_cast<const char*>(&value), sizeof value);
}

struct Reader {
    const std::string& bytes;
    size_t at = 0;

    template <typename T>
    T get() {
        T value;
        take(&value, sizeof value);
        return value;
    }
    void take(void* dst, size_t n) {
        if (at + n > bytes.size()) throw std::runtime_error("sharded evaluation: truncated outputs");
        std::memcpy(dst, bytes.data() + at, n);
        at += n;
    }
};

}  // namespace

std::string outputs_to_bytes(const std::vector<NamedOutputs>& outputs) {
    std::string out;
    put(out, (uint64_t)outputs.size());
    for (const NamedOutputs& batch : outputs) {
        put(out, (uint64_t)batch.size());
        for (const auto& [name, tensor] : batch) {
            if (tensor.dtype() != DType::F32 || tensor.is_cuda())
                throw std::runtime_error("sharded evaluation: output '" + name + "' is not a float32 CPU tensor");
            put(out, (uint64_t)name.size());
            out += name;
            put(out, (uint64_t)tensor.dim());
            for (int64_t d : tensor.shape()) put(out, d);
            out.append(reinterpret_cast<const char*>(tensor.f32()), (size_t)tensor.numel() * sizeof(float));
        }
    }
    return out;
}

std::vector<NamedOutputs> outputs_from_bytes(const std::string& bytes) {
    Reader in{bytes};
    std::vector<NamedOutputs> outputs(in.get<uint64_t>());
    for (NamedOutputs& batch : outputs) {
        const uint64_t names = in.get<uint64_t>();
        for (uint64_t k = 0; k < names; ++k) {
            std::string name(in.get<uint64_t>(), '\0');
            in.take(name.data(), name.size());
            Shape shape(in.get<uint64_t>());
            for (int64_t& d : shape) d = in.get<int64_t>();
            Tensor t = empty(shape);
            in.take(t.f32(), (size_t)t.numel() * sizeof(float));
            batch.emplace(std::move(name), std::move(t));
        }
    }
    if (in.at != bytes.size()) throw std::runtime_error("sharded evaluation: trailing bytes after the outputs");
    return outputs;
}

Metrics evaluate_on_ranks(Task& task, int64_t batch_size) {
    const World& w = world();
    if (w.size == 1 || !task.scores_outputs()) return task.evaluate(batch_size);
    const std::vector<nn::BertInputs> batches = task.eval_inputs(batch_size);
    std::vector<nn::BertInputs> mine;
    for (size_t b = (size_t)w.rank; b < batches.size(); b += (size_t)w.size) mine.push_back(batches[b]);
    const std::vector<std::string> parts = allgather_bytes(outputs_to_bytes(task.eval_outputs(mine)));
    std::vector<NamedOutputs> outputs(batches.size());
    for (size_t r = 0; r < parts.size(); ++r) {
        std::vector<NamedOutputs> part = outputs_from_bytes(parts[r]);
        for (size_t k = 0; k < part.size(); ++k) outputs[r + k * parts.size()] = std::move(part[k]);
    }
    return task.score(outputs, batch_size);
}

}  // namespace qdq

#include "trainers/run_device.h"

#include <cstdio>
#include <stdexcept>

#include "cuda/backend.h"
#include "parallel/communicator.h"

namespace qdq {

Device run_device(const TrainingSettings& training) {
    return !training.use_cpu && cuda::device_count() > 0 ? Device::CUDA : Device::CPU;
}

std::vector<std::string> device_gaps(const RunConfig& config) {
    std::vector<std::string> gaps;
    const int capability = cuda::compute_capability();
    const std::string has = "; this GPU has " + std::to_string(capability / 10) + "." + std::to_string(capability % 10);
    if (config.training.bf16 && capability < 80)
        gaps.push_back("training.bf16: cuBLAS has bf16 products from compute capability 8.0" + has);
    if (config.training.tf32 && capability < 80)
        gaps.push_back("training.tf32: tensor cores take TF32 from compute capability 8.0" + has);
    return gaps;
}

void check_device_support(const RunConfig& config) {
    const std::string unusable = cuda::unusable_gpu();
    if (!config.training.use_cpu && !unusable.empty())
        throw std::runtime_error(config.source + ": this run would go on the GPU, and the GPU cannot be used: " +
                                 unusable + "\nupdate the NVIDIA driver, or set training.use_cpu to true to run on the CPU");
    if (run_device(config.training) == Device::CPU) {
        if (!config.training.tf32) return;
        const std::string why = config.training.use_cpu ? "training.use_cpu" : "no GPU";
        throw std::runtime_error(config.source + ": training.tf32 needs a GPU of compute capability 8.0 or later, " +
                                 "and this run is on the CPU (" + why + "); set training.tf32 to false");
    }
    const std::vector<std::string> gaps = device_gaps(config);
    if (gaps.empty()) return;
    std::string message = config.source + ": this run cannot go on the GPU:";
    for (const std::string& gap : gaps) message += "\n  " + gap;
    throw std::runtime_error(message + "\nset training.use_cpu to true to run it on the CPU");
}

void select_run_device(const RunConfig& config) {
    if (run_device(config.training) == Device::CUDA && world().size > 1) cuda::select_device(world().local_rank);
}

void place_on_run_device(const nn::Module& model, const RunConfig& config) {
    const Device device = run_device(config.training);
    static bool said = false;
    if (!said && world().is_root()) {
        if (device == Device::CUDA) std::fprintf(stderr, "qdqtrain: running on the GPU: %s\n", cuda::device_description().c_str());
        else if (cuda::device_count() > 0) std::fprintf(stderr, "qdqtrain: running on the CPU (training.use_cpu)\n");
        said = true;
    }
    model.move_to(device);
}

}  // namespace qdq

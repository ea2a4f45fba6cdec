// qdqtrain: the command-line entry point. Subcommands arrive with the trainer.
#include <cstdio>
#include <cstring>
#include <exception>

#include "autograd/gemm.h"
#include "cuda/backend.h"

namespace {

const char* kUsage =
    "usage: qdqtrain [--version] [--help]\n"
    "\n"
    "Trains BERT-family encoders in FP32, calibrates and fine-tunes them with fake\n"
    "quantization, and exports INT8 ONNX models.\n"
    "\n"
    "options:\n"
    "  --version   print the version, the GEMM backend and the CUDA status\n"
    "  --help      print this help\n";

}  // namespace

int main(int argc, char** argv) {
    if (argc < 2 || std::strcmp(argv[1], "--help") == 0 || std::strcmp(argv[1], "-h") == 0) {
        std::fputs(kUsage, argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    if (std::strcmp(argv[1], "--version") == 0) {
        try {
            std::printf("qdqtrain %s\n", QDQ_VERSION);
            std::printf("gemm: %s\n", qdq::gemm_backend_description().c_str());
            std::printf("cuda: %s\n", qdq::cuda::device_description().c_str());
        } catch (const std::exception& e) {
            std::fprintf(stderr, "qdqtrain: %s\n", e.what());
            return 1;
        }
        return 0;
    }
    std::fprintf(stderr, "qdqtrain: unknown command '%s'\n\n%s", argv[1], kUsage);
    return 2;
}

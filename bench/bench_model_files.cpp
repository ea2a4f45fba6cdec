// A model's start and its files at BERT-base's or BERT-large's shapes: building the question
// answering model with its initial weights (what every command does before loading a checkpoint
// over them), writing model.h5 as a stage does (compressed), and reading it back. Beside the
// write, the same tensors through HDF5's own shuffle and deflate filters (one thread, zlib),
// which is how model.h5 was written before its chunks were compressed outside the library, and
// beside the read, HDF5's own pipeline reading the library's file. Last, a command's start: the
// model built and the file loaded over it, drawing every initial weight and drawing none.
// bench/bench_model_files.py times PyTorch's counterparts; bench/bench_model_files.sh runs both.
// Usage: bench_model_files [--model base|large] [--reps N] [--dir DIR]
#include <hdf5.h>
#include <omp.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "bench/timing.h"
#include "io/hdf5_weights.h"
#include "nn/heads.h"
#include "nn/init.h"
#include "nn/state_dict.h"

namespace fs = std::filesystem;
using namespace qdq;

namespace {

nn::BertConfig shapes(const std::string& model) {
    nn::BertConfig c;
    c.vocab_size = 30522;
    c.max_position_embeddings = 512;
    c.hidden_size = model == "large" ? 1024 : 768;
    c.num_hidden_layers = model == "large" ? 24 : 12;
    c.num_attention_heads = model == "large" ? 16 : 12;
    c.intermediate_size = 4 * c.hidden_size;
    return c;
}

// The tensors as HDF5's filters write them: one chunk per tensor, shuffle, deflate level 1.
void save_through_library_filters(const std::string& path, const NamedTensors& tensors) {
    hid_t file = H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    for (const NamedTensor& t : tensors) {
        std::vector<hsize_t> dims(t.tensor.shape().begin(), t.tensor.shape().end());
        hid_t space = H5Screate_simple((int)dims.size(), dims.data(), nullptr);
        hid_t plist = H5Pcreate(H5P_DATASET_CREATE);
        H5Pset_chunk(plist, (int)dims.size(), dims.data());
        H5Pset_shuffle(plist);
        H5Pset_deflate(plist, 1);
        hid_t dataset = H5Dcreate2(file, t.name.c_str(), H5T_IEEE_F32LE, space, H5P_DEFAULT, plist, H5P_DEFAULT);
        H5Dwrite(dataset, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, t.tensor.raw());
        H5Dclose(dataset);
        H5Pclose(plist);
        H5Sclose(space);
    }
    H5Fclose(file);
}

// Every tensor of `path` through HDF5's own pipeline (H5Dread: one thread, zlib).
void load_through_library_filters(const std::string& path, const NamedTensors& like) {
    hid_t file = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
    for (const NamedTensor& t : like) {
        Tensor back = empty(t.tensor.shape());
        hid_t dataset = H5Dopen2(file, t.name.c_str(), H5P_DEFAULT);
        H5Dread(dataset, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, back.raw());
        H5Dclose(dataset);
    }
    H5Fclose(file);
}

}  // namespace

int main(int argc, char** argv) {
    std::string model = "base", dir = fs::temp_directory_path().string();
    int reps = 3;
    for (int i = 1; i + 1 < argc; i += 2) {
        const std::string flag = argv[i], value = argv[i + 1];
        if (flag == "--model") model = value;
        else if (flag == "--reps") reps = std::atoi(value.c_str());
        else if (flag == "--dir") dir = value;
        else {
            std::fprintf(stderr, "usage: bench_model_files [--model base|large] [--reps N] [--dir DIR]\n");
            return 2;
        }
    }
    const nn::BertConfig config = shapes(model);
    const std::string ours = dir + "/bench_model_" + std::to_string(getpid()) + ".h5";
    const std::string library = dir + "/bench_model_library_" + std::to_string(getpid()) + ".h5";
    std::printf("# bert-%s, %d threads\n", model.c_str(), omp_get_max_threads());
    bench::print_header();
    NamedTensors state;
    bench::print_row("build_" + model, bench::time_it(0, reps, [&] {
              Rng init(42);
              nn::BertForQuestionAnswering qa(config, init);
              state = qa.state_dict();
          }), 0);
    // Writes alternate, so that the page cache and the disk treat both alike.
    std::vector<double> write_ours, write_library;
    for (int i = 0; i < reps; ++i) {
        write_ours.push_back(bench::time_once([&] { save_hdf5_weights(ours, state, "{}", Hdf5Storage::Compressed); }));
        write_library.push_back(bench::time_once([&] { save_through_library_filters(library, state); }));
    }
    bench::print_row("save_h5_" + model, bench::summarize(write_ours), 0);
    bench::print_row("save_h5_library_filters_" + model, bench::summarize(write_library), 0);
    bench::print_row("load_h5_" + model, bench::time_it(0, reps, [&] { load_hdf5_weights(ours); }), 0);
    bench::print_row("load_h5_library_filters_" + model,
                     bench::time_it(0, reps, [&] { load_through_library_filters(library, state); }), 0);
    // What a command does with a checkpoint: build the model, then load the file over it, first
    // drawing every initial weight, then under a DeferredInit, which draws only what the file lacks.
    const auto build_and_load = [&] {
        Rng init(42);
        nn::BertForQuestionAnswering qa(config, init);
        nn::load_state_dict(qa, load_hdf5_weights(ours).tensors, ours);
    };
    bench::print_row("build_then_load_" + model, bench::time_it(0, reps, build_and_load), 0);
    bench::print_row("build_deferred_load_" + model, bench::time_it(0, reps, [&] {
              nn::DeferredInit deferred;
              build_and_load();
              deferred.finish();
          }), 0);
    std::printf("# model.h5 %.1f MB, through the library's filters %.1f MB\n", fs::file_size(ours) / 1e6,
                fs::file_size(library) / 1e6);
    fs::remove(ours);
    fs::remove(library);
    return 0;
}

#include "io/hdf5_weights.h"

#include <algorithm>
#include <exception>
#include <filesystem>
#include <optional>
#include <set>
#include <stdexcept>
#include <vector>

#include <hdf5.h>

#include "io/deflate_chunk.h"
#include "io/hdf5_call.h"

namespace qdq {

namespace {

using hdf5::checked;
using hdf5::Handle;
using hdf5::QuietErrors;

constexpr const char* kConfigAttribute = "config";

std::string key_context(const std::string& path, const std::string& key) {
    return path + ": dataset \"" + key + "\"";
}

std::string describe_type(hid_t type) {
    const size_t bits = 8 * H5Tget_size(type);
    switch (H5Tget_class(type)) {
        case H5T_INTEGER:
            return (H5Tget_sign(type) == H5T_SGN_NONE ? "uint" : "int") + std::to_string(bits);
        case H5T_FLOAT: return "float" + std::to_string(bits);
        case H5T_STRING: return "string";
        case H5T_COMPOUND: return "compound";
        default: return "HDF5 type class " + std::to_string((int)H5Tget_class(type));
    }
}

// Byte order is the one freedom allowed: H5Dread converts either order exactly.
DType tensor_dtype(hid_t type, const std::string& context) {
    if (H5Tequal(type, H5T_IEEE_F32LE) > 0 || H5Tequal(type, H5T_IEEE_F32BE) > 0) return DType::F32;
    if (H5Tequal(type, H5T_STD_I32LE) > 0 || H5Tequal(type, H5T_STD_I32BE) > 0) return DType::I32;
    throw std::runtime_error(context + ": unsupported dtype " + describe_type(type) +
                             " (expected float32 or int32)");
}

hid_t memory_type(DType dtype) { return dtype == DType::F32 ? H5T_NATIVE_FLOAT : H5T_NATIVE_INT32; }

void check_key(const std::string& path, const std::string& key, std::set<std::string>& seen) {
    check(!key.empty() && key != "." && key.find('/') == std::string::npos,
          path + ": key \"" + key + "\" cannot name a root dataset (empty, \".\" or has '/')");
    check(seen.insert(key).second, path + ": duplicate key \"" + key + "\"");
}

void write_config(hid_t file, const std::string& config_json, const std::string& path) {
    Handle type(checked(H5Tcopy(H5T_C_S1), path, "string type"), H5Tclose);
    checked(H5Tset_size(type, H5T_VARIABLE), path, "string type");
    checked(H5Tset_cset(type, H5T_CSET_UTF8), path, "string type");
    Handle space(checked(H5Screate(H5S_SCALAR), path, "config dataspace"), H5Sclose);
    Handle attribute(checked(H5Acreate2(file, kConfigAttribute, type, space, H5P_DEFAULT, H5P_DEFAULT),
                             path, "creating the config attribute"),
                     H5Aclose);
    const char* text = config_json.c_str();
    checked(H5Awrite(attribute, type, &text), path, "writing the config attribute");
}

std::string read_config(hid_t file, const std::string& path) {
    if (checked(H5Aexists(file, kConfigAttribute), path, "looking up the config attribute") == 0)
        throw std::runtime_error(path + ": no \"config\" attribute on the root group");
    Handle attribute(checked(H5Aopen(file, kConfigAttribute, H5P_DEFAULT), path, "opening config"),
                     H5Aclose);
    Handle stored_type(checked(H5Aget_type(attribute), path, "config type"), H5Tclose);
    Handle space(checked(H5Aget_space(attribute), path, "config dataspace"), H5Sclose);
    if (H5Tget_class(stored_type) != H5T_STRING || H5Tis_variable_str(stored_type) <= 0 ||
        H5Sget_simple_extent_npoints(space) != 1)
        throw std::runtime_error(path + ": the \"config\" attribute is not one variable-length string");
    Handle type(checked(H5Tcopy(H5T_C_S1), path, "string type"), H5Tclose);
    checked(H5Tset_size(type, H5T_VARIABLE), path, "string type");
    checked(H5Tset_cset(type, H5Tget_cset(stored_type)), path, "string type");
    char* text = nullptr;
    checked(H5Aread(attribute, type, &text), path, "reading the config attribute");
    std::string config = text ? text : "";
    H5free_memory(text);
    return config;
}

// Whether a tensor is stored as one compressed chunk: scalars and empty tensors cannot be chunked
// and keep HDF5's defaults (contiguous, unfiltered).
bool chunked(const Tensor& t, Hdf5Storage storage) {
    return storage == Hdf5Storage::Compressed && t.dim() > 0 && t.numel() > 0;
}

// Sets `plist` (dataset creation properties) for a chunked tensor: one chunk per tensor under the
// shuffle and deflate filters, which readers decode the chunk write_dataset stores with. The
// level (1) is the one zlib_deflate deflates at; it is only the filter's parameter, which HDF5
// reads when it writes through its own pipeline, never when it reads.
void set_chunked_storage(hid_t plist, const std::vector<hsize_t>& dims, const std::string& context) {
    checked(H5Pset_chunk(plist, (int)dims.size(), dims.data()), context, "chunking");
    checked(H5Pset_shuffle(plist), context, "the shuffle filter");
    checked(H5Pset_deflate(plist, 1), context, "the deflate filter");
}

// Writes `host` as dataset `name`: through H5Dwrite, or, given its compressed chunk (shuffled and
// deflated by the caller), as that chunk with every filter marked applied.
void write_dataset(hid_t file, const std::string& name, const Tensor& host, const std::string& path,
                   const std::vector<uint8_t>* chunk) {
    const std::string context = key_context(path, name);
    const std::vector<hsize_t> dims(host.shape().begin(), host.shape().end());
    Handle space(checked(dims.empty() ? H5Screate(H5S_SCALAR)
                                      : H5Screate_simple((int)dims.size(), dims.data(), nullptr),
                         context, "creating the dataspace"),
                 H5Sclose);
    const hid_t file_type = host.dtype() == DType::F32 ? H5T_IEEE_F32LE : H5T_STD_I32LE;
    Handle create(checked(H5Pcreate(H5P_DATASET_CREATE), context, "dataset creation properties"), H5Pclose);
    if (chunk) set_chunked_storage(create, dims, context);
    Handle dataset(checked(H5Dcreate2(file, name.c_str(), file_type, space, H5P_DEFAULT,
                                      create, H5P_DEFAULT),
                           context, "creating"),
                   H5Dclose);
    if (chunk) {
        const std::vector<hsize_t> origin(dims.size(), 0);
        checked(H5Dwrite_chunk(dataset, H5P_DEFAULT, 0, origin.data(), chunk->size(), chunk->data()), context,
                "writing the compressed chunk");
    } else if (host.numel() > 0) {
        checked(H5Dwrite(dataset, memory_type(host.dtype()), H5S_ALL, H5S_ALL, H5P_DEFAULT, host.raw()),
                context, "writing");
    }
}

// Compressed copies held at once: tensors are compressed (or decoded) a window at a time, every
// core taking the next tensor of the window.
constexpr size_t kCompressionWindowBytes = size_t{64} << 20;

// body(i) for i in [0, n), each on the next free core; the first exception thrown is rethrown
// once all have ended.
template <typename Body>
void on_every_core(size_t n, Body&& body) {
    std::exception_ptr failure;
#pragma omp parallel for schedule(dynamic, 1)
    for (size_t i = 0; i < n; ++i) {
        try {
            body(i);
        } catch (...) {
#pragma omp critical
            if (!failure) failure = std::current_exception();
        }
    }
    if (failure) std::rethrow_exception(failure);
}

void write_datasets(hid_t file, const NamedTensors& tensors, const std::string& path, Hdf5Storage storage) {
    for (size_t begin = 0, end = 0; begin < tensors.size(); begin = end) {
        std::vector<Tensor> hosts;
        size_t window_bytes = 0;
        for (end = begin; end < tensors.size() && (end == begin || window_bytes < kCompressionWindowBytes); ++end) {
            const Tensor& t = tensors[end].tensor;
            hosts.push_back(t.is_cuda() ? t.to(Device::CPU) : t);
            window_bytes += (size_t)hosts.back().numel() * dtype_size(hosts.back().dtype());
        }
        std::vector<std::vector<uint8_t>> chunks(hosts.size());
        on_every_core(hosts.size(), [&](size_t i) {
            if (!chunked(hosts[i], storage)) return;
            const size_t element = dtype_size(hosts[i].dtype());
            chunks[i] = zlib_deflate(shuffle_bytes(hosts[i].raw(), (size_t)hosts[i].numel() * element, element), element);
        });
        for (size_t i = 0; i < hosts.size(); ++i)
            write_dataset(file, tensors[begin + i].name, hosts[i], path, chunked(hosts[i], storage) ? &chunks[i] : nullptr);
    }
}

// A tensor whose dataset is one chunk under the shuffle and deflate filters alone, as compressed
// files are written (by this writer, or h5py's with shuffle and gzip): its stored chunk, read as
// it is, waits to be decoded beside others (decode_chunks) rather than through HDF5's filters on
// one thread.
struct StoredChunk {
    std::string context;
    Tensor tensor;  // allocated, filled when decoded
    std::vector<uint8_t> compressed;
};

// The stored chunk of `dataset` (file type `type`, shape `dims`) when it is a whole tensor under
// exactly shuffle then deflate, both applied, and of the type held in memory; none otherwise.
std::optional<std::vector<uint8_t>> whole_compressed_chunk(hid_t dataset, hid_t type, const std::vector<hsize_t>& dims,
                                                           const std::string& context) {
    if (dims.empty() || (H5Tequal(type, H5T_IEEE_F32LE) <= 0 && H5Tequal(type, H5T_STD_I32LE) <= 0)) return std::nullopt;
    Handle plist(checked(H5Dget_create_plist(dataset), context, "reading the creation properties"), H5Pclose);
    if (H5Pget_layout(plist) != H5D_CHUNKED || H5Pget_nfilters(plist) != 2) return std::nullopt;
    std::vector<hsize_t> chunk(dims.size());
    if (H5Pget_chunk(plist, (int)dims.size(), chunk.data()) != (int)dims.size() || chunk != dims) return std::nullopt;
    const H5Z_filter_t order[] = {H5Z_FILTER_SHUFFLE, H5Z_FILTER_DEFLATE};
    for (unsigned f = 0; f < 2; ++f) {
        unsigned flags = 0, values[8] = {}, filter_config = 0;
        size_t count = 8;
        if (H5Pget_filter2(plist, f, &flags, &count, values, 0, nullptr, &filter_config) != order[f]) return std::nullopt;
    }
    const std::vector<hsize_t> origin(dims.size(), 0);
    hsize_t size = 0;
    if (H5Dget_chunk_storage_size(dataset, origin.data(), &size) < 0 || size == 0) {
        H5Eclear2(H5E_DEFAULT);
        return std::nullopt;  // never written: HDF5 gives the fill value
    }
    std::vector<uint8_t> stored(size);
    uint32_t skipped = 0;
    checked(H5Dread_chunk(dataset, H5P_DEFAULT, origin.data(), &skipped, stored.data()), context, "reading its chunk");
    // A filter HDF5 skipped on writing (an optional one that failed) leaves a chunk only its own
    // pipeline decodes.
    if (skipped != 0) return std::nullopt;
    return stored;
}

// Decodes the chunks on every core into their tensors, and forgets them.
void decode_chunks(std::vector<StoredChunk>& chunks) {
    on_every_core(chunks.size(), [&](size_t i) {
        const StoredChunk& c = chunks[i];
        const size_t element = dtype_size(c.tensor.dtype());
        try {
            inflate_and_unshuffle(c.compressed, c.tensor.raw(), (size_t)c.tensor.numel() * element, element);
        } catch (const std::exception& e) {
            throw std::runtime_error(c.context + ": " + e.what());
        }
    });
    chunks.clear();
}

// The dataset `key` as a tensor. A whole compressed chunk is read as stored and left in
// `deferred` to be decoded, the tensor returned unfilled until then.
Tensor read_dataset(hid_t file, const std::string& key, const std::string& path, std::vector<StoredChunk>& deferred) {
    const std::string context = key_context(path, key);
    if (H5Lexists(file, key.c_str(), H5P_DEFAULT) <= 0) {
        H5Eclear2(H5E_DEFAULT);
        throw std::runtime_error(context + " does not exist");
    }
    Handle object(checked(H5Oopen(file, key.c_str(), H5P_DEFAULT), context, "opening"), H5Oclose);
    if (H5Iget_type(object) != H5I_DATASET)
        throw std::runtime_error(context + " is not a dataset (this layout keeps every key at the root)");
    Handle type(checked(H5Dget_type(object), context, "reading the type"), H5Tclose);
    const DType dtype = tensor_dtype(type, context);

    Handle space(checked(H5Dget_space(object), context, "reading the dataspace"), H5Sclose);
    if (H5Sget_simple_extent_type(space) == H5S_NULL) throw std::runtime_error(context + " holds no data");
    const int rank = checked(H5Sget_simple_extent_ndims(space), context, "reading the rank");
    std::vector<hsize_t> dims((size_t)rank);
    checked(H5Sget_simple_extent_dims(space, dims.data(), nullptr), context, "reading the shape");
    Shape shape;
    int64_t numel = 1;
    for (hsize_t d : dims) {
        if (d > (hsize_t)INT64_MAX || __builtin_mul_overflow(numel, (int64_t)d, &numel))
            throw std::runtime_error(context + ": shape overflows 64 bits");
        shape.push_back((int64_t)d);
    }
    Tensor t = empty(shape, dtype);
    if (numel == 0) return t;
    if (std::optional<std::vector<uint8_t>> stored = whole_compressed_chunk(object, type, dims, context)) {
        deferred.push_back({context, t, std::move(*stored)});
        return t;
    }
    checked(H5Dread(object, memory_type(dtype), H5S_ALL, H5S_ALL, H5P_DEFAULT, t.raw()), context, "reading");
    return t;
}

Handle open_for_reading(const std::string& path) {
    std::error_code error;
    if (!std::filesystem::is_regular_file(path, error))
        throw std::runtime_error(path + ": no such file");
    if (H5Fis_hdf5(path.c_str()) <= 0) {
        H5Eclear2(H5E_DEFAULT);
        throw std::runtime_error(path + ": not an HDF5 file");
    }
    return Handle(checked(H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), path, "opening"), H5Fclose);
}

// Root link names in creation order when the file tracks it (ours do), else in name order.
std::vector<std::string> root_link_names(hid_t file, const std::string& path) {
    Handle root(checked(H5Gopen2(file, "/", H5P_DEFAULT), path, "opening the root group"), H5Gclose);
    Handle create_plist(checked(H5Gget_create_plist(root), path, "reading the root group"), H5Pclose);
    unsigned order_flags = 0;
    checked(H5Pget_link_creation_order(create_plist, &order_flags), path, "reading the link order");
    const H5_index_t index = (order_flags & H5P_CRT_ORDER_INDEXED) ? H5_INDEX_CRT_ORDER : H5_INDEX_NAME;

    H5G_info_t info;
    checked(H5Gget_info(root, &info), path, "reading the root group");
    std::vector<std::string> names;
    for (hsize_t i = 0; i < info.nlinks; ++i) {
        const ssize_t length = checked(
            H5Lget_name_by_idx(root, ".", index, H5_ITER_INC, i, nullptr, 0, H5P_DEFAULT), path,
            "listing the root group");
        std::vector<char> name((size_t)length + 1);
        checked(H5Lget_name_by_idx(root, ".", index, H5_ITER_INC, i, name.data(), name.size(), H5P_DEFAULT),
                path, "listing the root group");
        names.emplace_back(name.data(), (size_t)length);
    }
    return names;
}

}  // namespace

void save_hdf5_weights(const std::string& path, const NamedTensors& tensors,
                       const std::string& config_json, Hdf5Storage storage) {
    std::set<std::string> seen;
    for (const NamedTensor& t : tensors) {
        check_key(path, t.name, seen);
        check(t.tensor.defined(), key_context(path, t.name) + ": tensor is undefined");
    }
    check(config_json.find('\0') == std::string::npos,
          path + ": config contains a NUL byte, which an HDF5 C string cannot hold");

    QuietErrors quiet;
    Handle create_plist(checked(H5Pcreate(H5P_FILE_CREATE), path, "file creation properties"), H5Pclose);
    checked(H5Pset_link_creation_order(create_plist, H5P_CRT_ORDER_TRACKED | H5P_CRT_ORDER_INDEXED),
            path, "tracking link order");
    Handle file(checked(H5Fcreate(path.c_str(), H5F_ACC_TRUNC, create_plist, H5P_DEFAULT), path, "creating"),
                H5Fclose);
    write_config(file, config_json, path);
    write_datasets(file, tensors, path, storage);
    checked(H5Fflush(file, H5F_SCOPE_LOCAL), path, "flushing");
}

Hdf5Weights load_hdf5_weights(const std::string& path) {
    QuietErrors quiet;
    Handle file = open_for_reading(path);
    Hdf5Weights out;
    out.config_json = read_config(file, path);
    std::vector<StoredChunk> chunks;
    size_t window_bytes = 0;
    for (const std::string& key : root_link_names(file, path)) {
        out.tensors.push_back({key, read_dataset(file, key, path, chunks)});
        window_bytes += (size_t)out.tensors.back().tensor.numel() * dtype_size(out.tensors.back().tensor.dtype());
        if (window_bytes >= kCompressionWindowBytes) {
            decode_chunks(chunks);
            window_bytes = 0;
        }
    }
    decode_chunks(chunks);
    return out;
}

std::string load_hdf5_config(const std::string& path) {
    QuietErrors quiet;
    Handle file = open_for_reading(path);
    return read_config(file, path);
}

Tensor load_hdf5_tensor(const std::string& path, const std::string& key) {
    QuietErrors quiet;
    Handle file = open_for_reading(path);
    std::vector<StoredChunk> chunk;
    Tensor t = read_dataset(file, key, path, chunk);
    decode_chunks(chunk);
    return t;
}

}  // namespace qdq

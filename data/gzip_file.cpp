#include "data/gzip_file.h"

#include <zlib.h>

#include <memory>
#include <stdexcept>

namespace qdq {

std::string read_gzip_file(const std::string& path) {
    std::unique_ptr<gzFile_s, int (*)(gzFile)> file(gzopen(path.c_str(), "rb"), gzclose);
    if (!file) throw std::runtime_error("cannot open " + path);
    gzbuffer(file.get(), 1 << 17);
    std::string out;
    constexpr size_t kChunk = 1 << 20;
    for (;;) {
        const size_t used = out.size();
        out.resize(used + kChunk);
        const int n = gzread(file.get(), out.data() + used, (unsigned)kChunk);
        if (n < 0) {
            int code = 0;
            throw std::runtime_error("cannot decompress " + path + ": " + gzerror(file.get(), &code));
        }
        out.resize(used + (size_t)n);
        // zlib passes non-gzip input through unchanged; a data file here is always compressed.
        if (gzdirect(file.get())) throw std::runtime_error(path + " is not gzip-compressed");
        if (n == 0) break;
    }
    int code = Z_OK;
    gzerror(file.get(), &code);
    if (code != Z_OK) throw std::runtime_error(path + " is truncated or corrupt");
    return out;
}

}  // namespace qdq

#include "data/text_file.h"

#include <zlib.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "data/gzip_file.h"
#include "data/utf8.h"

namespace qdq {

namespace {

// zlib and the standard streams open a directory as an empty file: a path given for data must be
// refused by name instead of read as no examples.
void check_not_directory(const std::string& path) {
    if (std::filesystem::is_directory(path)) throw std::runtime_error(path + " is a directory, not a file");
}

}  // namespace

LineReader::LineReader(const std::string& path) : path_(path), file_(gzopen(path.c_str(), "rb"), gzclose) {
    check_not_directory(path);
    if (!file_) throw std::runtime_error("cannot open " + path);
    constexpr unsigned kBufferBytes = 1 << 17;
    gzbuffer(file_.get(), kBufferBytes);
    buffer_.resize(kBufferBytes);
}

std::string LineReader::where() const { return path_ + ":" + std::to_string(line_number_); }

bool LineReader::fill() {
    const int n = gzread(file_.get(), buffer_.data(), (unsigned)buffer_.size());
    int code = Z_OK;
    const char* message = gzerror(file_.get(), &code);
    // Z_BUF_ERROR at the end is zlib's word for a gzip stream cut off before its trailer.
    if (n < 0 || (code != Z_OK && code != Z_STREAM_END))
        throw std::runtime_error(path_ + " is truncated or corrupt (" + message + ")");
    if (!checked_compression_) {
        checked_compression_ = true;
        if (n > 0 && path_.ends_with(".gz") && gzdirect(file_.get()))
            throw std::runtime_error(path_ + " is named .gz but is not gzip-compressed");
    }
    begin_ = 0;
    end_ = (size_t)n;
    return n > 0;
}

bool LineReader::next(std::string& line) {
    line.clear();
    bool any = false;  // a last line without '\n' still counts; an empty file has no lines
    for (;;) {
        if (begin_ == end_ && !fill()) {
            if (!any) return false;
            break;
        }
        any = true;
        const char* start = buffer_.data() + begin_;
        const void* newline = std::memchr(start, '\n', end_ - begin_);
        if (newline) {
            const size_t length = (const char*)newline - start;
            line.append(start, length);
            begin_ += length + 1;
            break;
        }
        line.append(start, end_ - begin_);
        begin_ = end_;
    }
    ++line_number_;
    if (line_number_ == 1 && line.starts_with("\xEF\xBB\xBF")) line.erase(0, 3);
    return true;
}

std::string read_text_file(const std::string& path) {
    check_not_directory(path);
    if (path.ends_with(".gz")) return read_gzip_file(path);
    std::ifstream in(path, std::ios::binary);
    if (!in) throw std::runtime_error("cannot open " + path);
    std::ostringstream content;
    content << in.rdbuf();
    if (in.bad()) throw std::runtime_error("cannot read " + path);
    return std::move(content).str();
}

void check_utf8(std::string_view text, const std::string& where) {
    size_t pos = 0;
    try {
        while (pos < text.size()) {
            if ((unsigned char)text[pos] < 0x80) {
                ++pos;
            } else {
                decode_utf8(text, pos);
            }
        }
    } catch (const std::invalid_argument& e) {
        throw std::runtime_error(where + ": " + e.what());
    }
}

}  // namespace qdq

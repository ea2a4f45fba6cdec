// Text data files, plain or gzip-compressed, read line by line so that the large ones (50k IMDB
// reviews, Wikipedia) never sit in memory as one decompressed string.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

struct gzFile_s;

namespace qdq {

// Reads through zlib, which passes an uncompressed file through unchanged, so one reader serves
// both; a file named *.gz must really be gzip. A UTF-8 byte order mark at the start is dropped.
class LineReader {
public:
    explicit LineReader(const std::string& path);  // throws std::runtime_error if unreadable

    // The next line without its '\n' ('\r' of a CRLF end is kept: only the caller knows whether
    // it sits inside a quoted field). False at the end of the file. Throws std::runtime_error
    // naming the file for a truncated or corrupt gzip stream.
    bool next(std::string& line);

    int64_t line_number() const { return line_number_; }  // of the last line returned, from 1
    const std::string& path() const { return path_; }
    std::string where() const;  // "path:line" for messages

private:
    bool fill();

    std::string path_;
    std::unique_ptr<gzFile_s, int (*)(gzFile_s*)> file_;
    std::string buffer_;
    size_t begin_ = 0, end_ = 0;
    int64_t line_number_ = 0;
    bool checked_compression_ = false;
};

// The whole content of a plain or *.gz file, for files read as one document (SQuAD's JSON).
std::string read_text_file(const std::string& path);

// Throws std::runtime_error "<where>: invalid UTF-8 at byte ..." unless text is valid UTF-8.
void check_utf8(std::string_view text, const std::string& where);

}  // namespace qdq

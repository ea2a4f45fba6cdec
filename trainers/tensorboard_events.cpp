#include "trainers/tensorboard_events.h"

#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <stdexcept>

#include "tensorboard_event.pb.h"

namespace qdq {

namespace fs = std::filesystem;

namespace {

// Byte-at-a-time CRC-32C: the table holds each byte's remainder under the reflected polynomial.
// Event files are a few kilobytes; no faster CRC is needed.
constexpr std::array<uint32_t, 256> crc32c_table() {
    std::array<uint32_t, 256> table{};
    for (uint32_t byte = 0; byte < 256; ++byte) {
        uint32_t crc = byte;
        for (int bit = 0; bit < 8; ++bit) crc = (crc & 1) ? (crc >> 1) ^ 0x82F63B78u : crc >> 1;
        table[byte] = crc;
    }
    return table;
}
constexpr std::array<uint32_t, 256> kCrc32cTable = crc32c_table();

void put_le(std::string& out, uint64_t value, int bytes) {
    for (int i = 0; i < bytes; ++i) out += (char)((value >> (8 * i)) & 0xff);
}

uint64_t get_le(const std::string& in, size_t at, int bytes) {
    uint64_t value = 0;
    for (int i = 0; i < bytes; ++i) value |= (uint64_t)(unsigned char)in[at + (size_t)i] << (8 * i);
    return value;
}

double unix_seconds() {
    using namespace std::chrono;
    return duration<double>(system_clock::now().time_since_epoch()).count();
}

std::string host_name() {
    char name[256] = {};
    if (gethostname(name, sizeof name - 1) != 0 || name[0] == '\0') return "localhost";
    return name;
}

// The records of an event file, framing included, as far as they are whole with both CRCs
// holding and their data an Event: what follows is a killed writer's torn tail.
struct FileRecord {
    std::string framed;
    tensorboard::Event event;
};

std::vector<FileRecord> read_whole_records(const std::string& bytes) {
    std::vector<FileRecord> records;
    size_t at = 0;
    while (bytes.size() - at >= 16) {
        const uint64_t length = get_le(bytes, at, 8);
        if ((uint32_t)get_le(bytes, at + 8, 4) != masked_crc32c(bytes.data() + at, 8)) break;
        if (length > bytes.size() - at - 16) break;
        const char* data = bytes.data() + at + 12;
        if ((uint32_t)get_le(bytes, at + 12 + length, 4) != masked_crc32c(data, length)) break;
        FileRecord record{bytes.substr(at, 16 + length), {}};
        if (!record.event.ParseFromArray(data, (int)length)) break;
        records.push_back(std::move(record));
        at += 16 + length;
    }
    return records;
}

}  // namespace

uint32_t crc32c(const void* data, size_t size) {
    const auto* p = static_cast<const unsigned char*>(data);
    uint32_t crc = ~0u;
    for (size_t i = 0; i < size; ++i) crc = kCrc32cTable[(crc ^ p[i]) & 0xff] ^ (crc >> 8);
    return ~crc;
}

uint32_t masked_crc32c(const void* data, size_t size) {
    const uint32_t crc = crc32c(data, size);
    return ((crc >> 15) | (crc << 17)) + 0xa282ead8u;
}

std::vector<Scalar> record_scalars(const nlohmann::json& record) {
    std::vector<Scalar> scalars;
    for (const auto& [key, value] : record.items()) {
        if (key == "step" || !value.is_number()) continue;
        const std::string tag = key.starts_with("eval_") ? "eval/" + key.substr(5) : "train/" + key;
        scalars.push_back({tag, value.get<float>()});
    }
    return scalars;
}

EventFileWriter::EventFileWriter(std::string dir) : dir_(std::move(dir)) {}

EventFileWriter::~EventFileWriter() {
    if (file_) std::fclose(file_);
}

void EventFileWriter::open() {
    fs::create_directories(dir_);
    const std::string host = host_name();
    // TensorBoard reads a folder's files in name order: the new file's seconds come after every
    // name there, so that its events are read last.
    long long seconds = (long long)std::time(nullptr);
    for (const std::string& file : event_files(dir_)) {
        const std::string name = fs::path(file).filename().string();
        const size_t at = name.find("tfevents.");
        if (at != std::string::npos) seconds = std::max(seconds, std::atoll(name.c_str() + at + 9) + 1);
    }
    path_ = (fs::path(dir_) / ("events.out.tfevents." + std::to_string(seconds) + "." + host)).string();
    file_ = std::fopen(path_.c_str(), "wbx");
    if (!file_) throw std::runtime_error(path_ + ": cannot create");
    tensorboard::Event version;
    version.set_wall_time(unix_seconds());
    version.set_file_version("brain.Event:2");
    write_record(version.SerializeAsString());
}

void EventFileWriter::write_scalars(int64_t step, const std::vector<Scalar>& scalars) {
    if (scalars.empty()) return;
    if (!file_) open();
    tensorboard::Event event;
    event.set_wall_time(unix_seconds());
    event.set_step(step);
    for (const Scalar& s : scalars) {
        tensorboard::Summary::Value* value = event.mutable_summary()->add_value();
        value->set_tag(s.tag);
        value->set_simple_value(s.value);
    }
    write_record(event.SerializeAsString());
}

void EventFileWriter::write_record(const std::string& data) {
    std::string framed;
    put_le(framed, data.size(), 8);
    put_le(framed, masked_crc32c(framed.data(), 8), 4);
    framed += data;
    put_le(framed, masked_crc32c(data.data(), data.size()), 4);
    if (std::fwrite(framed.data(), 1, framed.size(), file_) != framed.size() || std::fflush(file_) != 0)
        throw std::runtime_error(path_ + ": cannot write");
}

std::vector<std::string> event_files(const std::string& dir) {
    std::vector<std::string> files;
    if (!fs::is_directory(dir)) return files;
    for (const auto& entry : fs::directory_iterator(dir))
        if (entry.is_regular_file() && entry.path().filename().string().find("tfevents") != std::string::npos &&
            entry.path().extension() != ".tmp")
            files.push_back(entry.path().string());
    std::sort(files.begin(), files.end());
    return files;
}

void keep_events_up_to(const std::string& dir, int64_t last_step) {
    if (!fs::is_directory(dir)) return;
    std::vector<fs::path> torn;  // left by a rewrite below that was cut short
    for (const auto& entry : fs::directory_iterator(dir))
        if (entry.path().extension() == ".tmp" && entry.path().filename().string().find("tfevents") != std::string::npos)
            torn.push_back(entry.path());
    for (const fs::path& path : torn) fs::remove(path);
    for (const std::string& path : event_files(dir)) {
        std::ifstream in(path, std::ios::binary);
        const std::string bytes{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
        std::string kept;
        bool any_scalar = false;
        for (const FileRecord& r : read_whole_records(bytes)) {
            const bool is_summary = r.event.has_summary();
            if (is_summary && r.event.step() > last_step) continue;
            kept += r.framed;
            any_scalar = any_scalar || is_summary;
        }
        if (!any_scalar) {
            fs::remove(path);
            continue;
        }
        if (kept.size() == bytes.size()) continue;
        // Through a temporary file, so that a crash here cannot lose the events that stay.
        const std::string tmp = path + ".tmp";
        {
            std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
            out << kept;
            if (!out) throw std::runtime_error(tmp + ": cannot write");
        }
        fs::rename(tmp, path);
    }
}

}  // namespace qdq

// TensorBoard's event files, for training.report_to "tensorboard" (trainers/run_log.h writes
// them at the records it writes to metrics.jsonl). A file is a sequence of TFRecords:
//
//   uint64 length, little-endian | uint32 masked CRC32C of those 8 bytes | data | uint32 masked CRC32C of data
//
// each holding a serialized Event (trainers/tensorboard_event.proto): the first says
// file_version "brain.Event:2", every later one the scalars of one step. TensorBoard finds the
// files of a folder by the "tfevents" in their names, reads them in name order and shows each
// folder as one run.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace qdq {

// CRC-32C (Castagnoli: reflected polynomial 0x82F63B78, initial value and final xor ~0), and
// TFRecord's masking of it: a CRC of data that holds CRCs is then not as easily trivial.
uint32_t crc32c(const void* data, size_t size);
uint32_t masked_crc32c(const void* data, size_t size);

struct Scalar {
    std::string tag;
    float value;  // TensorBoard's simple_value is a float
};

// The scalars Hugging Face's TensorBoardCallback writes for one log record: a number named
// eval_<x> as eval/<x>, every other number but "step" (the event's step) as train/<name>.
std::vector<Scalar> record_scalars(const nlohmann::json& record);

// One event file of a run: events.out.tfevents.<unix seconds>.<hostname> in `dir`, made at the
// first write (the second after the newest name there when that one is taken, as a run resumed
// within a second of its last start would find), each record flushed as it is written.
class EventFileWriter {
public:
    explicit EventFileWriter(std::string dir);
    ~EventFileWriter();
    EventFileWriter(const EventFileWriter&) = delete;
    EventFileWriter& operator=(const EventFileWriter&) = delete;

    void write_scalars(int64_t step, const std::vector<Scalar>& scalars);
    const std::string& path() const { return path_; }  // empty before the first write

private:
    void open();
    void write_record(const std::string& data);

    std::string dir_, path_;
    std::FILE* file_ = nullptr;
};

// The event files of `dir` (each name holding "tfevents"), oldest name first.
std::vector<std::string> event_files(const std::string& dir);

// Keeps in every event file of `dir` the events of steps up to last_step, as metrics.jsonl keeps
// its records (trainers/run_log.h): a run resumed from the checkpoint of last_step writes the
// later ones again, into a file of its own. A torn last record of a killed run is dropped with
// them; a file left with no scalar is removed. `dir` is the run's own, as output_dir is.
void keep_events_up_to(const std::string& dir, int64_t last_step);

}  // namespace qdq

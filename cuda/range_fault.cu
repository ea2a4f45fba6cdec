// Fake quantization's ranges, and an unsigned one's inputs, checked on the device (check_range,
// check_unsigned_input, cuda/kernels/fake_quant.cuh, in the forward's own kernel) instead of read
// back on every call: a check records the first fault in a device word, and the next read from
// the device (copy, to the host) reads the word with it and reports it. A QAT step would otherwise wait for the device once per quantizer, 240
// times at BERT-base.
#include <atomic>
#include <mutex>
#include <stdexcept>
#include <string>

#include "cuda/backend.h"
#include "cuda/host_device.h"
#include "cuda/quant_math.h"

namespace qdq::cuda {

namespace {

unsigned long long* fault_word = nullptr;  // on the device, zeroed: no fault; never freed
std::once_flag fault_word_made;
std::atomic<bool> ranges_checked{false};   // a check ran since the word was last read

}  // namespace

unsigned long long* range_fault_word() {
    std::call_once(fault_word_made, [] {
        fault_word = static_cast<unsigned long long*>(device_alloc(sizeof *fault_word));
        memset_zero(fault_word, sizeof *fault_word);
    });
    ranges_checked = true;
    return fault_word;
}

const unsigned long long* range_fault_to_read() { return ranges_checked.exchange(false) ? fault_word : nullptr; }

void report_range_fault(unsigned long long inverted) {
    if (inverted == 0) return;
    memset_zero(fault_word, sizeof *fault_word);  // reported once
    const unsigned long long fault = ~inverted;
    const float value = float_of_bits((uint32_t)(fault & 0xffffffffu));
    if ((fault >> 32) == kNegativeInputFault)
        throw std::runtime_error("fake_quant: negative values in unsigned quantization (PQ raises the same; one is " +
                                 std::to_string(value) + "); found on the device by a fake quantization before this read");
    throw std::runtime_error("fake_quant: amax[" + std::to_string(fault >> 32) + "] = " + std::to_string(value) +
                             ": amax must be finite and >= 0 (NaN: not calibrated); found on the device by a "
                             "fake quantization before this read");
}

}  // namespace qdq::cuda

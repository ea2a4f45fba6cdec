#include "parallel/communicator.h"

#include <algorithm>
#include <cstdlib>
#include <stdexcept>
#include <utility>

#include <mpi.h>
#include <omp.h>

namespace qdq {

namespace {

void check_mpi(int code, const char* what) {
    if (code == MPI_SUCCESS) return;
    char text[MPI_MAX_ERROR_STRING];
    int length = 0;
    MPI_Error_string(code, text, &length);
    throw std::runtime_error(std::string("MPI: ") + what + ": " + std::string(text, (size_t)length));
}

void finalize_at_exit() {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized) MPI_Finalize();
}

World join() {
    World w;
    if (!launched_by_mpi()) return w;
    int provided = 0;
    check_mpi(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided), "MPI_Init_thread");
    std::atexit(finalize_at_exit);
    // Errors come back as codes (check_mpi throws with MPI's text) instead of aborting the job
    // with a message that does not say which call failed.
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_rank(MPI_COMM_WORLD, &w.rank);
    MPI_Comm_size(MPI_COMM_WORLD, &w.size);
    MPI_Comm node;
    int local = 1;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
    MPI_Comm_size(node, &local);
    MPI_Comm_rank(node, &w.local_rank);
    MPI_Comm_free(&node);
    if (!std::getenv("OMP_NUM_THREADS")) omp_set_num_threads(std::max(1, omp_get_num_procs() / local));
    return w;
}

bool single() { return world().size == 1; }

int as_count(int64_t count) {
    if (count < 0 || count > (int64_t)INT32_MAX) throw std::invalid_argument("MPI: a count out of int range");
    return (int)count;
}

void allreduce(void* values, int64_t count, MPI_Datatype type, MPI_Op op) {
    if (single() || count == 0) return;
    check_mpi(MPI_Allreduce(MPI_IN_PLACE, values, as_count(count), type, op, MPI_COMM_WORLD), "MPI_Allreduce");
}

}  // namespace

bool launched_by_mpi() {
    for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_SIZE"})
        if (std::getenv(name)) return true;
    return false;
}

const World& world() {
    static const World w = join();
    return w;
}

int abort_world(int code) {
    if (launched_by_mpi() && world().size > 1) MPI_Abort(MPI_COMM_WORLD, code);
    return code;
}

void allreduce_sum(float* values, int64_t count) { allreduce(values, count, MPI_FLOAT, MPI_SUM); }
void allreduce_sum(double* values, int64_t count) { allreduce(values, count, MPI_DOUBLE, MPI_SUM); }
void allreduce_sum(int64_t* values, int64_t count) { allreduce(values, count, MPI_INT64_T, MPI_SUM); }
void allreduce_max(float* values, int64_t count) { allreduce(values, count, MPI_FLOAT, MPI_MAX); }
void allreduce_max(int64_t* values, int64_t count) { allreduce(values, count, MPI_INT64_T, MPI_MAX); }

std::vector<std::string> allgather_bytes(const std::string& bytes) {
    if (single()) return {bytes};
    const int n = world().size;
    int mine = as_count((int64_t)bytes.size());
    std::vector<int> sizes((size_t)n), offsets((size_t)n);
    check_mpi(MPI_Allgather(&mine, 1, MPI_INT, sizes.data(), 1, MPI_INT, MPI_COMM_WORLD), "MPI_Allgather");
    int64_t total = 0;
    for (int r = 0; r < n; ++r) {
        offsets[(size_t)r] = as_count(total);
        total += sizes[(size_t)r];
    }
    std::string all((size_t)total, '\0');
    check_mpi(MPI_Allgatherv(bytes.data(), mine, MPI_BYTE, all.data(), sizes.data(), offsets.data(), MPI_BYTE,
                             MPI_COMM_WORLD),
              "MPI_Allgatherv");
    std::vector<std::string> out;
    for (int r = 0; r < n; ++r) out.push_back(all.substr((size_t)offsets[(size_t)r], (size_t)sizes[(size_t)r]));
    return out;
}

std::string broadcast_bytes(const std::string& bytes) {
    if (single()) return bytes;
    int64_t size = (int64_t)bytes.size();
    check_mpi(MPI_Bcast(&size, 1, MPI_INT64_T, 0, MPI_COMM_WORLD), "MPI_Bcast");
    std::string out = world().is_root() ? bytes : std::string((size_t)size, '\0');
    check_mpi(MPI_Bcast(out.data(), as_count(size), MPI_BYTE, 0, MPI_COMM_WORLD), "MPI_Bcast");
    return out;
}

void barrier() {
    if (!single()) check_mpi(MPI_Barrier(MPI_COMM_WORLD), "MPI_Barrier");
}

AsyncSum::AsyncSum(float* values, int64_t count) {
    if (single()) return;
    auto* request = new MPI_Request;
    const int code = MPI_Iallreduce(MPI_IN_PLACE, values, as_count(count), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD, request);
    if (code != MPI_SUCCESS) {
        delete request;
        check_mpi(code, "MPI_Iallreduce");
    }
    request_ = request;
}

AsyncSum::AsyncSum(AsyncSum&& other) noexcept : request_(std::exchange(other.request_, nullptr)) {}

AsyncSum& AsyncSum::operator=(AsyncSum&& other) noexcept {
    if (this != &other) {
        release();
        request_ = std::exchange(other.request_, nullptr);
    }
    return *this;
}

AsyncSum::~AsyncSum() { release(); }

// Unwinding past a sum in flight: MPI still writes into the buffer until it completes, so it is
// waited for here, its error (if any) dropped, as a destructor cannot throw.
void AsyncSum::release() noexcept {
    if (!request_) return;
    auto* request = static_cast<MPI_Request*>(request_);
    MPI_Wait(request, MPI_STATUS_IGNORE);
    delete request;
    request_ = nullptr;
}

bool AsyncSum::poll() {
    if (!request_) return true;
    int done = 0;
    check_mpi(MPI_Test(static_cast<MPI_Request*>(request_), &done, MPI_STATUS_IGNORE), "MPI_Test");
    if (done) {
        delete static_cast<MPI_Request*>(request_);
        request_ = nullptr;
    }
    return done != 0;
}

void AsyncSum::wait() {
    if (!request_) return;
    auto* request = static_cast<MPI_Request*>(request_);
    request_ = nullptr;
    const int code = MPI_Wait(request, MPI_STATUS_IGNORE);
    delete request;
    check_mpi(code, "MPI_Wait");
}

}  // namespace qdq

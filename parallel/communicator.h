// The processes of a data-parallel run, and the few collectives it needs, over MPI (Open MPI
// from Debian). A process started by a launcher (mpirun, or srun in a Slurm job) joins the
// launcher's world on first use; any other process is a world of one, and every collective is
// then a no-op, so single-process runs take no MPI path at all. Collectives are called from the
// main thread only, in the same order on every rank.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace qdq {

struct World {
    int rank = 0;
    int size = 1;
    int local_rank = 0;  // among the ranks on this machine (each takes GPU local_rank mod count)
    bool is_root() const { return rank == 0; }
};

// This process's world, joined on the first call; MPI is finalised at exit. Ranks that share a
// machine share its cores: unless OMP_NUM_THREADS is set, each takes an equal part of them.
const World& world();
// Whether the environment holds a launcher's variables (OMPI_COMM_WORLD_SIZE, PMIX_RANK,
// PMI_SIZE): world() then joins MPI.
bool launched_by_mpi();

// Ends every rank with `code` (MPI_Abort) when there are several: a rank that fails alone
// would otherwise leave the others waiting in a collective. Returns `code` in one process.
int abort_world(int code);

// Sums `count` values over every rank, in place, the same result on each (MPI_Allreduce).
void allreduce_sum(float* values, int64_t count);
void allreduce_sum(double* values, int64_t count);
void allreduce_sum(int64_t* values, int64_t count);
// The maximum over ranks, in place.
void allreduce_max(float* values, int64_t count);
void allreduce_max(int64_t* values, int64_t count);
// Every rank's bytes, in rank order, on every rank.
std::vector<std::string> allgather_bytes(const std::string& bytes);
// Rank 0's bytes on every rank.
std::string broadcast_bytes(const std::string& bytes);
// Waits for every rank.
void barrier();

// A sum started now and completed by wait(): MPI_Iallreduce, so that a gradient bucket travels
// while the backward pass goes on. poll() lets MPI progress it (Open MPI moves non-blocking
// collectives only inside MPI calls) and says whether it is done.
class AsyncSum {
public:
    AsyncSum() = default;
    AsyncSum(float* values, int64_t count);  // starts it
    AsyncSum(AsyncSum&& other) noexcept;
    AsyncSum& operator=(AsyncSum&& other) noexcept;
    AsyncSum(const AsyncSum&) = delete;
    AsyncSum& operator=(const AsyncSum&) = delete;
    ~AsyncSum();  // waits (a sum in flight writes into its buffer until it completes)

    bool poll();
    void wait();

private:
    void release() noexcept;
    void* request_ = nullptr;  // an MPI_Request, owned
};

}  // namespace qdq

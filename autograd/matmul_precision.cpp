#include "autograd/matmul_precision.h"

namespace qdq {

namespace {
thread_local MatmulPrecision current = MatmulPrecision::F32;
}

MatmulPrecision matmul_precision() { return current; }

MatmulPrecisionGuard::MatmulPrecisionGuard(MatmulPrecision precision) : previous_(current) {
    current = precision;
}

MatmulPrecisionGuard::~MatmulPrecisionGuard() { current = previous_; }

}  // namespace qdq

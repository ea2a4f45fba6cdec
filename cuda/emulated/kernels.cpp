// The backend's kernel entry points for the emulated device: the very .cu sources nvcc compiles,
// compiled here by g++, whose launches then run on host threads (cuda/kernels/kernel_compat.h).
#include "cuda/elementwise.cu"
#include "cuda/softmax.cu"

#!/bin/sh
# Runs a test binary as an AVX2-only CPU would: the framework capped at QDQ_CPU=avx2 and node,
# with ONNX Runtime in it, under qemu's x86 emulator as a Haswell (AVX2 and FMA, no AVX-512, no
# VNNI). ONNX Runtime picks its kernels from the CPUID it sees, so this runs MLAS's AVX2 integer
# kernels, whose u8·s8 sums saturate, on any x86 machine.
#   avx2_onnxruntime.sh BINARY [ARGS...]
# Exits 77 (skipped) when qemu-x86_64 or node is missing, 1 under CI=true.
qemu=$(command -v qemu-x86_64)
node=$(command -v node)
if [ -z "$qemu" ] || [ -z "$node" ]; then
    echo "avx2_onnxruntime.sh: needs qemu-x86_64 (Debian's qemu-user) and node; scripts/test.sh installs both"
    [ "$CI" = true ] && exit 1
    exit 77
fi
# qemu warns about each Haswell feature its translator lacks (TSX, PCID, ...): none that
# ONNX Runtime uses.
QDQ_CPU=avx2 QDQ_NODE="$qemu -cpu Haswell-noTSX $node" exec "$@"

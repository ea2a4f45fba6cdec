// ONNX Runtime CPU latency of the models bench_onnx_export writes (fp32, qdq-tensorrt,
// qdq-onnxruntime-cpu), run alternately so that all see the same contention; each model's
// figure is its best per-round median, and its ratio to FP32 is also given round by round
// (median and range), as the models of one round share that round's contention. The
// onnxruntime-cpu file runs twice: with ORT's defaults (u8·s8 integer kernels, exact on VNNI
// CPUs, saturating without VNNI) and with session.x64quantprecision=1 (u8·u8 kernels, exact
// everywhere), the setting the pipeline's runs take on CPUs without VNNI (onnx/onnx_runtime.h).
//
//   node bench/bench_onnx.js DIR [--threads 2] [--rounds 3] [--shapes 32x128,1x128]
//
// Uses the onnxruntime-node that scripts/setup.sh installs under onnx/onnxruntime/node_modules.
'use strict';

const path = require('path');
const ort = require(path.join(__dirname, '..', 'onnx', 'onnxruntime', 'node_modules', 'onnxruntime-node'));

const U8U8 = { 'session.x64quantprecision': '1' };
const MODELS = [
    { name: 'fp32', file: 'fp32', extra: {} },
    { name: 'qdq-tensorrt', file: 'qdq-tensorrt', extra: {} },
    { name: 'qdq-onnxruntime-cpu', file: 'qdq-onnxruntime-cpu', extra: {} },
    { name: 'qdq-onnxruntime-cpu u8u8', file: 'qdq-onnxruntime-cpu', extra: U8U8 },
];

function parseArgs(argv) {
    const args = { dir: argv[0], threads: 2, rounds: 3, shapes: '32x128,1x128' };
    for (let i = 1; i < argv.length; i += 2) {
        const key = argv[i].replace(/^--/, '');
        if (!(key in args) || key === 'dir') throw new Error(`unknown option ${argv[i]}`);
        args[key] = key === 'shapes' ? argv[i + 1] : Number(argv[i + 1]);
    }
    if (!args.dir) throw new Error('usage: bench_onnx.js DIR [--threads N] [--rounds N] [--shapes BxT,...]');
    args.shapes = args.shapes.split(',').map((s) => s.split('x').map(Number));
    return args;
}

function feeds(B, T) {
    const n = B * T;
    const ids = new BigInt64Array(n);
    for (let i = 0; i < n; ++i) ids[i] = BigInt(1000 + ((i * 7919) % 29000));  // fixed, not random
    const ones = new BigInt64Array(n).fill(1n);
    const zeros = new BigInt64Array(n);
    return {
        input_ids: new ort.Tensor('int64', ids, [B, T]),
        attention_mask: new ort.Tensor('int64', ones, [B, T]),
        token_type_ids: new ort.Tensor('int64', zeros, [B, T]),
    };
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

async function main() {
    const args = parseArgs(process.argv.slice(2));
    const sessions = {};
    for (const m of MODELS) {
        sessions[m.name] = await ort.InferenceSession.create(path.join(args.dir, `${m.file}.onnx`), {
            executionProviders: ['cpu'],
            graphOptimizationLevel: 'all',
            intraOpNumThreads: args.threads,
            interOpNumThreads: 1,
            logSeverityLevel: 3,
            extra: m.extra,
        });
    }
    const best = {};
    const perRound = {};  // "BxT model" -> that round's median, one entry per round
    for (let round = 1; round <= args.rounds; ++round) {
        for (const [B, T] of args.shapes) {
            const input = feeds(B, T);
            const reps = Math.max(3, Math.round((3 * 4096) / (B * T)));  // about 12k tokens per model and round
            for (const { name: m } of MODELS) {
                await sessions[m].run(input);  // warm-up: first-run allocations and prepacking
                const times = [];
                for (let r = 0; r < reps; ++r) {
                    const t0 = process.hrtime.bigint();
                    await sessions[m].run(input);
                    times.push(Number(process.hrtime.bigint() - t0) / 1e6);
                }
                const key = `${B}x${T} ${m}`;
                best[key] = Math.min(best[key] ?? Infinity, median(times));
                (perRound[key] ??= []).push(median(times));
                console.error(`# round ${round} ${key}: median ${median(times).toFixed(1)} ms of ${reps}`);
            }
        }
    }
    console.log(`onnxruntime-node ${ort.env.versions.node}, ${args.threads} threads, best of ${args.rounds} per-round medians`);
    console.log('shape    model                         ms    time / fp32   per round: median (range)');
    for (const [B, T] of args.shapes) {
        for (const { name: m } of MODELS) {
            const key = `${B}x${T} ${m}`, ms = best[key], fp32 = best[`${B}x${T} fp32`];
            const ratios = perRound[key].map((t, r) => t / perRound[`${B}x${T} fp32`][r]).sort((a, b) => a - b);
            const spread = `${median(ratios).toFixed(2)} (${ratios[0].toFixed(2)}-${ratios[ratios.length - 1].toFixed(2)})`;
            console.log(`${`${B}x${T}`.padEnd(8)} ${m.padEnd(28)} ${ms.toFixed(1).padStart(8)}  ${(ms / fp32).toFixed(2)}          ${spread}`);
        }
    }
}

main().catch((e) => {
    console.error(`bench_onnx.js: ${e.message}`);
    process.exit(1);
});

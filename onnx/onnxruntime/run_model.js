// Runs an ONNX model with ONNX Runtime's CPU provider (onnxruntime-node, pinned in
// package-lock.json) on a list of feeds, one after another, and writes each feed's outputs and
// run time: the independent runtime that exported models are evaluated and checked in
// (onnx/onnx_runtime.h). Inputs are int64 tensors, outputs float32.
//
//   node onnx/onnxruntime/run_model.js MODEL FEEDS.json OUTPUTS.json [--threads N] [--warmup N]
//                                    [--optimized OPT.onnx] [--config KEY=VALUE]...
//                                    [--optimization LEVEL]
//
// FEEDS.json: [{"<input name>": {"dims": [2, 7], "data": [101, 2023, ...]}, ...}, ...]
// OUTPUTS.json (written): {"outputs": [one {"<output name>": {"dims", "offset"}} per feed],
//                          "milliseconds": [session.run's wall time per feed]}
// OUTPUTS.json.f32 (written): every output's float32 values, little-endian, one after another;
// "offset" counts floats from its start. Binary because a model's intermediate tensors, made
// graph outputs to compare them, are hundreds of megabytes as JSON text.
// --warmup runs the first feed N times, untimed, first: ORT sets up lazily on the first run.
// --optimized saves the graph ORT runs after its optimizations, to see which nodes it fused
// (QLinearMatMul, MatMulIntegerToFloat, ...). --config adds a session config entry
// (onnxruntime_session_options_config_keys.h; onnx/onnx_runtime.h adds session.x64quantprecision
// on CPUs without VNNI). --optimization sets the graph optimization level
// (disabled, basic, extended, all; default all): disabled runs every node as ONNX defines it.
'use strict';

const fs = require('fs');
const path = require('path');
const ort = require(path.join(__dirname, 'node_modules', 'onnxruntime-node'));

function parseArgs(argv) {
    const positional = [];
    const options = { optimized: undefined, threads: 1, warmup: 0, optimization: 'all', config: {} };
    for (let i = 0; i < argv.length; ++i) {
        if (argv[i] === '--optimized') options.optimized = argv[++i];
        else if (argv[i] === '--threads') options.threads = Number(argv[++i]);
        else if (argv[i] === '--warmup') options.warmup = Number(argv[++i]);
        else if (argv[i] === '--optimization') options.optimization = argv[++i];
        else if (argv[i] === '--config') {
            const [key, value] = argv[++i].split('=');
            options.config[key] = value;
        }
        else positional.push(argv[i]);
    }
    const levels = ['disabled', 'basic', 'extended', 'all'];
    if (positional.length !== 3 || !(options.threads >= 0) || !(options.warmup >= 0) || !levels.includes(options.optimization)) {
        console.error('usage: run_model.js MODEL FEEDS.json OUTPUTS.json [--threads N] [--warmup N] ' +
                      '[--optimized OPT.onnx] [--config KEY=VALUE]... [--optimization LEVEL]');
        process.exit(2);
    }
    return { model: positional[0], feeds: positional[1], outputs: positional[2], ...options };
}

function toOrt(feed) {
    const out = {};
    for (const [name, t] of Object.entries(feed)) {
        out[name] = new ort.Tensor('int64', BigInt64Array.from(t.data, BigInt), t.dims);
    }
    return out;
}

async function main() {
    const args = parseArgs(process.argv.slice(2));
    const session = await ort.InferenceSession.create(args.model, {
        executionProviders: ['cpu'],
        graphOptimizationLevel: args.optimization,
        ...(args.threads > 0 ? { intraOpNumThreads: args.threads } : {}),  // 0: ORT's default, a thread per core
        interOpNumThreads: 1,
        logSeverityLevel: 3,
        extra: args.config,  // the binding passes "a.b" keys through as session config entries
        ...(args.optimized ? { optimizedModelFilePath: args.optimized } : {}),
    });
    const feeds = JSON.parse(fs.readFileSync(args.feeds, 'utf8'));
    if (!Array.isArray(feeds) || feeds.length === 0) throw new Error(`${args.feeds}: expected a non-empty list of feeds`);
    for (let i = 0; i < args.warmup; ++i) await session.run(toOrt(feeds[0]));
    const outputs = [], milliseconds = [];
    const values = fs.openSync(`${args.outputs}.f32`, 'w');
    let offset = 0;
    for (const feed of feeds) {
        const inputs = toOrt(feed);
        const start = process.hrtime.bigint();
        const results = await session.run(inputs);
        milliseconds.push(Number(process.hrtime.bigint() - start) / 1e6);
        const out = {};
        for (const name of session.outputNames) {
            const t = results[name];
            if (t.type !== 'float32') throw new Error(`output ${name} is ${t.type}, expected float32`);
            out[name] = { dims: t.dims.map(Number), offset };
            fs.writeSync(values, new Uint8Array(t.data.buffer, t.data.byteOffset, t.data.byteLength));
            offset += t.data.length;
        }
        outputs.push(out);
    }
    fs.closeSync(values);
    fs.writeFileSync(args.outputs, JSON.stringify({ outputs, milliseconds }));
}

main().catch((e) => {
    console.error(`run_model.js: ${e.message}`);
    process.exit(1);
});

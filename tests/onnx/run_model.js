// Runs an ONNX model with ONNX Runtime's CPU provider (onnxruntime-node, pinned in package.json)
// and writes its outputs: the independent runtime that tests/test_onnx.cpp compares our exports
// with. Inputs are int64 tensors, outputs float32.
//
//   node tests/onnx/run_model.js MODEL INPUTS.json OUTPUTS.json [--optimized OPT.onnx] [--threads N]
//                                [--config KEY=VALUE]...
//
// INPUTS.json: {"<name>": {"dims": [2, 7], "data": [101, 2023, ...]}, ...}
// OUTPUTS.json (written): the same layout, one entry per model output, float values.
// --optimized saves the graph ORT runs after its optimizations (all levels, as by default), to
// see which nodes it fused (QLinearMatMul, MatMulIntegerToFloat, ...). --config adds a session
// config entry (onnxruntime_session_options_config_keys.h), e.g.
// session.qdq_matmulnbits_accuracy_level=1.
'use strict';

const fs = require('fs');
const ort = require('onnxruntime-node');

function parseArgs(argv) {
    const positional = [];
    const options = { optimized: undefined, threads: 1, config: {} };
    for (let i = 0; i < argv.length; ++i) {
        if (argv[i] === '--optimized') options.optimized = argv[++i];
        else if (argv[i] === '--threads') options.threads = Number(argv[++i]);
        else if (argv[i] === '--config') {
            const [key, value] = argv[++i].split('=');
            options.config[key] = value;
        }
        else positional.push(argv[i]);
    }
    if (positional.length !== 3 || !(options.threads >= 1)) {
        console.error('usage: run_model.js MODEL INPUTS.json OUTPUTS.json [--optimized OPT.onnx] [--threads N] ' +
                      '[--config KEY=VALUE]...');
        process.exit(2);
    }
    return { model: positional[0], inputs: positional[1], outputs: positional[2], ...options };
}

async function main() {
    const args = parseArgs(process.argv.slice(2));
    const session = await ort.InferenceSession.create(args.model, {
        executionProviders: ['cpu'],
        graphOptimizationLevel: 'all',
        intraOpNumThreads: args.threads,
        interOpNumThreads: 1,
        logSeverityLevel: 3,
        extra: args.config,  // the binding passes "a.b" keys through as session config entries
        ...(args.optimized ? { optimizedModelFilePath: args.optimized } : {}),
    });
    const feeds = {};
    for (const [name, t] of Object.entries(JSON.parse(fs.readFileSync(args.inputs, 'utf8')))) {
        feeds[name] = new ort.Tensor('int64', BigInt64Array.from(t.data, BigInt), t.dims);
    }
    const results = await session.run(feeds);
    const out = {};
    for (const name of session.outputNames) {
        const t = results[name];
        if (t.type !== 'float32') throw new Error(`output ${name} is ${t.type}, expected float32`);
        out[name] = { dims: t.dims.map(Number), data: Array.from(t.data) };
    }
    fs.writeFileSync(args.outputs, JSON.stringify(out));
}

main().catch((e) => {
    console.error(`run_model.js: ${e.message}`);
    process.exit(1);
});

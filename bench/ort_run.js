// Times one ONNX model in ONNX Runtime (CPU) for bench/ort_cpu.py.
//
//   node bench/ort_run.js MODEL.onnx --threads N [--warmup W] [--repeat R]
//        [--feed NAME=FILE.npy]... [--outputs DIR] [--profile PREFIX]
//
// Needs the npm package onnxruntime-node (1.30) on NODE_PATH (ort_cpu.py
// installs it). Feeds exactly the --feed tensors: the model's own inputs.
// Weights stay the model's initializers, so ORT folds and pre-packs them as it
// would in deployment (feeding them would override the initializers). Warms
// up, times R runs with process.hrtime, and prints one JSON document:
// {"ort_version", "threads", "times_s", "median_s", "min_s", "max_s", "fed"}.
// With --outputs, the last run's outputs are written as DIR/NAME.npy (NAME
// percent-encoded as `tapestry run --outputs` writes it) for comparison.
// With --profile, ORT's profiler records every node of every run (warm-up
// runs included) into PREFIX_<date>.json, a Chrome trace, whose path the
// document gives as "profile" (bench/ort_cpu.py --profile reads it).
//
// A run is the binding's synchronous InferenceSession.run (ORT's Run, the
// inputs wrapped and the outputs copied out through N-API), not the public
// `await session.run()`: that one adds a promise and a setImmediate turn of
// the event loop, about 45 us a run on the machine of docs/performance.md,
// which is most of the time of the smallest models and no part of ORT.
'use strict';

const fs = require('fs');
const ort = require('onnxruntime-node');
// The native session behind the public API (dist/binding of onnxruntime-node 1.30).
const { binding, initOrt } = require('onnxruntime-node/dist/binding');

function usage(message) {
  process.stderr.write(`ort_run.js: ${message}\n`);
  process.exit(2);
}

function parseArgs(argv) {
  const args = {
    model: null, threads: 1, warmup: 3, repeat: 10, feeds: [], outputs: null, profile: null,
  };
  for (let i = 0; i < argv.length; ++i) {
    const a = argv[i];
    const value = () => {
      if (i + 1 >= argv.length) usage(`${a} needs a value`);
      return argv[++i];
    };
    if (a === '--threads') args.threads = Number(value());
    else if (a === '--warmup') args.warmup = Number(value());
    else if (a === '--repeat') args.repeat = Number(value());
    else if (a === '--outputs') args.outputs = value();
    else if (a === '--profile') args.profile = value();
    else if (a === '--feed') {
      const v = value();
      const eq = v.lastIndexOf('=');
      if (eq <= 0) usage(`--feed ${v}: expected NAME=FILE.npy`);
      args.feeds.push([v.slice(0, eq), v.slice(eq + 1)]);
    } else if (a.startsWith('--')) usage(`unknown flag ${a}`);
    else if (args.model === null) args.model = a;
    else usage(`one model only (got ${args.model} and ${a})`);
  }
  if (args.model === null) usage('no model given');
  for (const [flag, v, least] of [['--threads', args.threads, 1], ['--warmup', args.warmup, 0],
                                  ['--repeat', args.repeat, 1]]) {
    if (!Number.isInteger(v) || v < least) usage(`${flag}: expected an integer >= ${least}`);
  }
  return args;
}

// NumPy dtype descrs (little-endian, as np.save writes them) -> ORT tensor types.
const DTYPES = {
  '<f4': ['float32', Float32Array],
  '<f8': ['float64', Float64Array],
  '<i4': ['int32', Int32Array],
  '<i8': ['int64', BigInt64Array],
  '|u1': ['uint8', Uint8Array],
  '|i1': ['int8', Int8Array],
  '|b1': ['bool', Uint8Array],
};

// Reads a C-order .npy file (format 1.0, 2.0 or 3.0) into an ort.Tensor.
function readNpy(path) {
  const bytes = fs.readFileSync(path);
  if (bytes.length < 10 || bytes.toString('latin1', 0, 6) !== '\x93NUMPY') {
    throw new Error(`${path}: not a .npy file`);
  }
  const major = bytes[6];
  const headerLength = major === 1 ? bytes.readUInt16LE(8) : bytes.readUInt32LE(8);
  const start = (major === 1 ? 10 : 12) + headerLength;
  const header = bytes.toString('latin1', major === 1 ? 10 : 12, start);
  const descr = /'descr':\s*'([^']+)'/.exec(header);
  const fortran = /'fortran_order':\s*(True|False)/.exec(header);
  const shape = /'shape':\s*\(([^)]*)\)/.exec(header);
  if (!descr || !fortran || !shape) throw new Error(`${path}: cannot read the .npy header`);
  if (fortran[1] === 'True') throw new Error(`${path}: Fortran order is not supported`);
  const type = DTYPES[descr[1]];
  if (!type) throw new Error(`${path}: dtype ${descr[1]} is not supported`);
  const dims = shape[1].split(',').map((s) => s.trim()).filter((s) => s !== '').map(Number);
  const count = dims.reduce((a, b) => a * b, 1);
  const [ortType, ArrayType] = type;
  const size = count * ArrayType.BYTES_PER_ELEMENT;
  if (bytes.length - start !== size) {
    throw new Error(`${path}: ${bytes.length - start} data bytes, expected ${size}`);
  }
  // A copy: the file buffer's offset need not be aligned for the typed array.
  const data = new ArrayType(count);
  new Uint8Array(data.buffer).set(bytes.subarray(start, start + size));
  return new ort.Tensor(ortType, ortType === 'bool' ? new Uint8Array(data.buffer) : data, dims);
}

// A tensor name as a file name: every byte but [A-Za-z0-9._-] as %XX
// (docs/reference/formats.md).
function npyName(name) {
  let out = '';
  for (const b of Buffer.from(name, 'utf8')) {
    const c = String.fromCharCode(b);
    out += /[A-Za-z0-9._-]/.test(c) ? c : '%' + b.toString(16).toUpperCase().padStart(2, '0');
  }
  return out + '.npy';
}

// Writes an output ({type, dims, data}) as a format 1.0 .npy file.
function writeNpy(path, tensor) {
  const descr = Object.keys(DTYPES).find((d) => DTYPES[d][0] === tensor.type);
  if (descr === undefined) throw new Error(`output dtype ${tensor.type} cannot be written`);
  const dims = tensor.dims.map(Number);
  const shape = dims.length === 1 ? `(${dims[0]},)` : `(${dims.join(', ')})`;
  let header = `{'descr': '${descr}', 'fortran_order': False, 'shape': ${shape}, }`;
  header += ' '.repeat(63 - ((10 + header.length) % 64)) + '\n'; // data 64-byte aligned
  const preamble = Buffer.alloc(10);
  preamble.write('\x93NUMPY', 0, 'latin1');
  preamble[6] = 1;
  preamble[7] = 0;
  preamble.writeUInt16LE(header.length, 8);
  const data = Buffer.from(tensor.data.buffer, tensor.data.byteOffset, tensor.data.byteLength);
  fs.writeFileSync(path, Buffer.concat([preamble, Buffer.from(header, 'latin1'), data]));
}

function median(sorted) {
  const n = sorted.length;
  return n % 2 === 1 ? sorted[(n - 1) / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2;
}

function main() {
  const args = parseArgs(process.argv.slice(2));
  initOrt();
  const session = new binding.InferenceSession();
  const options = {
    intraOpNumThreads: args.threads,
    interOpNumThreads: 1,
    executionMode: 'sequential',
    graphOptimizationLevel: 'all',
  };
  if (args.profile !== null) {
    options.enableProfiling = true;
    options.profileFilePrefix = args.profile;
  }
  session.loadModel(args.model, options);
  const inputs = session.inputMetadata.map((m) => m.name);
  const feeds = {};
  for (const [name, file] of args.feeds) {
    if (!inputs.includes(name)) {
      throw new Error(`${args.model} has no input ${name} (inputs: ${inputs.join(', ')})`);
    }
    feeds[name] = readNpy(file);
  }
  // The session's inputs are those without an initializer: each needs a feed.
  const unfed = inputs.filter((name) => !(name in feeds));
  if (unfed.length > 0) throw new Error(`${args.model}: no --feed for ${unfed.join(', ')}`);
  const fetches = {};
  for (const m of session.outputMetadata) fetches[m.name] = null;
  for (let i = 0; i < args.warmup; ++i) session.run(feeds, fetches, {});
  const times = [];
  let results = null;
  for (let i = 0; i < args.repeat; ++i) {
    const begin = process.hrtime.bigint();
    results = session.run(feeds, fetches, {});
    times.push(Number(process.hrtime.bigint() - begin) / 1e9);
  }
  if (args.outputs !== null) {
    fs.mkdirSync(args.outputs, { recursive: true });
    for (const [name, tensor] of Object.entries(results)) {
      writeNpy(`${args.outputs}/${npyName(name)}`, tensor);
    }
  }
  let profile = null;
  if (args.profile !== null) {
    session.endProfiling(); // writes PREFIX_<date>.json
    const path = require('path');
    const dir = path.dirname(path.resolve(args.profile));
    const base = path.basename(args.profile) + '_';
    const written = fs.readdirSync(dir).filter((f) => f.startsWith(base) && f.endsWith('.json'));
    if (written.length !== 1) throw new Error(`--profile: expected one ${base}*.json in ${dir}`);
    profile = path.join(dir, written[0]);
  }
  const sorted = [...times].sort((a, b) => a - b);
  const version = require('onnxruntime-node/package.json').version;
  process.stdout.write(JSON.stringify({
    ort_version: version,
    threads: args.threads,
    times_s: times,
    median_s: median(sorted),
    min_s: sorted[0],
    max_s: sorted[sorted.length - 1],
    fed: Object.keys(feeds),
    profile,
  }) + '\n');
}

try {
  main();
} catch (e) {
  process.stderr.write(`ort_run.js: ${e && e.message ? e.message : e}\n`);
  process.exit(1);
}

// onnx_predict.js: runs a model written by `gradshare export` in ONNX Runtime (onnxruntime-node,
// found through NODE_PATH) on the Fashion-MNIST test set and compares it with `gradshare eval`.
//
//   node onnx_predict.js NAME MODEL.onnx METADATA.json DATA_DIR EVAL_PREDICTIONS EVAL_ACCURACY
//
// The raw pixel bytes are normalised as the model's metadata_props say (read by check_onnx.py
// into METADATA.json): x' = (x - normalize_offset) * normalize_scale in float32, and shaped as
// [batch, input_shape]. EVAL_PREDICTIONS is `gradshare eval --predictions` (one class per line),
// EVAL_ACCURACY the percentage eval printed. Fails (exit 1) unless at least 99.9 % of the
// predictions agree, the accuracies differ by at most 0.05 percentage points, the predictions
// file reproduces eval's printed accuracy, and the model learnt something (accuracy >= 50 %).
'use strict';

const fs = require('fs');
const zlib = require('zlib');
const ort = require('onnxruntime-node');

const MIN_AGREEMENT = 99.9;  // percent of test samples
const MAX_ACCURACY_GAP = 0.05;  // percentage points
const MIN_ACCURACY = 50;  // percent: chance is 10

function fail(message) {
  console.log(`FAIL: ${message}`);
  process.exit(1);
}

// An IDX file (gzip-compressed as Debian ships it, or plain) of unsigned bytes.
function readIdx(path) {
  const file = fs.existsSync(`${path}.gz`) ? zlib.gunzipSync(fs.readFileSync(`${path}.gz`))
                                           : fs.readFileSync(path);
  if (file[2] !== 0x08) fail(`${path}: not an unsigned-byte IDX file`);
  const dims = [];
  for (let d = 0; d < file[3]; ++d) dims.push(file.readUInt32BE(4 + 4 * d));
  return {dims, data: file.subarray(4 + 4 * dims.length)};
}

async function main() {
  const [name, modelPath, metadataPath, dataDir, evalPath, evalAccuracyText] = process.argv.slice(2);
  const metadata = JSON.parse(fs.readFileSync(metadataPath, 'utf8'));
  const offset = Number(metadata.normalize_offset);
  const scale = Number(metadata.normalize_scale);
  const inputShape = JSON.parse(metadata.input_shape);
  const classes = Number(metadata.num_classes);
  const sampleSize = inputShape.reduce((a, b) => a * b, 1);

  const images = readIdx(`${dataDir}/t10k-images-idx3-ubyte`);
  const labels = readIdx(`${dataDir}/t10k-labels-idx1-ubyte`).data;
  const n = labels.length;
  if (images.dims[1] * images.dims[2] !== sampleSize) fail(`input_shape ${metadata.input_shape} does not fit the images`);
  const evalPredictions = fs.readFileSync(evalPath, 'utf8').trim().split('\n').map(Number);
  if (evalPredictions.length !== n) fail(`${evalPath}: ${evalPredictions.length} predictions for ${n} test samples`);

  const session = await ort.InferenceSession.create(modelPath);
  const batch = 500;
  const onnxPredictions = new Int32Array(n);
  for (let first = 0; first < n; first += batch) {
    const count = Math.min(batch, n - first);
    const input = new Float32Array(count * sampleSize);  // stores round to float32
    for (let i = 0; i < input.length; ++i) {
      input[i] = Math.fround(images.data[first * sampleSize + i] - offset) * scale;
    }
    const feeds = {input: new ort.Tensor('float32', input, [count, ...inputShape])};
    const probabilities = (await session.run(feeds)).probabilities.data;
    for (let s = 0; s < count; ++s) {
      let best = 0;  // the first maximum, as gradshare's arg-max
      for (let c = 1; c < classes; ++c) {
        if (probabilities[s * classes + c] > probabilities[s * classes + best]) best = c;
      }
      onnxPredictions[first + s] = best;
    }
  }

  let agree = 0, onnxCorrect = 0, evalCorrect = 0;
  for (let i = 0; i < n; ++i) {
    agree += onnxPredictions[i] === evalPredictions[i];
    onnxCorrect += onnxPredictions[i] === labels[i];
    evalCorrect += evalPredictions[i] === labels[i];
  }
  const agreement = 100 * agree / n;
  const onnxAccuracy = 100 * onnxCorrect / n;
  const evalAccuracy = 100 * evalCorrect / n;
  const gap = Math.abs(onnxAccuracy - evalAccuracy);
  console.log(`${name}: ${n} test samples, predictions agree on ${agreement.toFixed(2)} % ` +
              `(${n - agree} differ); accuracy ONNX Runtime ${onnxAccuracy.toFixed(2)} %, ` +
              `gradshare eval ${evalAccuracy.toFixed(2)} % (printed ${evalAccuracyText} %), ` +
              `difference ${gap.toFixed(3)} pp`);
  if (Math.abs(evalAccuracy - Number(evalAccuracyText)) > 0.006) {
    fail(`${evalPath} gives ${evalAccuracy} %, eval printed ${evalAccuracyText} %`);
  }
  if (evalAccuracy < MIN_ACCURACY) fail(`eval accuracy ${evalAccuracy} %: the model did not train`);
  if (agreement < MIN_AGREEMENT) fail(`agreement ${agreement} % < ${MIN_AGREEMENT} %`);
  if (gap > MAX_ACCURACY_GAP) fail(`accuracy difference ${gap} pp > ${MAX_ACCURACY_GAP} pp`);
}

main().catch((error) => fail(error.stack || String(error)));

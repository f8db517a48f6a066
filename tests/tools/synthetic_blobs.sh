# synthetic_blobs.sh: sourced by the training tests that use synthetic data.
#   synthetic_blobs SOURCE_DIR OUT TRAIN TEST FEATURES CLASSES HIDDEN
# writes OUT/data/train.h5 and test.h5 (Gaussian blobs from scripts/make-example-hdf5, written
# block by block, contiguous) and OUT/config.yaml: a FEATURES-HIDDEN-CLASSES ReLU MLP trained
# one epoch by Adam with beta1 0; a test gives the rest (learning rate, batch size, ...) as
# overrides. Exits 77 (skip) where /usr/bin/python3 has no h5py.
synthetic_blobs() {
  local source_dir=$1 out=$2 train=$3 test=$4 features=$5 classes=$6 hidden=$7
  /usr/bin/python3 -c 'import h5py' 2>/dev/null ||
    { echo "SKIP: needs /usr/bin/python3 with h5py (Debian: python3-h5py)"; exit 77; }
  "$source_dir/scripts/make-example-hdf5" --source synthetic --out-dir "$out/data" \
    --train "$train" --test "$test" --features "$features" --classes "$classes" >/dev/null 2>&1
  cat >"$out/config.yaml" <<YAML
run: {name: synthetic, seed: 1}
data:
  dataset: custom
  format: hdf5
  train_file: $out/data/train.h5
  test_file: $out/data/test.h5
  normalize: standardize
model:
  input_shape: [$features]
  num_classes: $classes
  layers:
    - {type: dense, units: $hidden, activation: relu}
    - {type: dense, units: $classes}
optimizer: {type: adam, beta1: 0.0}
training: {epochs: 1}
YAML
}

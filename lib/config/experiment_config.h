// experiment_config.h: the typed experiment configuration and the one schema table it comes from.
//
// Every key lives in exactly one line of a GS_<SECTION>_KEYS list below:
//   X(section, key, C++ type, default, constraint, help)
// That line generates the struct member, the parser entry, the type and range checks,
// `gradshare config --keys` and docs/config-reference.md. Adding a key is that one line.
// Constraints: GS_ANY, GS_RANGE(min, max) (inclusive, for numbers and list elements),
// GS_CHOICES("a", "b", ...) (for strings).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace gradshare::config {

// One entry of model.layers. Which fields matter depends on `type`; `line` is the YAML line
// the entry came from (0 when built in code) so shape errors can name it.
struct LayerSpec {
  std::string type;                // dense | conv2d | maxpool2d | flatten | dropout
  std::int64_t units = 0;          // dense
  std::int64_t filters = 0;        // conv2d
  std::int64_t kernel = 3;         // conv2d
  std::int64_t stride = 1;         // conv2d; maxpool2d (0 = same as pool)
  std::int64_t padding = 0;        // conv2d
  std::int64_t pool = 2;           // maxpool2d
  double rate = 0.5;               // dropout
  std::string activation = "none"; // dense, conv2d: none|relu|leaky_relu|elu|tanh|sigmoid
  double alpha = 0.01;             // leaky_relu slope / elu alpha
  int line = 0;
};

// One entry of fault_tolerance.inject.
struct FaultInjection {
  std::int64_t rank = 1;
  std::int64_t at_step = 0;
  // A start-up point instead of a step (config|data|run_directory|hosts|setup), or none.
  std::string at_startup = "none";
  std::string kind = "sigkill";  // sigkill | exit | hang | stall
  int line = 0;
};

#define GS_RUN_KEYS(X)                                                                         \
  X(run, name, std::string, "experiment", GS_ANY,                                              \
    "Run name; the run directory is <output_dir>/<name>-<YYYYmmdd-HHMMSS>")                   \
  X(run, output_dir, std::string, "runs", GS_ANY, "Parent folder of run directories")          \
  X(run, dir, std::string, "", GS_ANY,                                                         \
    "Explicit run directory (empty: a new timestamped one); point it at an old run to resume") \
  X(run, seed, std::int64_t, 42, GS_RANGE(0, 9.0e18), "Seed of every random stream of the run")

#define GS_DATA_KEYS(X)                                                                        \
  X(data, dataset, std::string, "fashion-mnist", GS_CHOICES("fashion-mnist", "custom"),        \
    "fashion-mnist reads Debian's dataset-fashion-mnist; custom uses the file keys below")     \
  X(data, format, std::string, "idx", GS_CHOICES("idx", "hdf5"), "File format for custom data")\
  X(data, dir, std::string, "/usr/share/datasets/fashion-mnist", GS_ANY,                       \
    "Folder of the Fashion-MNIST IDX files")                                                   \
  X(data, train_images, std::string, "", GS_ANY, "IDX images file (custom, idx)")               \
  X(data, train_labels, std::string, "", GS_ANY, "IDX labels file (custom, idx)")               \
  X(data, test_images, std::string, "", GS_ANY, "IDX test images file (custom, idx)")           \
  X(data, test_labels, std::string, "", GS_ANY, "IDX test labels file (custom, idx)")           \
  X(data, train_file, std::string, "", GS_ANY, "HDF5 training file (custom, hdf5)")            \
  X(data, test_file, std::string, "", GS_ANY, "HDF5 test file (custom, hdf5)")                 \
  X(data, features_dataset, std::string, "features", GS_ANY, "HDF5 dataset of the features")   \
  X(data, labels_dataset, std::string, "labels", GS_ANY, "HDF5 dataset of the labels")          \
  X(data, normalize, std::string, "scale", GS_CHOICES("scale", "standardize", "none"),         \
    "scale: pixels to [0,1]; standardize: zero mean, unit variance from the training set")     \
  X(data, validation_fraction, double, 0.0, GS_RANGE(0.0, 0.5),                                \
    "Fraction of the training set held out for validation")                                   \
  X(data, train_subset, std::int64_t, 0, GS_RANGE(0, 1.0e9),                                   \
    "Use only the first N training samples (0: all); for tests and quick runs")               \
  X(data, test_subset, std::int64_t, 0, GS_RANGE(0, 1.0e9), "Use only the first N test samples") \
  X(data, shuffle, bool, true, GS_ANY, "Shuffle the training set every epoch (from run.seed)")  \
  X(data, partition_batches, std::int64_t, 20, GS_RANGE(1, 1.0e6),                             \
    "Minibatches per data partition, the unit of work the master hands out")                   \
  X(data, read, std::string, "auto", GS_CHOICES("auto", "memory", "partitions"),               \
    "memory: every rank loads the training set; partitions: a rank reads the samples it trains "\
    "on from the file (plain IDX or contiguous HDF5); auto: partitions when the training "      \
    "features take more than 1 GiB as floats and the file allows it")                           \
  X(data, prefetch_partitions, std::int64_t, 1, GS_RANGE(0, 64),                               \
    "Partitions reserved for a worker beyond the one it trains, read ahead in the background " \
    "with data.read partitions (gradient sharing, Downpour, local); 0: only the one it trains")

#define GS_MODEL_KEYS(X)                                                                       \
  X(model, input_shape, std::vector<std::int64_t>, (std::vector<std::int64_t>{1, 28, 28}),     \
    GS_RANGE(1, 1.0e6), "Shape of one sample: [channels, height, width] or [features]")       \
  X(model, num_classes, std::int64_t, 10, GS_RANGE(2, 1.0e6), "Number of output classes")       \
  X(model, layers, std::vector<LayerSpec>, {}, GS_ANY,                                         \
    "List of layers: {type: dense|conv2d|maxpool2d|flatten|dropout, ...}; see the README")     \
  X(model, torchscript, std::string, "", GS_ANY,                                               \
    "A PyTorch module saved with torch.jit.save: trained instead of model.layers; forward(x) " \
    "takes [batch] + input_shape and returns logits [batch, num_classes]")                    \
  X(model, refresh_batches, std::int64_t, 20, GS_RANGE(0, 1.0e6),                            \
    "model.torchscript: a master sets the module's running statistics (batch norm) to their "  \
    "average over this many training minibatches before it evaluates or saves; 0: never")      \
  X(model, init, std::string, "auto", GS_CHOICES("auto", "he", "xavier"),                      \
    "Weight initialisation; auto: He for ReLU-family layers, Xavier otherwise")               \
  X(model, l2, double, 0.0, GS_RANGE(0.0, 1.0), "L2 weight decay coefficient (added to the gradient)")

#define GS_OPTIMIZER_KEYS(X)                                                                     \
  X(optimizer, type, std::string, "adam",                                                        \
    GS_CHOICES("sgd", "momentum", "nesterov", "adam", "adamw", "rmsprop", "adagrad"),            \
    "Updater turning a gradient into an update")                                                 \
  X(optimizer, learning_rate, double, 1e-3, GS_RANGE(0.0, 100.0), "Base learning rate")          \
  X(optimizer, momentum, double, 0.9, GS_RANGE(0.0, 0.9999), "Momentum (momentum, nesterov)")    \
  X(optimizer, beta1, double, 0.9, GS_RANGE(0.0, 0.9999), "Adam/AdamW first-moment decay")       \
  X(optimizer, beta2, double, 0.999, GS_RANGE(0.0, 0.999999), "Adam/AdamW second-moment decay")  \
  X(optimizer, epsilon, double, 1e-8, GS_RANGE(1e-12, 1.0),                                      \
    "Denominator guard (adaptive updaters)")                                                     \
  X(optimizer, rms_decay, double, 0.95, GS_RANGE(0.0, 0.9999), "RMSProp squared-gradient decay") \
  X(optimizer, weight_decay, double, 0.0, GS_RANGE(0.0, 1.0), "AdamW decoupled weight decay")    \
  X(optimizer, schedule, std::string, "constant",                                                \
    GS_CHOICES("constant", "step", "exponential", "cosine"), "Learning-rate schedule")           \
  X(optimizer, decay_rate, double, 0.5, GS_RANGE(0.0, 1.0),                                      \
    "step: factor every decay_epochs; exponential: factor per epoch")                            \
  X(optimizer, decay_epochs, double, 5.0, GS_RANGE(0.0, 1.0e6), "step: epochs between decays")   \
  X(optimizer, min_learning_rate, double, 0.0, GS_RANGE(0.0, 100.0),                             \
    "cosine: final learning rate")                                                               \
  X(optimizer, warmup_steps, std::int64_t, 0, GS_RANGE(0, 1.0e9), "Linear warm-up steps from 0") \
  X(optimizer, clip_norm, double, 0.0, GS_RANGE(0.0, 1e9),                                       \
    "Gradient clipping: a gradient whose L2 norm exceeds this is scaled down to it before the "  \
    "optimizer step (0: off). Under gradient sharing (encoding.combine: sum) and Downpour with " \
    "pushes summed (downpour.combine: sum, or auto under SGD), whose workers' updates add up, "  \
    "each worker clips at clip_norm / sqrt(workers), so "                                        \
    "that their sum stays near clip_norm (local gradient clipping, Deep Gradient Compression)")

#define GS_TRAINING_KEYS(X)                                                                    \
  X(training, strategy, std::string, "gradient_sharing",                                       \
    GS_CHOICES("gradient_sharing", "parameter_averaging", "downpour", "allreduce", "local"),   \
    "Distributed training strategy; without mpirun the run is always local")                  \
  X(training, epochs, std::int64_t, 10, GS_RANGE(1, 1.0e6), "Passes over the training set")     \
  X(training, batch_size, std::int64_t, 64, GS_RANGE(1, 1.0e6), "Minibatch size per worker")    \
  X(training, averaging_frequency, std::int64_t, 5, GS_RANGE(1, 1.0e6),                        \
    "parameter_averaging: minibatches between averaging rounds")                              \
  X(training, save_updater, bool, true, GS_ANY, "parameter_averaging: average optimizer state too") \
  X(training, divergence_factor, double, 10.0, GS_RANGE(0.0, 1.0e12),                          \
    "Divergence guard: a worker whose smoothed training loss (about 10 steps) exceeds this "   \
    "factor times its running minimum, never taken above ln(model.num_classes) (the loss of "  \
    "guessing), or turns NaN/Inf stops the run; 0: only non-finite losses")                   \
  X(training, on_divergence, std::string, "stop", GS_CHOICES("stop", "rollback"),              \
    "stop: end the run (exit code 3) keeping the newest good checkpoint; rollback: restart "   \
    "from it with the learning rate scaled by rollback_lr_factor, at most max_rollbacks times") \
  X(training, rollback_lr_factor, double, 0.1, GS_RANGE(1e-6, 1.0),                            \
    "rollback: learning-rate factor applied at each rollback")                                \
  X(training, max_rollbacks, std::int64_t, 5, GS_RANGE(1, 100), "rollback: tries before stopping") \
  X(training, verify_averaging, bool, false, GS_ANY,                                           \
    "parameter_averaging: after every round check that all workers hold bit-identical "       \
    "parameters and optimizer state (a fingerprint all-reduce; for tests)")

#define GS_EARLY_STOPPING_KEYS(X)                                                              \
  X(early_stopping, metric, std::string, "none", GS_CHOICES("none", "accuracy", "loss"),       \
    "Stop when this epoch-end figure stops improving: on the validation split "                \
    "(data.validation_fraction > 0), else the test set; best.h5 keeps the best model (none: off)") \
  X(early_stopping, patience, std::int64_t, 3, GS_RANGE(1, 1.0e6),                             \
    "Epochs without an improvement before the run stops")                                      \
  X(early_stopping, min_delta, double, 0.0, GS_RANGE(0.0, 1.0e6),                              \
    "Smallest change that counts as an improvement (accuracy as a fraction: 0.001 = 0.1 pp)")

#define GS_DOWNPOUR_KEYS(X)                                                                       \
  X(downpour, n_push, std::int64_t, 1, GS_RANGE(1, 1.0e6),                                        \
    "Steps a worker accumulates its updates before pushing them to the parameter servers; "       \
    "a push also waits while the previous one is unapplied or a pull is in flight, the "          \
    "updates accumulating meanwhile. 4 workers, Adam, 5 seeds: 1 against 5, MLP 89.50 % "         \
    "against 89.25 %, the ResNet example 78.17 % against 74.90 %")                                \
  X(downpour, n_pull, std::int64_t, 1, GS_RANGE(1, 1.0e6),                                        \
    "Steps between a worker's pulls of fresh parameters from the servers; a pull waits until "    \
    "the server has applied the worker's last push")                                              \
  X(downpour, servers, std::int64_t, 1, GS_RANGE(1, 4096),                                        \
    "Parameter-server ranks 0..K-1, each holding a contiguous shard of the parameters (rank 0 "   \
    "is also the master); workers are the remaining ranks")                                       \
  X(downpour, server_optimizer, std::string, "sgd", GS_CHOICES("sgd", "adagrad"),                 \
    "How a server applies a pushed update d, with lr = server_learning_rate times the push's "    \
    "weight (combine, stale_pushes): sgd p -= lr d; adagrad s += d^2, "                           \
    "p -= lr d / (sqrt(s) + optimizer.epsilon) (DistBelief)")                                     \
  X(downpour, server_learning_rate, double, 1.0, GS_RANGE(0.0, 100.0),                            \
    "Learning rate of the server optimizer")                                                      \
  X(downpour, combine, std::string, "auto", GS_CHOICES("auto", "sum", "sqrt", "mean"),            \
    "How a server weighs the workers' pushes. sum: each in full, as in DistBelief; sqrt: each "   \
    "divided by the square root of the workers; mean: by the workers, like one averaged step; "   \
    "auto: sqrt under an adaptive optimizer (adam, adamw, rmsprop, adagrad) and sum under "       \
    "sgd, momentum, nesterov (the scaling rules: W workers' steps count as one on a W-times "     \
    "larger batch, at W times SGD's learning rate but sqrt(W) times Adam's, Malladi et al. "      \
    "2022). Adam, 4 workers, one host, 5 seeds, sqrt against sum: transformer example 69.12 "     \
    "against 67.29 %, ResNet 78.82 against 78.17 %, LSTM 77.01 against 78.25 %, MLP 89.35 "       \
    "against 89.50 %, CNN 89.14 against 89.50 % (allreduce 70.37, 78.02, 77.20, 89.34, 88.93 %)") \
  X(downpour, stale_pushes, std::string, "scale", GS_CHOICES("scale", "full"),                    \
    "Under combine sum or sqrt, how a server weighs a push that is `age` server versions old "    \
    "(other workers' pushes applied since its worker pulled): scale: at most 1 / age, never "     \
    "below 1 / the number of workers (staleness-aware SGD, Zhang et al. 2016; a stale push "      \
    "moves the model as under combine: mean); full: as combine says whatever its age. 4 nodes "   \
    "at 100 Mbit/s, 2 epochs, sum: scale 86.1-86.3 %, full 81.5-84.1 %")                          \
  X(downpour, momentum, std::string, "compensate", GS_CHOICES("compensate", "as_set"),            \
    "compensate: workers step with the optimizer's momentum lowered by the momentum W "           \
    "asynchronous workers imply, 1 - 1/W (Mitliagkas et al. 2016), to no less than 0: Adam's "    \
    "beta1, and SGD's momentum with the learning rate raised to keep lr / (1 - momentum). MLP, "  \
    "4 workers, 5 seeds: Adam beta1 0.9 89.34 % compensated, 87.36 % as set (allreduce "          \
    "89.28 %); SGD momentum 0.9, lr 0.01: 88.47 % against 86.91 % (allreduce at 0.04: 89.00 %); " \
    "as_set: as configured")                                                                      \
  X(downpour, encode, bool, false, GS_ANY,                                                        \
    "Compress pushes with the threshold codec (encoding.* keys, the sparsity band n_push "        \
    "times wider: a push carries n_push steps; what is not sent stays in the worker's "           \
    "residual and goes out with a later push)")

#define GS_ENCODING_KEYS(X)                                                                        \
  X(encoding, threshold_algorithm, std::string, "adaptive",                                        \
    GS_CHOICES("adaptive", "fixed", "target_sparsity"), "How the threshold tau evolves")           \
  X(encoding, initial_threshold, double, 0.0, GS_RANGE(0.0, 1e3),                                  \
    "tau at the first step; 0: chosen at the first step so that the sparsity band's middle "       \
    "fires (sqrt(min_sparsity max_sparsity); target_sparsity with that algorithm)")                \
  X(encoding, min_sparsity, double, 1.75e-4, GS_RANGE(0.0, 1.0),                                   \
    "adaptive: below this sparsity tau shrinks")                                                   \
  X(encoding, max_sparsity, double, 7e-4, GS_RANGE(0.0, 1.0),                                      \
    "adaptive: above this tau grows. 1.75e-4..7e-4 with the warm-up: MLP, 4 workers, 15 "          \
    "epochs, 5 seeds: 89.59 % at 281 B per worker step (dense/3350); the band before, "            \
    "5e-4..2e-3 without warm-up: 89.65 % at 490 B")                                                \
  X(encoding, warmup_epochs, double, 1.0, GS_RANGE(0.0, 1e6),                                      \
    "Sparsity warm-up (Deep Gradient Compression, Lin et al. 2018): over the first N epochs "      \
    "the sparsity band, the message cap and the first calibration start warmup_density times "     \
    "denser and shrink geometrically to the configured band (0: off). Without it the band "        \
    "above leaves 2-epoch runs on 12000 samples at 69-70 %, with it 81-83 %")                      \
  X(encoding, warmup_density, double, 8.0, GS_RANGE(1.0, 1e6),                                     \
    "How many times denser the band starts under the sparsity warm-up")                            \
  X(encoding, min_quanta, std::int64_t, 40, GS_RANGE(0, 1.0e9),                                    \
    "A small model's band: where min_sparsity (target_sparsity) asks for fewer quanta per "        \
    "message than this, the band is made that much denser (as many as the shipped MLP's 41). "     \
    "The 82,186-parameter LSTM example, 4 workers, 2 epochs of 12000 samples, 3 seeds: "           \
    "40.1-51.5 % on the band as configured, 70.1-70.4 % with 40; 0: off")                          \
  X(encoding, decay_rate, double, 0.965936, GS_RANGE(0.5, 0.999999),                               \
    "adaptive: tau *= decay_rate to shrink, /= to grow")                                           \
  X(encoding, target_sparsity, double, 1e-3, GS_RANGE(1e-9, 1.0), "target_sparsity: the target")   \
  X(encoding, min_threshold, double, 1e-9, GS_RANGE(0.0, 1e3), "Lower bound of tau")               \
  X(encoding, max_threshold, double, 1.0, GS_RANGE(0.0, 1e6), "Upper bound of tau")                \
  X(encoding, max_message_sparsity, double, 0.0, GS_RANGE(0.0, 1.0),                               \
    "Most full quanta one message carries, as a fraction of the parameters. A step that "          \
    "selects more (a backlog after back-pressure, tau still too low) sends only the largest "      \
    "residual entries at a tau raised for that message and keeps the rest. 0: twice the "          \
    "sparsity band's top (adaptive: 2 max_sparsity, target_sparsity: 2 target; fixed: no cap); "   \
    "1: no cap")                                                                                   \
  X(encoding, format, std::string, "auto", GS_CHOICES("auto", "sparse", "bitmap", "compressed"),   \
    "Message encoding; auto sends whichever is smallest")                                          \
  X(encoding, residual, std::string, "clip", GS_CHOICES("clip", "none"),                           \
    "Residual post-processor")                                                                     \
  X(encoding, clip_every_steps, std::int64_t, 5, GS_RANGE(1, 1.0e9), "clip: every N steps")        \
  X(encoding, clip_multiplier, double, 5.0, GS_RANGE(1.0, 1e6), "clip: clamp residual to +-k*tau") \
  X(encoding, shake_up_every_steps, std::int64_t, 0, GS_RANGE(0, 1.0e9),                           \
    "Every N steps also send a shake-up message at a smaller threshold (0: off)")                  \
  X(encoding, shake_up_divisor, double, 3.0, GS_RANGE(1.0, 1e6),                                   \
    "Shake-up threshold is tau / divisor")                                                         \
  X(encoding, combine, std::string, "sum", GS_CHOICES("mean", "sum"),                              \
    "sum: updates add up (Strom 2015, Deeplearning4j; with the staleness bound the better of "     \
    "the two for the shipped MLP and CNN); mean: each worker shares update / workers, so "         \
    "together they move the model like one synchronous averaged step")                             \
  X(encoding, momentum, std::string, "compensate", GS_CHOICES("compensate", "as_set", "mask"),     \
    "compensate: workers step with the optimizer's momentum lowered by the momentum W "            \
    "asynchronous workers imply, as downpour.momentum (Adam's beta1; SGD's momentum with lr / "    \
    "(1 - momentum) kept). Adam beta1 0.9, 4 workers, 3 seeds: ResNet 78.42 % compensated, "       \
    "75.84 % as set (allreduce 77.97 %), transformer 70.69 % against 66.97 % (69.65 %); MLP, "     \
    "SGD momentum 0.9, 5 seeds: 88.83 % against 88.50 % (allreduce at 0.04: 89.00 %); "            \
    "as_set: as configured; mask: as configured, and the momentum of every element a message "     \
    "carries is cleared (DGC's momentum factor masking)")                                          \
  X(encoding, max_staleness, std::int64_t, 2, GS_RANGE(0, 1.0e9),                                  \
    "Stale-synchronous bound: a worker does not start step s+1 while a training peer's updates "   \
    "up to step s - max_staleness are not applied on its replica (0: no bound). 2 holds on "       \
    "every network of the cluster bench (8 ended 1.5 points lower over RMA on TCP, none "          \
    "diverged)")                                                                                   \
  X(encoding, local_view, bool, true, GS_ANY,                                                      \
    "A worker computes its gradient at the shared model less its own residual, as if its own "     \
    "updates had been applied in full (the shared model, what messages move, is unchanged); "      \
    "false: at the shared model, as Strom and Deeplearning4j do (4 workers on one host, 15 "       \
    "epochs of the shipped MLP, 10 runs: 89.36-89.74 % and 2.8 s to 88 % against "                 \
    "89.72-90.08 % and 1.7 s with it)")                                                            \
  X(encoding, check_conservation, bool, false, GS_ANY,                                             \
    "Workers verify at the end that sent quanta + residual (+ clipped mass) == sum of updates")

#define GS_TOPOLOGY_KEYS(X)                                                                        \
  X(topology, mode, std::string, "auto", GS_CHOICES("auto", "plain", "mesh"),                      \
    "plain: star through the master; mesh: tree; auto: plain below mesh_from_workers")             \
  X(topology, max_children, std::int64_t, 8, GS_RANGE(1, 1024), "mesh: fan-out of a node")         \
  X(topology, max_depth, std::int64_t, 5, GS_RANGE(1, 64), "mesh: deepest level below the master") \
  X(topology, mesh_from_workers, std::int64_t, 32, GS_RANGE(1, 1.0e6),                             \
    "auto: mesh from this many workers")                                                           \
  X(topology, aggregate, std::string, "auto", GS_CHOICES("auto", "true", "false"),                 \
    "Gradient sharing: every rank that relays (the master, a mesh's inner nodes) sums what it "    \
    "is owed and sends each link one re-encoded message instead of every worker's "                \
    "(docs/scaling.md); auto: on a mesh; a failed rank's relay residuals are lost with it")        \
  X(topology, aggregate_wait_ms, double, 20.0, GS_RANGE(0.0, 1.0e6),                               \
    "aggregate: longest a link's owed content waits for its other sources to speak")               \
  X(topology, aggregate_band, std::int64_t, 8, GS_RANGE(0, 1.0e6),                                 \
    "aggregate: an aggregate's cap in workers' message caps (encoding.max_message_sparsity at "    \
    "the step's band), for links that carry more workers than this; the smallest values wait "     \
    "in the relay residual for the link's next message (docs/scaling.md); 0: no cap (a "           \
    "link's messages grow with the workers behind it)")                                            \
  X(topology, remap, std::string, "dl4j", GS_CHOICES("dl4j", "shallowest"),                        \
    "mesh, after a rank dies: dl4j: its lowest child moves up to the master (or its parent) "      \
    "and the other children under it; shallowest: each child's subtree to the shallowest node "    \
    "with room")

#define GS_TRANSPORT_KEYS(X)                                                                   \
  X(transport, data_plane, std::string, "auto", GS_CHOICES("auto", "rma", "two_sided"),        \
    "How encoded updates and Downpour's pushes and pulls travel: auto picks per link (RMA "   \
    "in shared memory or over RDMA, two-sided messages over TCP); rma or two_sided force one") \
  X(transport, ring_bytes, std::int64_t, 8388608, GS_RANGE(4096, 1.0e11),                      \
    "Bytes of each inbound ring (one per link)")                                              \
  X(transport, timeout_ms, std::int64_t, 120000, GS_RANGE(1, 1.0e9),                           \
    "Deadline of every wait on a peer; missing it names the peer and what was awaited")

#define GS_CHECKPOINT_KEYS(X)                                                                  \
  X(checkpoint, every_steps, std::int64_t, 0, GS_RANGE(0, 1.0e12), "Checkpoint every N master steps (0: off)") \
  X(checkpoint, every_seconds, double, 0.0, GS_RANGE(0.0, 1.0e9), "Checkpoint every N seconds (0: off)") \
  X(checkpoint, every_epoch, bool, true, GS_ANY, "Checkpoint at the end of every epoch")        \
  X(checkpoint, keep, std::int64_t, 3, GS_RANGE(1, 1000), "Newest checkpoints kept")            \
  X(checkpoint, resume, std::string, "auto", GS_ANY,                                           \
    "auto: continue from the newest valid checkpoint of run.dir; never; or a checkpoint path")

#define GS_FAULT_TOLERANCE_KEYS(X)                                                             \
  X(fault_tolerance, heartbeat_ms, std::int64_t, 1000, GS_RANGE(1, 1.0e9),                    \
    "Worker heartbeat period (sent from a thread of their own, whatever the training does)")  \
  X(fault_tolerance, timeout_ms, std::int64_t, 10000, GS_RANGE(1, 1.0e9),                      \
    "A worker silent this long is declared dead: ten heartbeats lost in a row, so a loaded "   \
    "node or network does not kill a live worker")                                            \
  X(fault_tolerance, stall_timeout_ms, std::int64_t, 600000, GS_RANGE(1, 1.0e9),               \
    "A worker whose training thread makes no progress this long stops its heartbeats (a stuck " \
    "thread is found); longer than any step or checkpoint reply can take")                    \
  X(fault_tolerance, on_worker_failure, std::string, "replace",                                \
    GS_CHOICES("replace", "shrink", "abort"), "What to do when a worker dies")                 \
  X(fault_tolerance, spares, std::int64_t, 0, GS_RANGE(0, 1.0e6), "Spare ranks kept for replacement") \
  X(fault_tolerance, keep_bytes, std::int64_t, 16777216, GS_RANGE(0, 1.0e12),                   \
    "Gradient sharing: bytes of recent peer updates each replica keeps for the resync after a "  \
    "failure, whatever the number of workers (a replica lacking an older one is sent a whole "   \
    "state); aggregating, of the messages it sent toward the master (at least the newest 16); " \
    "Downpour: bytes of pushes a worker keeps to rebuild a lost parameter server or, under "     \
    "fault tolerance, the master's shard 0, split over the K shards (a log half full asks for " \
    "new snapshots)")                                                                           \
  X(fault_tolerance, inject, std::vector<FaultInjection>, {}, GS_ANY,                          \
    "Faults to inject: [{rank: R, at_step: S, kind: sigkill|exit|hang|stall}], or at_startup: " \
    "config|data|run_directory|hosts|setup instead of at_step")

#define GS_LOGGING_KEYS(X)                                                                     \
  X(logging, level, std::string, "info", GS_CHOICES("debug", "info", "warn", "error"), "Log level") \
  X(logging, every_steps, std::int64_t, 100, GS_RANGE(1, 1.0e12),                              \
    "A step record in metrics.jsonl every N steps")                                           \
  X(logging, every_seconds, double, 5.0, GS_RANGE(0, 1.0e6),                                  \
    "A progress line in the log at most every N seconds (0: with every step record); on a "   \
    "terminal it updates in place")                                                            \
  X(logging, encoding_debug, bool, false, GS_ANY,                                              \
    "Gradient sharing: an encoding_debug record per worker every every_steps steps (tau, "      \
    "sparsity, message formats, residual L2 norm and max |r|, clipped mass, shake-ups, bytes, " \
    "staleness)")

#define GS_COMPUTE_KEYS(X)                                                                     \
  X(compute, threads, std::int64_t, 1, GS_RANGE(1, 1024),                                     \
    "BLAS threads per rank (libtorch's intra-op threads for model.torchscript)")              \
  X(compute, device, std::string, "cpu", GS_CHOICES("cpu", "cuda", "auto"),                    \
    "Where the workers' forward and backward passes run (the optimizer and the codec stay on " \
    "the CPU); auto picks cuda when a GPU is visible")                                      \
  X(compute, gpus, std::vector<std::int64_t>, {}, GS_RANGE(0, 1023),                           \
    "compute.device cuda: the GPUs of a node its training ranks use (default: every visible "  \
    "one); the rank with local rank r on its node takes gpus[r mod len(gpus)], so each has "     \
    "its own while a node has a GPU per training rank (the master takes none) and they share "  \
    "round-robin beyond that, as the banner's GPU map says")

// Sections in the order they are printed and documented.
#define GS_CONFIG_SECTIONS(S)                                             \
  S(run, Run, GS_RUN_KEYS)                                                \
  S(data, Data, GS_DATA_KEYS)                                             \
  S(model, Model, GS_MODEL_KEYS)                                          \
  S(optimizer, Optimizer, GS_OPTIMIZER_KEYS)                              \
  S(training, Training, GS_TRAINING_KEYS)                                 \
  S(early_stopping, EarlyStopping, GS_EARLY_STOPPING_KEYS)                \
  S(downpour, Downpour, GS_DOWNPOUR_KEYS)                                 \
  S(encoding, Encoding, GS_ENCODING_KEYS)                                 \
  S(topology, Topology, GS_TOPOLOGY_KEYS)                                 \
  S(transport, Transport, GS_TRANSPORT_KEYS)                              \
  S(checkpoint, Checkpoint, GS_CHECKPOINT_KEYS)                           \
  S(fault_tolerance, FaultTolerance, GS_FAULT_TOLERANCE_KEYS)             \
  S(logging, Logging, GS_LOGGING_KEYS)                                    \
  S(compute, Compute, GS_COMPUTE_KEYS)

#define GS_DECLARE_MEMBER(section, key, type, default_value, constraint, help) \
  type key = default_value;
#define GS_DECLARE_SECTION(section, Name, KEYS) \
  struct Name##Config {                         \
    KEYS(GS_DECLARE_MEMBER)                     \
  };
GS_CONFIG_SECTIONS(GS_DECLARE_SECTION)
#undef GS_DECLARE_SECTION

struct ExperimentConfig {
#define GS_DECLARE_SECTION_MEMBER(section, Name, KEYS) Name##Config section;
  GS_CONFIG_SECTIONS(GS_DECLARE_SECTION_MEMBER)
#undef GS_DECLARE_SECTION_MEMBER
  // Where the config came from (for messages); empty for a config built in code.
  std::string source_path;
};

}  // namespace gradshare::config

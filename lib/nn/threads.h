// threads.h: how many threads the compute backend (OpenBLAS) may use in this process.
// The default is 1 so that several ranks share a node without oversubscribing its cores;
// compute.threads in the config overrides it.
#pragma once

namespace gradshare::nn {

void set_compute_threads(int threads);
int compute_threads();

// Applies the default of 1 unless set_compute_threads was called first (Model::build does).
void ensure_default_compute_threads();

}  // namespace gradshare::nn

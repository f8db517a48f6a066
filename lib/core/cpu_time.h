// cpu_time.h: CPU time used so far, for CPU shares and per-step costs.
#pragma once

namespace gradshare::core {

// This process, user and kernel time (getrusage).
double process_cpu_seconds();
// The calling thread (CLOCK_THREAD_CPUTIME_ID).
double thread_cpu_seconds();

}  // namespace gradshare::core

#include "train/sharing/report.h"

#include <algorithm>

#include "comm/byte_io.h"

namespace gradshare::train {

void SharingReport::add(const SharingReport& o) {
  const bool first = messages == 0 && steps == 0;
  using R = SharingReport;
  StepCounts::add(o);
  add_members(*this, o, &R::messages, &R::bytes, &R::entries, &R::sparse_messages,
              &R::bitmap_messages, &R::compressed_messages, &R::shake_ups, &R::backpressure,
              &R::relayed, &R::duplicates, &R::rejected, &R::clipped_mass, &R::sparsity_sum,
              &R::seconds, &R::capped_messages);
  staleness.add(o.staleness);
  residual_l2 = std::max(residual_l2, o.residual_l2);
  residual_max_abs = std::max(residual_max_abs, o.residual_max_abs);
  if (o.steps > 0) {
    tau_min = first ? o.tau_min : std::min(tau_min, o.tau_min);
    tau_max = first ? o.tau_max : std::max(tau_max, o.tau_max);
  }
}

void DrainedReport::write(comm::ByteWriter& writer) const {
  writer.put(applied_twice).put(published).put(relayed).put(links).put(bytes_published);
  writer.put(transport.messages_sent).put(transport.bytes_sent);
  writer.put(transport.messages_received).put(transport.bytes_received).put(cpu_seconds);
  writer.put(flush_messages).put(flush_bytes);
  writer.put_vector(std::span<const float>(parameters));
}

DrainedReport DrainedReport::read(comm::ByteReader& reader) {
  DrainedReport report;
  report.applied_twice = reader.get<std::int64_t>();
  report.published = reader.get<std::uint64_t>();
  report.relayed = reader.get<std::uint64_t>();
  report.links = reader.get<std::int32_t>();
  report.bytes_published = reader.get<std::uint64_t>();
  report.transport.messages_sent = reader.get<std::uint64_t>();
  report.transport.bytes_sent = reader.get<std::uint64_t>();
  report.transport.messages_received = reader.get<std::uint64_t>();
  report.transport.bytes_received = reader.get<std::uint64_t>();
  report.cpu_seconds = reader.get<double>();
  report.flush_messages = reader.get<std::uint64_t>();
  report.flush_bytes = reader.get<std::uint64_t>();
  report.parameters = reader.get_vector<float>();
  return report;
}

}  // namespace gradshare::train

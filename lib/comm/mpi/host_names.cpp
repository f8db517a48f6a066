// host_names.cpp: gather_labels, gather_host_names, allgather_host_keys, describe_hosts.
#include "comm/mpi/host_names.h"

#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <functional>

#include "comm/mpi/mpi_error.h"

namespace gradshare::comm {

std::vector<std::string> gather_labels(MPI_Comm comm, const std::string& mine) {
  constexpr std::size_t kLabelBytes = 256;
  std::array<char, kLabelBytes> label{};
  std::memcpy(label.data(), mine.data(), std::min(mine.size(), kLabelBytes - 1));
  int rank = 0;
  int size = 0;
  check_mpi(MPI_Comm_rank(comm, &rank), "MPI_Comm_rank");
  check_mpi(MPI_Comm_size(comm, &size), "MPI_Comm_size");
  std::vector<char> all(rank == 0 ? static_cast<std::size_t>(size) * kLabelBytes : 0);
  check_mpi(MPI_Gather(label.data(), kLabelBytes, MPI_CHAR, all.data(), kLabelBytes, MPI_CHAR, 0,
                       comm),
            "MPI_Gather");
  std::vector<std::string> labels;
  for (int r = 0; rank == 0 && r < size; ++r) {
    const char* text = all.data() + static_cast<std::size_t>(r) * kLabelBytes;
    labels.emplace_back(text, strnlen(text, kLabelBytes - 1));
  }
  return labels;
}

namespace {
std::string this_host() {
  std::array<char, 256> name{};
  gethostname(name.data(), name.size() - 1);
  return name.data();
}
}  // namespace

std::vector<std::string> gather_host_names(MPI_Comm comm) {
  return gather_labels(comm, this_host());
}

std::vector<std::uint64_t> allgather_host_keys(MPI_Comm comm) {
  const std::uint64_t mine = std::hash<std::string>{}(this_host());
  int size = 0;
  check_mpi(MPI_Comm_size(comm, &size), "MPI_Comm_size");
  std::vector<std::uint64_t> all(static_cast<std::size_t>(size));
  check_mpi(MPI_Allgather(&mine, 1, MPI_UINT64_T, all.data(), 1, MPI_UINT64_T, comm),
            "MPI_Allgather");
  return all;
}

std::string describe_hosts(const std::vector<std::string>& host_of_rank) {
  std::vector<std::pair<std::string, std::string>> hosts;  // name, "0 4"
  for (std::size_t rank = 0; rank < host_of_rank.size(); ++rank) {
    auto found = std::find_if(hosts.begin(), hosts.end(),
                              [&](const auto& host) { return host.first == host_of_rank[rank]; });
    if (found == hosts.end()) {
      hosts.emplace_back(host_of_rank[rank], std::to_string(rank));
    } else {
      found->second += " " + std::to_string(rank);
    }
  }
  std::string text;
  for (const auto& [name, ranks] : hosts)
    text += (text.empty() ? "" : ", ") + name + " [" + ranks + "]";
  return text;
}

}  // namespace gradshare::comm

// The sealed channel from a candidate's ranks to the driver. Each rank writes frames into a FIFO (bound into the
// sandbox) as soon as it has them: every checked trial's outputs, the outputs of timed calls, and its record
// (status, timing). The driver reads them outside the sandbox as they come, so once a frame is written nothing
// the candidate does afterwards (a destructor, an atexit handler, a leftover thread, rewriting files in its
// scratch directory) changes what is judged. Frames are numbered: an extra frame written by candidate code breaks
// the sequence and the stream is judged corrupt, never believed.
//
// The frames' format and their parser: seal/frame.h. kind: record (a rank record, JSON), outputs (a safetensors
// file's bytes; label trialT or copyK), end (nothing follows).
#pragma once

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "seal/frame.h"

namespace pkb {

class SealWriter {
 public:
  // Opens the FIFO for writing; an empty path gives a writer that drops everything (the reference pass).
  explicit SealWriter(const std::string& fifo_path);
  ~SealWriter();
  bool enabled() const { return fd_ >= 0; }
  // Throws pkb::Error if the frame cannot be written whole.
  void send(FrameKind kind, const std::string& label, const std::string& payload);

 private:
  int fd_ = -1;
  uint64_t seq_ = 0;
};

// What the driver received from one rank.
struct SealedRank {
  std::string record;                // payload of the last record frame ("" if none)
  bool ended = false;                // an end frame arrived
  std::string error;                 // why the stream is not believed ("" when it is whole)
  std::vector<std::string> outputs;  // labels of every outputs frame received (kept or dropped)
  uint64_t bytes = 0;                // bytes parsed (after an error the FIFO is still read, never parsed)
};

// Driver side: creates fifo_dir/rankR for every rank and reads each on a thread of its own while the job runs, feeding
// what it reads to the rank's FrameParser. Outputs frames whose label `keep` accepts are written to
// out_dir/<label>/rankR.safetensors; the others are read and dropped. A rank that sends more than max_bytes is cut off
// (its stream is corrupt).
class SealCollector {
 public:
  SealCollector(const std::filesystem::path& fifo_dir, const std::filesystem::path& out_dir, int world,
                uint64_t max_bytes, std::function<bool(const std::string&)> keep);
  ~SealCollector();
  // After the job has ended: reads what is left and stops. Idempotent.
  const std::vector<SealedRank>& finish();

 private:
  struct Stream;
  void loop(Stream& s);
  std::filesystem::path out_dir_;
  uint64_t max_bytes_;
  std::function<bool(const std::string&)> keep_;
  std::vector<std::unique_ptr<Stream>> streams_;
  std::vector<SealedRank> result_;
  std::vector<int> keepalive_;  // write ends held open so an unopened FIFO never reads as end-of-file
  std::atomic<bool> stop_{false};
  std::vector<std::thread> threads_;  // one per rank: W ranks' captures can be tens of GB at W = 4
  bool finished_ = false;
};

}  // namespace pkb

// pkb-candidate: one rank of a candidate pass, without libtorch. Its inputs are pkb's draws (inputs/draw.h), so it
// hosts the candidates of problems without a libtorch prepare step; the driver sends the others to pkb-rank. Not
// loading libtorch spares each rank ~0.9 s of CPU at start-up (its ~290 libraries and operator registrations) and
// keeps the judged process small.
#include "inputs/draw.h"
#include "worker/worker.h"

int main(int argc, char** argv) {
  using namespace pkb;
  RankPasses passes;
  passes.program = "pkb-candidate";
  passes.candidate_inputs.make = draw_inputs;
  passes.candidate_inputs.draws = input_draws;
  return rank_main(argc, argv, passes);
}

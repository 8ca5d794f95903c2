// Reporters: each reads a Scores (and the loader's bookkeeping for provenance) and returns text; none runs
// inside an evaluation loop. Formats: report.json ("pkb.report/1", docs/metrics.md), summary.md (the table
// people paste), curves.csv (p, k, fast_p@k).
#pragma once

#include <filesystem>
#include <string>

#include <nlohmann/json.hpp>

#include "scoring/aggregate.h"

namespace pkb::scoring {

nlohmann::ordered_json report_json(const Scores& s, const LoadedResults& loaded);
std::string summary_md(const Scores& s);
std::string curves_csv(const Scores& s);

// Writes the three files into out_dir (created if needed). They are derived from results.jsonl and
// deterministic, so a rerun replaces them rather than suffixing: the records are the run's history.
void write_report(const Scores& s, const LoadedResults& loaded, const std::filesystem::path& out_dir);

}  // namespace pkb::scoring

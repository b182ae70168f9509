#include "nccl/tests_output.hpp"

#include <algorithm>
#include <cctype>

#include "util/strings.hpp"

namespace gpuenv::nccl {
namespace {

/// How many decimal digits `line` has from `at` (at most 6).
std::size_t digits_at(std::string_view line, std::size_t at) {
  std::size_t n = 0;
  while (at + n < line.size() && n < 6 && std::isdigit(static_cast<unsigned char>(line[at + n])) != 0) ++n;
  return n;
}

/// The line without a launcher's prefix: mpirun --tag-output "[1,0]<stdout>:" / "<stderr>:", srun --label "12: ".
/// srun pads the task id with blanks to the widest one (" 0: " beside "15: ") and labels a heterogeneous job's
/// components "P0  3: " (SchedMD/slurm @ 284c3b95f08a2dc2478499837b03355e1b9c5c75
/// src/common/write_labelled_message.c:136-143, _build_label: "%*d: ", "P%u %*d: "); older Slurm padded with zeros.
std::string_view strip_launcher_prefix(std::string_view line) {
  if (!line.empty() && line.front() == '[') {
    const std::size_t tag = line.find("]<");
    const std::size_t colon = line.find(">:");
    if (tag != std::string_view::npos && colon != std::string_view::npos && tag < colon && colon < 48)
      return line.substr(colon + 2);
  }
  std::size_t at = 0;
  if (!line.empty() && line.front() == 'P') {
    const std::size_t component = digits_at(line, 1);
    if (component > 0 && line.size() > component + 1 && line[component + 1] == ' ') at = component + 2;
  }
  while (at < line.size() && at < 16 && line[at] == ' ') ++at;
  const std::size_t digits = digits_at(line, at);
  if (digits > 0 && line.size() > at + digits + 1 && line[at + digits] == ':' && line[at + digits + 1] == ' ')
    return line.substr(at + digits + 2);
  return line;
}

std::vector<std::string_view> words(std::string_view text) {
  std::vector<std::string_view> out;
  std::size_t i = 0;
  while (i < text.size()) {
    while (i < text.size() && std::isspace(static_cast<unsigned char>(text[i])) != 0) ++i;
    const std::size_t start = i;
    while (i < text.size() && std::isspace(static_cast<unsigned char>(text[i])) == 0) ++i;
    if (i > start) out.push_back(text.substr(start, i - start));
  }
  return out;
}

bool all_digits(std::string_view text) {
  return !text.empty() &&
         std::all_of(text.begin(), text.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)) != 0; });
}

/// Where the fields of a data row are, from the table's header line.
struct Layout {
  std::size_t leading = 0;  ///< columns before the first half: size, count, type[, redop][, root]
  std::size_t half = 0;     ///< columns per half: time, algbw, busbw, #wrong/error[, i_min, i_max, i_p99, i_cv%]
  bool has_redop = false;
  bool wrong_counts = true;  ///< "#wrong" (a count) rather than "error" (a magnitude)
};

/// The layout a header line ("#  size  count  type  redop  root  time  algbw  busbw #wrong  time ...") declares.
std::optional<Layout> header_layout(const std::vector<std::string_view>& tokens) {
  if (tokens.size() < 6 || tokens[0] != "#" || tokens[1] != "size") return std::nullopt;
  const auto is_time = [](std::string_view t) { return t == "time" || t == "cputime"; };
  const auto first = std::find_if(tokens.begin() + 2, tokens.end(), is_time);
  if (first == tokens.end()) return std::nullopt;
  const auto second = std::find_if(first + 1, tokens.end(), is_time);
  Layout layout;
  layout.leading = static_cast<std::size_t>(first - tokens.begin()) - 1;
  layout.half = static_cast<std::size_t>((second == tokens.end() ? tokens.end() : second) - first);
  if (layout.half < 4 || first[1] != "algbw" || first[2] != "busbw") return std::nullopt;
  layout.wrong_counts = first[3] == "#wrong";
  layout.has_redop = std::find(tokens.begin() + 1, first, "redop") != first;
  return layout;
}

std::optional<NcclTestsRow::Half> half_at(const std::vector<std::string_view>& tokens, std::size_t at) {
  const auto time = util::parse_double(tokens[at]);
  const auto algbw = util::parse_double(tokens[at + 1]);
  const auto busbw = util::parse_double(tokens[at + 2]);
  if (!algbw || !busbw) return std::nullopt;
  NcclTestsRow::Half half;
  half.time_us = time.value_or(0);
  half.algbw_gbps = *algbw;
  half.busbw_gbps = *busbw;
  half.wrong = util::parse_double(tokens[at + 3]);  // "N/A" (validation off): nullopt
  return half;
}

std::optional<NcclTestsRow> data_row(const std::vector<std::string_view>& tokens, const Layout& layout) {
  if (tokens.size() < layout.leading + 2 * layout.half || !all_digits(tokens[0]) || !all_digits(tokens[1]))
    return std::nullopt;
  NcclTestsRow row;
  // all_digits lets through numbers past 2^64, which std::stoull threw on; such a row is not a row.
  const auto bytes = util::parse_unsigned(tokens[0]);
  const auto count = util::parse_unsigned(tokens[1]);
  if (!bytes || !count) return std::nullopt;
  row.bytes = *bytes;
  row.count = *count;
  row.type = std::string(tokens[2]);
  if (layout.has_redop && layout.leading > 3) row.redop = std::string(tokens[3]);
  auto out_of_place = half_at(tokens, layout.leading);
  auto in_place = half_at(tokens, layout.leading + layout.half);
  if (!out_of_place || !in_place) return std::nullopt;
  row.out_of_place = *out_of_place;
  row.in_place = *in_place;
  return row;
}

/// "#  Rank  3 Group  0 Pid  12 on node-a device  3 [0x5c] NVIDIA H100 80GB HBM3" (older: no Group).
std::optional<NcclTestsRank> rank_line(std::string_view line, const std::vector<std::string_view>& tokens) {
  if (tokens.size() < 8 || tokens[0] != "#" || tokens[1] != "Rank") return std::nullopt;
  const auto rank = util::parse_int(tokens[2]);
  const auto on = std::find(tokens.begin(), tokens.end(), "on");
  const auto device = std::find(tokens.begin(), tokens.end(), "device");
  if (!rank || on == tokens.end() || on + 1 == tokens.end() || device == tokens.end() || device + 1 == tokens.end())
    return std::nullopt;
  NcclTestsRank out;
  out.rank = static_cast<int>(*rank);
  out.host = std::string(on[1]);
  out.device = static_cast<int>(util::parse_int(device[1]).value_or(-1));
  const std::size_t bracket = line.find(']', line.find('['));
  if (bracket != std::string_view::npos) out.gpu = std::string(util::trim(line.substr(bracket + 1)));
  return out;
}

/// The text after the ':' of a footer line ("# Avg bus bandwidth    : 448.212 OK" -> "448.212").
std::string_view footer_value(std::string_view line) {
  const std::size_t colon = line.find(':');
  if (colon == std::string_view::npos) return {};
  const auto fields = words(line.substr(colon + 1));
  return fields.empty() ? std::string_view() : fields.front();
}

}  // namespace

std::vector<std::string> NcclTestsOutput::hosts() const {
  std::vector<std::string> out;
  for (const NcclTestsRank& rank : ranks) {
    if (std::find(out.begin(), out.end(), rank.host) == out.end()) out.push_back(rank.host);
  }
  return out;
}

util::Expected<NcclTestsOutput> parse_nccl_tests_output(std::string_view text) {
  NcclTestsOutput out;
  std::optional<Layout> layout;
  std::size_t number = 0;
  for (const std::string_view physical : util::split_lines(text)) {
    ++number;
    const std::string_view line = util::trim(strip_launcher_prefix(physical));
    if (line.empty()) continue;
    if (util::contains(line, "NCCL WARN")) out.nccl_warnings.emplace_back(line.substr(line.find("NCCL WARN")));
    if (util::contains(line, "NET/Socket : Using") || util::contains(line, "via NET/Socket"))
      out.socket_transport = true;
    const std::vector<std::string_view> tokens = words(line);
    if (auto declared = header_layout(tokens)) {
      layout = declared;
      out.wrong_counts = declared->wrong_counts;
    } else if (auto rank = rank_line(line, tokens)) {
      out.ranks.push_back(std::move(*rank));
    } else if (util::contains(line, "Out of bounds values")) {
      out.out_of_bounds = util::parse_int(footer_value(line));
    } else if (util::contains(line, "Avg bus bandwidth")) {
      out.avg_busbw_gbps = util::parse_double(footer_value(line));
    } else if (util::starts_with(line, "# Collective test starting:")) {
      out.test = std::string(footer_value(line));
    } else if (util::starts_with(line, "# nccl-tests version")) {
      const std::size_t at = line.find("nccl-library=");
      if (at != std::string_view::npos) {
        if (auto code = util::parse_int(words(line.substr(at + 13)).front()))
          out.nccl_library = static_cast<int>(*code);
      }
    } else if (util::starts_with(line, "rank=") && util::contains(line, "#wrong=")) {
      out.rank_errors.emplace_back(line);
    } else if (layout) {
      if (auto row = data_row(tokens, *layout)) {
        row->line = number;
        out.rows.push_back(std::move(*row));
      }
    }
  }
  if (out.rows.empty()) {
    std::string message = "no nccl-tests result table (a `#  size  count  type ...` header and its rows)";
    if (!out.nccl_warnings.empty()) message += "; NCCL said: " + out.nccl_warnings.front();
    return util::Error::input(message, "pass the output of an nccl-tests *_perf run (stdout, or its Slurm log)");
  }
  return out;
}

double allreduce_bus_bandwidth_gbps(std::uint64_t bytes, double seconds, int ranks) {
  if (seconds <= 0 || ranks < 2) return 0;
  const double algbw = static_cast<double>(bytes) / 1.0e9 / seconds;
  return algbw * (2.0 * (ranks - 1)) / ranks;
}

}  // namespace gpuenv::nccl

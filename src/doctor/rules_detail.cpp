#include "doctor/rules_detail.hpp"

#include <sstream>

namespace gpuenv::doctor::rules_detail {

report::Finding make(std::string id, Status status, std::string message, std::string remedy, std::string source) {
  return report::Finding{std::move(id), status, std::move(message), std::move(remedy), std::move(source)};
}

std::string number(double value, int decimals) {
  std::ostringstream out;
  out.setf(std::ios::fixed);
  out.precision(decimals);
  out << value;
  std::string text = out.str();
  if (text.find('.') != std::string::npos) {
    while (text.back() == '0') text.pop_back();
    if (text.back() == '.') text.pop_back();
  }
  return text;
}

std::string gpu_label(const GpuFacts& gpu) {
  std::string label = "GPU " + std::to_string(gpu.index);
  if (!gpu.pci_bus_id.empty()) label += " (" + gpu.pci_bus_id + ")";
  return label;
}

bool has_gpus(const HostFacts& facts) { return facts.gpus.availability.available && !facts.gpus.gpus.empty(); }

void PerGpu::finish(Findings& out, const std::string& ok_message, const std::string& skip_reason) {
  if (!m_problems.empty()) {
    out.push_back(make(m_id, m_status, util::join(m_problems, "; "), util::join(m_remedies, "; "), m_source));
    out.back().action = m_action;
  } else if (m_checked == 0) {
    out.push_back(make(m_id, Status::skip, skip_reason));
  } else {
    std::string message = std::to_string(m_checked) + (m_checked == 1 ? " GPU: " : " GPUs: ") + ok_message;
    if (!m_notes.empty()) message += " (" + util::join(m_notes, "; ") + ")";
    out.push_back(make(m_id, Status::pass, message, {}, m_source));
  }
}

}  // namespace gpuenv::doctor::rules_detail

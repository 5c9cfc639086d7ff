#include "server/connection_slots.h"

namespace moss {

SlotKind ConnectionSlots::admit(const std::string& address, std::string& why) {
  std::lock_guard<std::mutex> lock(m_);
  size_t& mine = ordinary_of_[address];
  if (ordinary_ < limits_.total && mine < limits_.per_address) {
    ++ordinary_;
    ++mine;
    return SlotKind::Ordinary;
  }
  size_t& reserved = reserve_of_[address];
  if (reserve_ < limits_.reserve && reserved < limits_.reserve_per_address) {
    ++reserve_;
    ++reserved;
    return SlotKind::Reserve;
  }
  why = mine >= limits_.per_address
            ? "too many connections from " + address + " (" + std::to_string(limits_.per_address) + " open)"
            : "the server holds its " + std::to_string(limits_.total) + " connections";
  if (!mine) ordinary_of_.erase(address);
  if (!reserved) reserve_of_.erase(address);
  return SlotKind::Refused;
}

void ConnectionSlots::release(const std::string& address, SlotKind kind) {
  if (kind == SlotKind::Refused) return;
  std::lock_guard<std::mutex> lock(m_);
  auto& counts = kind == SlotKind::Ordinary ? ordinary_of_ : reserve_of_;
  (kind == SlotKind::Ordinary ? ordinary_ : reserve_) -= 1;
  auto it = counts.find(address);
  if (it != counts.end() && --it->second == 0) counts.erase(it);
}

}  // namespace moss

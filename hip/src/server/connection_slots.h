// Admission of connections: how many one client address and all clients together may hold,
// and a reserve kept for the light routes (progress, health, readiness, interrupt) so that a
// server whose ordinary slots are all taken, by slow clients or by long txt2img waits, still
// answers them. The address is the only identity the server has: several clients behind one
// address share its share; many addresses together can still fill the ordinary slots, and
// then the reserve, whose connections get a short head deadline and only the light routes,
// is what stays (docs: README, "Server limits").
#pragma once
#include <cstddef>
#include <map>
#include <mutex>
#include <string>

namespace moss {

struct SlotLimits {
  size_t total = 64;               // ordinary connections, all addresses together
  size_t per_address = 24;         // ordinary connections of one address
  size_t reserve = 8;              // beyond those, for the light routes only
  size_t reserve_per_address = 2;  // so that one address cannot take the whole reserve
};

enum class SlotKind { Refused, Ordinary, Reserve };

class ConnectionSlots {
 public:
  explicit ConnectionSlots(const SlotLimits& limits) : limits_(limits) {}

  // A slot for a new connection from `address`, or Refused with the reason in `why`.
  SlotKind admit(const std::string& address, std::string& why);
  void release(const std::string& address, SlotKind kind);

  // The connection's slot for as long as it lives.
  class Held {
   public:
    Held(ConnectionSlots& slots, std::string address)
        : slots_(slots), address_(std::move(address)), kind_(slots.admit(address_, why_)) {}
    ~Held() { slots_.release(address_, kind_); }
    Held(const Held&) = delete;
    Held& operator=(const Held&) = delete;
    SlotKind kind() const { return kind_; }
    const std::string& why() const { return why_; }

   private:
    ConnectionSlots& slots_;
    std::string address_, why_;
    SlotKind kind_;
  };

 private:
  SlotLimits limits_;
  std::mutex m_;
  size_t ordinary_ = 0, reserve_ = 0;
  std::map<std::string, size_t> ordinary_of_, reserve_of_;
};

}  // namespace moss

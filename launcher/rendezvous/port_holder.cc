#include "rendezvous/port_holder.h"

#include <dirent.h>
#include <limits.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <optional>
#include <sstream>
#include <vector>

namespace hetrun::launcher {
namespace {

constexpr const char* kListenState = "0A";  // TCP_LISTEN in /proc/net/tcp's "st" column
constexpr size_t kMaxCommandChars = 120;

struct PortSocket {
  std::string inode;
  std::string uid;
  bool listening = false;
};

// The sockets bound to `port` in one /proc/net/tcp* table: columns "sl local_address
// rem_address st tx_queue rx_queue tr tm->when retrnsmt uid timeout inode", local_address as
// HEXADDR:HEXPORT.
void ReadTable(const std::string& path, int port, std::vector<PortSocket>* found) {
  std::ifstream table(path);
  std::string line;
  std::getline(table, line);  // the header
  while (std::getline(table, line)) {
    std::istringstream fields(line);
    std::string slot, local, remote, state, queues, timer, retransmits, uid, timeout, inode;
    if (!(fields >> slot >> local >> remote >> state >> queues >> timer >> retransmits >> uid >>
          timeout >> inode)) {
      continue;
    }
    const size_t colon = local.rfind(':');
    if (colon == std::string::npos) continue;
    if (std::strtol(local.c_str() + colon + 1, nullptr, 16) != port || inode == "0") continue;
    found->push_back({inode, uid, state == kListenState});
  }
}

// The command line of `pid`, arguments joined by spaces and cut to kMaxCommandChars.
std::string CommandLine(const std::string& pid) {
  std::ifstream file("/proc/" + pid + "/cmdline", std::ios::binary);
  std::string text((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  while (!text.empty() && text.back() == '\0') text.pop_back();
  for (char& c : text) {
    if (static_cast<unsigned char>(c) < ' ') c = ' ';  // NUL between arguments, newlines
  }
  if (text.size() > kMaxCommandChars) text = text.substr(0, kMaxCommandChars) + "...";
  return text;
}

// The first process (by /proc order) with an fd linked to "socket:[inode]".
std::optional<std::string> ProcessWithSocket(const std::string& inode) {
  const std::string target = "socket:[" + inode + "]";
  DIR* proc = ::opendir("/proc");
  if (proc == nullptr) return std::nullopt;
  std::optional<std::string> owner;
  while (dirent* entry = ::readdir(proc)) {
    const std::string pid = entry->d_name;
    if (pid.empty() || pid.find_first_not_of("0123456789") != std::string::npos) continue;
    const std::string fds = "/proc/" + pid + "/fd";
    DIR* dir = ::opendir(fds.c_str());
    if (dir == nullptr) continue;  // another user's process
    while (dirent* fd = ::readdir(dir)) {
      char link[PATH_MAX];
      const std::string path = fds + "/" + fd->d_name;
      ssize_t n = ::readlink(path.c_str(), link, sizeof(link) - 1);
      if (n <= 0) continue;
      link[n] = '\0';
      if (target == link) {
        owner = pid;
        break;
      }
    }
    ::closedir(dir);
    if (owner) break;
  }
  ::closedir(proc);
  return owner;
}

}  // namespace

std::string DescribePortHolder(int port) {
  std::vector<PortSocket> sockets;
  ReadTable("/proc/net/tcp", port, &sockets);
  ReadTable("/proc/net/tcp6", port, &sockets);
  if (sockets.empty()) return "";
  std::stable_partition(sockets.begin(), sockets.end(),
                        [](const PortSocket& s) { return s.listening; });
  for (const PortSocket& socket : sockets) {
    if (std::optional<std::string> pid = ProcessWithSocket(socket.inode)) {
      const std::string command = CommandLine(*pid);
      return "pid " + *pid + (command.empty() ? "" : " (" + command + ")");
    }
  }
  return "a socket of uid " + sockets.front().uid + " (its process is not readable here)";
}

}  // namespace hetrun::launcher

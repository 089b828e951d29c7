#include "commands/torchrun_args.h"

#include <algorithm>
#include <optional>

#include "hetrun/base/nearest_name.h"
#include "hetrun/base/shown_text.h"
#include "hetrun/base/units.h"

namespace hetrun::launcher {
namespace {

/// torchrun options hetrun accepts without acting on them, each with what hetrun does instead
/// (one warning line per option given).
struct IgnoredOption {
  const char* name;
  bool takes_value;
  const char* instead;
};
constexpr IgnoredOption kIgnored[] = {
    {"rdzv-conf", true, "hetrun's rendezvous reads --rdzv-timeout and --peer-timeout"},
    {"monitor-interval", true, "hetrun's supervisor sees a worker's exit at once, without polling"},
    {"start-method", true, "hetrun always starts each worker by fork and exec"},
    {"local-addr", true, "the node record carries the host hetrun resolves for this node"},
    {"logs-specs", true, "hetrun's worker logs are --log-dir, --tee and --redirects"},
    {"log-line-prefix-template", true, "hetrun's console prefix is [rank R] (--prefix-ranks)"},
    {"numa-binding", true,
     "hetrun binds no NUMA node; --cpu-bind spread deals the CPUs out to the workers"},
    {"event-log-handler", true,
     "hetrun records no torchelastic events; see its termination log and --metrics-port"},
    {"duplicate-stdout-filters", true,
     "hetrun copies no filtered lines; --tee copies whole streams to files"},
    {"duplicate-stderr-filters", true,
     "hetrun copies no filtered lines; --tee copies whole streams to files"},
    {"virtual-local-rank", false,
     "hetrun gives every worker its own LOCAL_RANK, and each sees every GPU of the node"},
};

const IgnoredOption* FindIgnored(const std::string& name) {
  for (const IgnoredOption& option : kIgnored) {
    if (name == option.name) return &option;
  }
  return nullptr;
}

/// Options the translation consumes itself (declared in hetrun run's table for --help).
constexpr const char* kProgramFlags[] = {"no-python", "module", "run-path", "standalone"};

struct Parsed {
  std::string name;  ///< dashes, no leading "--"
  std::optional<std::string> value;
};

Parsed SplitOption(const std::string& arg) {
  Parsed parsed;
  std::string body = arg.substr(2);
  size_t equals = body.find('=');
  if (equals != std::string::npos) {
    parsed.value = body.substr(equals + 1);
    body.resize(equals);
  }
  std::replace(body.begin(), body.end(), '_', '-');
  parsed.name = body;
  return parsed;
}

bool InList(const std::string& name, std::initializer_list<const char*> list) {
  return std::any_of(list.begin(), list.end(), [&](const char* item) { return name == item; });
}

/// `HOST[:PORT]` or `[V6]:PORT` of --rdzv-endpoint as --master-addr/--master-port.
Status AddEndpoint(const std::string& endpoint, std::vector<std::string>* options) {
  std::string host = endpoint;
  std::string port;
  if (!endpoint.empty() && endpoint[0] == '[') {
    size_t close = endpoint.find(']');
    if (close == std::string::npos) {
      return UsageError("--rdzv-endpoint '" + endpoint + "': no ']' after an IPv6 address");
    }
    host = endpoint.substr(1, close - 1);
    if (close + 1 < endpoint.size()) {
      if (endpoint[close + 1] != ':') {
        return UsageError("--rdzv-endpoint '" + endpoint + "': expected :PORT after ']'");
      }
      port = endpoint.substr(close + 2);
    }
  } else if (size_t colon = endpoint.rfind(':'); colon != std::string::npos) {
    host = endpoint.substr(0, colon);
    port = endpoint.substr(colon + 1);
  }
  if (host.empty()) return UsageError("--rdzv-endpoint '" + endpoint + "': no host (HOST[:PORT])");
  options->insert(options->end(), {"--master-addr", host});
  if (!port.empty()) options->insert(options->end(), {"--master-port", port});
  return Status::Ok();
}

/// --nnodes N or a fixed range N:N; an elastic range is refused.
Result<std::string> FixedNodeCount(const std::string& value) {
  size_t colon = value.find(':');
  if (colon == std::string::npos) return value;
  std::string low = value.substr(0, colon);
  std::string high = value.substr(colon + 1);
  if (low != high) {
    return UsageError(
        "--nnodes '" + ShownText(value, 64) +
        "': hetrun does not grow or shrink a running job (no elastic MIN:MAX). Instead its jobs "
        "are gang-scheduled with a fixed size (--nnodes " +
        ShownText(high, 16) +
        ", or N:N): a node that fails or leaves makes every node exit 75, and Volcano or the "
        "JobSet restarts the whole job at that size, which resumes from its checkpoint; "
        "--max-restarts restarts a node's own workers in place (docs/how-to/restarts.md)");
  }
  return low;
}

Status CheckBackend(const std::string& backend) {
  if (backend == "c10d" || backend == "static") return Status::Ok();
  if (backend == "etcd" || backend == "etcd-v2") {
    return UsageError("--rdzv-backend " + backend +
                      ": etcd rendezvous is not supported; hetrun's jobs are gang-scheduled with "
                      "a fixed size and always meet at hetrun's store on node 0 (use c10d or "
                      "static, or leave it out)");
  }
  return UsageError("--rdzv-backend '" + backend + "': unknown backend (c10d or static)");
}

class Translator {
 public:
  Translator(const std::vector<std::string>& args, const std::vector<KnownOption>& known)
      : args_(args), known_(known) {}

  Result<TorchrunArgs> Run() {
    for (i_ = 0; i_ < args_.size(); ++i_) {
      const std::string& arg = args_[i_];
      if (arg == "--") {
        out_.program.assign(args_.begin() + static_cast<long>(i_) + 1, args_.end());
        break;
      }
      if (arg.size() < 2 || arg[0] != '-') {
        out_.program.assign(args_.begin() + static_cast<long>(i_), args_.end());
        break;
      }
      if (arg[1] != '-') {
        HETRUN_RETURN_IF_ERROR(Short(arg));
      } else {
        HETRUN_RETURN_IF_ERROR(Long(SplitOption(arg), arg));
      }
    }
    Finish();
    return std::move(out_);
  }

 private:
  Result<std::string> Value(const Parsed& option) {
    if (option.value) return *option.value;
    if (i_ + 1 >= args_.size()) return UsageError("--" + option.name + " needs a value");
    return args_[++i_];
  }

  Status Short(const std::string& arg) {
    char letter = arg[1];
    std::string attached = arg.substr(2);
    if (letter == 'm' && attached.empty()) {
      module_ = true;
      return Status::Ok();
    }
    if (letter == 'h' && attached.empty()) {
      out_.options.push_back("--help");
      return Status::Ok();
    }
    if (letter == 't' || letter == 'r') {
      Parsed option{letter == 't' ? "tee" : "redirects", std::nullopt};
      if (!attached.empty()) option.value = attached;
      return Long(option, arg);
    }
    return UsageError("hetrun run: unknown option '" + ShownText(arg, 64) + "'" + Suggestion(arg));
  }

  Status Long(const Parsed& option, const std::string& arg) {
    const std::string& name = option.name;
    if (name == "module" || name == "no-python" || name == "run-path" || name == "standalone") {
      if (option.value) return UsageError("--" + name + " takes no value");
      module_ |= name == "module";
      no_python_ |= name == "no-python";
      run_path_ |= name == "run-path";
      out_.standalone |= name == "standalone";
      return Status::Ok();
    }
    if (const IgnoredOption* ignored = FindIgnored(name)) {
      std::string given = "--" + name;
      if (ignored->takes_value) {
        HETRUN_ASSIGN_OR_RETURN(std::string value, Value(option));
        given += " " + ShownText(value, 64);
      } else if (option.value) {
        return UsageError("--" + name + " takes no value");
      }
      out_.ignored.push_back("torchrun's " + given + " is ignored: " + ignored->instead);
      return Status::Ok();
    }
    if (InList(name, {"rdzv-endpoint", "rdzv-backend", "rdzv-id", "nnodes"})) {
      HETRUN_ASSIGN_OR_RETURN(std::string value, Value(option));
      return Rendezvous(name, value);
    }
    auto known = std::find_if(known_.begin(), known_.end(),
                              [&](const KnownOption& k) { return k.name == name; });
    if (known == known_.end()) {
      return UsageError("hetrun run: unknown option '" + ShownText(arg, 64) + "'" +
                        Suggestion("--" + name));
    }
    out_.options.push_back("--" + name);
    if (known->takes_value) {
      HETRUN_ASSIGN_OR_RETURN(std::string value, Value(option));
      out_.options.push_back(value);
    } else if (option.value) {
      return UsageError("--" + name + " takes no value");
    }
    return Status::Ok();
  }

  Status Rendezvous(const std::string& name, const std::string& value) {
    if (name == "rdzv-endpoint") return AddEndpoint(value, &out_.options);
    if (name == "rdzv-backend") return CheckBackend(value);
    if (name == "rdzv-id") {
      out_.options.insert(out_.options.end(), {"--run-id", value});
      return Status::Ok();
    }
    HETRUN_ASSIGN_OR_RETURN(std::string nodes, FixedNodeCount(value));
    out_.options.insert(out_.options.end(), {"--nnodes", nodes});
    return Status::Ok();
  }

  std::string Suggestion(const std::string& arg) const {
    std::vector<std::string> names;
    for (const KnownOption& k : known_) names.push_back("--" + k.name);
    for (const IgnoredOption& option : kIgnored) names.push_back(std::string("--") + option.name);
    for (const char* name : {"--rdzv-endpoint", "--rdzv-backend", "--rdzv-id"}) {
      names.emplace_back(name);
    }
    for (const char* name : kProgramFlags) names.push_back(std::string("--") + name);
    std::string spelled = arg.substr(0, arg.find('='));
    std::replace(spelled.begin() + std::min<size_t>(2, spelled.size()), spelled.end(), '_', '-');
    std::string best = NearestName(spelled, names, 3);
    return best.empty() ? "" : " (did you mean '" + best + "'?)";
  }

  void Finish() {
    auto given = [this](const char* flag) {
      return std::find(out_.options.begin(), out_.options.end(), flag) != out_.options.end();
    };
    if (out_.standalone) {
      if (!given("--nnodes")) out_.options.insert(out_.options.end(), {"--nnodes", "1"});
      if (!given("--master-addr")) {
        out_.options.insert(out_.options.end(), {"--master-addr", "localhost"});
      }
    }
    bool python_file =
        !out_.program.empty() && out_.program[0].size() > 3 && out_.program[0].ends_with(".py");
    if (module_) {
      out_.kind = ProgramKind::kPythonModule;
    } else if (!no_python_ && (run_path_ || python_file)) {
      out_.kind = ProgramKind::kPythonScript;
    }
  }

  const std::vector<std::string>& args_;
  const std::vector<KnownOption>& known_;
  size_t i_ = 0;
  bool module_ = false;
  bool no_python_ = false;
  bool run_path_ = false;
  TorchrunArgs out_;
};

}  // namespace

Result<TorchrunArgs> TranslateTorchrunArgs(const std::vector<std::string>& args,
                                           const std::vector<KnownOption>& known) {
  Translator translator(args, known);
  HETRUN_ASSIGN_OR_RETURN(TorchrunArgs out, translator.Run());
  if (out.kind == ProgramKind::kPythonModule && out.program.empty()) {
    return UsageError("hetrun run: -m needs a module name (hetrun [OPTIONS] -m MODULE [ARGS...])");
  }
  return out;
}

std::vector<std::string> WorkerCommand(const TorchrunArgs& args, const std::string& python) {
  std::vector<std::string> argv;
  if (args.kind == ProgramKind::kPythonModule) {
    argv = {python, "-m"};
  } else if (args.kind == ProgramKind::kPythonScript) {
    argv = {python};
  }
  argv.insert(argv.end(), args.program.begin(), args.program.end());
  return argv;
}

Result<StreamMask> ParseStreamMask(const std::string& text) {
  StreamMask mask;
  auto stream = [](std::string_view value) -> Result<int> {
    HETRUN_ASSIGN_OR_RETURN(int64_t n, ParseIntInRange(value, 0, 3));
    return static_cast<int>(n);
  };
  if (text.find(':') == std::string::npos) {
    Result<int> all = stream(text);
    if (!all.ok()) return UsageError("'" + text + "': " + all.status().message() + " (0-3)");
    mask.all = *all;
    return mask;
  }
  size_t start = 0;
  while (start <= text.size()) {
    size_t comma = std::min(text.find(',', start), text.size());
    std::string item = text.substr(start, comma - start);
    size_t colon = item.find(':');
    if (colon == std::string::npos) {
      return UsageError("'" + text + "': entry '" + item + "' is not LOCAL_RANK:STREAMS");
    }
    Result<int64_t> rank = ParseIntInRange(item.substr(0, colon), 0, 1 << 20);
    Result<int> value = stream(item.substr(colon + 1));
    if (!rank.ok() || !value.ok()) {
      return UsageError("'" + text + "': entry '" + item +
                        "' is not LOCAL_RANK:STREAMS (streams 0-3)");
    }
    mask.per_local_rank[static_cast<int>(*rank)] = *value;
    start = comma + 1;
  }
  return mask;
}

Result<std::vector<int>> ParseLocalRanks(const std::string& text) {
  std::vector<int> ranks;
  size_t start = 0;
  while (start <= text.size()) {
    size_t comma = std::min(text.find(',', start), text.size());
    std::string item = text.substr(start, comma - start);
    Result<int64_t> rank = ParseIntInRange(item, 0, 1 << 20);
    if (!rank.ok()) {
      return UsageError("--local-ranks-filter '" + text + "': '" + item +
                        "' is not a local rank (a comma list like 0,1)");
    }
    ranks.push_back(static_cast<int>(*rank));
    start = comma + 1;
  }
  return ranks;
}

}  // namespace hetrun::launcher

// jit::save / jit::load (Note [JIT archive]): graph text plus tensors in one safetensors file.
#include "retorch/jit/Serialization.h"

#include <algorithm>
#include <cstdio>
#include <sstream>

#include "retorch/io/Safetensors.h"
#include "retorch/jit/Parser.h"

namespace retorch::jit {

namespace {

constexpr const char* kFormatKey = "retorch.jit";
constexpr const char* kFormatVersion = "1";

// The `<Tensor>` constants of a block in the order the printer writes them (node attributes in
// order, then the node's blocks); 0-d tensors print inline as {v} and are not collected.
void collect_tensor_constants(const Block& b, std::vector<Tensor>& out) {
  for (const Node* n : b.nodes()) {
    for (const auto& [name, v] : n->attrs())
      if (v.is_tensor() && constant_str(v) == "<Tensor>") out.push_back(v.to_tensor());
    for (const Block* sub : n->blocks()) collect_tensor_constants(*sub, out);
  }
}

std::string join_lines(const std::vector<std::string>& names) {
  std::string s;
  for (const auto& n : names) s += (s.empty() ? "" : "\n") + n;
  return s;
}

std::vector<std::string> split_lines(const std::string& s) {
  std::vector<std::string> r;
  std::stringstream ss(s);
  for (std::string line; std::getline(ss, line);)
    if (!line.empty()) r.push_back(line);
  return r;
}

void write_archive(const Graph& g, const char* kind,
                   const std::vector<std::pair<std::string, Tensor>>& params,
                   const std::vector<std::pair<std::string, Tensor>>& buffers,
                   const std::string& path) {
  OrderedDict<Tensor> tensors("tensor");
  io::Metadata meta;
  meta[kFormatKey] = kFormatVersion;
  meta["kind"] = kind;
  meta["graph"] = g.str();
  std::vector<std::string> pnames, bnames, grads;
  for (const auto& [name, t] : params) {
    RT_CHECK(t.defined(), "jit::save: parameter '", name, "' is undefined");
    tensors.insert("param:" + name, t.detach());
    pnames.push_back(name);
    if (t.requires_grad()) grads.push_back(name);
  }
  for (const auto& [name, t] : buffers) {
    RT_CHECK(t.defined(), "jit::save: buffer '", name, "' is undefined");
    tensors.insert("buffer:" + name, t.detach());
    bnames.push_back(name);
  }
  meta["parameters"] = join_lines(pnames);
  meta["buffers"] = join_lines(bnames);
  meta["requires_grad"] = join_lines(grads);
  std::vector<Tensor> constants;
  collect_tensor_constants(*g.block(), constants);
  for (size_t i = 0; i < constants.size(); ++i) {
    RT_CHECK(constants[i].defined(), "jit::save: tensor constant ", i, " is undefined");
    tensors.insert("constant:" + std::to_string(i), constants[i]);
  }
  io::save_safetensors(path, tensors, meta);
}

const std::string& field(const io::Metadata& meta, const char* key, const std::string& path) {
  auto it = meta.find(key);
  RT_CHECK(it != meta.end(), "jit::load: '", path, "' has no \"", key,
           "\" field (not a retorch JIT archive, or a damaged one)");
  return it->second;
}

// Every prim::GetAttr must name a parameter or buffer the archive has.
void check_attributes(const Block& b, const std::vector<std::pair<std::string, Tensor>>& attrs,
                      const std::string& path) {
  for (const Node* n : b.nodes()) {
    if (n->kind() == kind::kGetAttr) {
      RT_CHECK(n->has_attr("name") && n->attr("name").is_string(), "jit::load: '", path,
               "': a prim::GetAttr has no name");
      const std::string& name = n->attr("name").to_string();
      bool found = false;
      for (const auto& a : attrs) found = found || a.first == name;
      RT_CHECK(found, "jit::load: '", path, "': the graph reads attribute '", name,
               "', which the archive does not hold");
    }
    for (const Block* sub : n->blocks()) check_attributes(*sub, attrs, path);
  }
}

}  // namespace

void save(const ScriptModule& module, const std::string& path) {
  write_archive(module.graph(), "module", module.named_parameters(), module.named_buffers(), path);
}

void save(const ScriptFunction& function, const std::string& path) {
  write_archive(function.graph(), "function", {}, {}, path);
}

LoadedProgram load_program(const std::string& path) {
  return load_program_from(io::load_safetensors_file(path), path);
}

LoadedProgram load_program_from(const io::SafetensorsFile& file, const std::string& path) {
  const io::Metadata& meta = file.metadata;
  const std::string& version = field(meta, kFormatKey, path);
  RT_CHECK(version == kFormatVersion, "jit::load: '", path, "' has archive format ", version,
           "; this build reads format ", kFormatVersion);
  const std::string& kind = field(meta, "kind", path);
  RT_CHECK(kind == "module" || kind == "function", "jit::load: '", path, "': unknown kind '", kind,
           "'");
  auto tensor = [&](const std::string& key) {
    const Tensor* t = file.tensors.find(key);
    RT_CHECK(t != nullptr, "jit::load: '", path, "' lacks tensor \"", key, "\"");
    return *t;
  };
  std::vector<Tensor> constants;
  size_t num_constants = 0;
  for (const auto& item : file.tensors.items())
    if (item.key.rfind("constant:", 0) == 0) ++num_constants;
  for (size_t i = 0; i < num_constants; ++i)
    constants.push_back(tensor("constant:" + std::to_string(i)));
  std::shared_ptr<Graph> graph;
  try {
    graph = parse_ir(field(meta, "graph", path), &constants);
  } catch (const Error& e) {
    RT_ERROR("jit::load: '", path, "': its graph does not parse: ", e.what());
  }
  std::vector<Tensor> used;
  collect_tensor_constants(*graph->block(), used);
  RT_CHECK(used.size() == constants.size(), "jit::load: '", path, "' holds ", constants.size(),
           " tensor constants but its graph uses ", used.size());

  LoadedProgram p;
  p.is_module = kind == "module";
  if (!p.is_module) {
    p.function = std::make_shared<ScriptFunction>(graph);
    return p;
  }
  std::vector<std::string> grads =
      split_lines(meta.count("requires_grad") ? meta.at("requires_grad") : "");
  std::vector<std::pair<std::string, Tensor>> params, buffers;
  for (const std::string& name : split_lines(field(meta, "parameters", path))) {
    Tensor t = tensor("param:" + name);
    if (std::find(grads.begin(), grads.end(), name) != grads.end()) t.requires_grad_(true);
    params.emplace_back(name, t);
  }
  for (const std::string& name : split_lines(field(meta, "buffers", path)))
    buffers.emplace_back(name, tensor("buffer:" + name));
  std::vector<std::pair<std::string, Tensor>> all = params;
  all.insert(all.end(), buffers.begin(), buffers.end());
  check_attributes(*graph->block(), all, path);
  p.module = std::make_shared<ScriptModule>(graph, std::move(params), std::move(buffers));
  return p;
}

ScriptModule load(const std::string& path) {
  LoadedProgram p = load_program(path);
  RT_CHECK(p.is_module, "jit::load: '", path, "' holds a function; use jit::load_function");
  return *p.module;
}

ScriptFunction load_function(const std::string& path) {
  LoadedProgram p = load_program(path);
  RT_CHECK(!p.is_module, "jit::load_function: '", path, "' holds a module; use jit::load");
  return *p.function;
}

std::optional<std::string> archive_graph_text(const std::string& path) {
  // A safetensors file starts with an 8-byte little-endian header length, then '{'.
  std::FILE* f = std::fopen(path.c_str(), "rb");
  RT_CHECK(f != nullptr, "cannot open '", path, "'");
  unsigned char head[9] = {};
  size_t n = std::fread(head, 1, sizeof(head), f);
  std::fclose(f);
  if (n < sizeof(head) || head[8] != '{') return std::nullopt;
  uint64_t len = 0;
  for (int i = 7; i >= 0; --i) len = (len << 8) | head[i];
  if (len == 0 || len > (uint64_t(1) << 32)) return std::nullopt;
  io::Metadata meta = io::load_safetensors_metadata(path);
  if (!meta.count(kFormatKey)) return std::nullopt;
  return field(meta, "graph", path);
}

}  // namespace retorch::jit

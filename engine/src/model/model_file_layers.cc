// The layers network: layer lists, blocks, repeated and reused layers, built-in layer types;
// ParseNetwork dispatches to the operators network (model_file_operators.cc).
#include <algorithm>
#include <climits>
#include <set>

#include "model_file_internal.h"

namespace shardscope::model_file {

const std::set<std::string>& ReservedNames() {
  static const std::set<std::string> kReserved = {"x", "label", "loss"};
  return kReserved;
}

// Operator and parameter names in operators: networks: identifiers, optionally dotted.
bool IsName(const std::string& s) {
  if (s.empty() || s.front() == '.' || s.back() == '.' || s.find("..") != std::string::npos) {
    return false;
  }
  size_t start = 0;
  while (true) {
    const size_t dot = s.find('.', start);
    if (!IsIdentifier(
            s.substr(start, dot == std::string::npos ? std::string::npos : dot - start))) {
      return false;
    }
    if (dot == std::string::npos) return true;
    start = dot + 1;
  }
}

std::string KeysOf(const YAML::Node& node) {
  std::vector<std::string> keys;
  for (auto it = node.begin(); it != node.end(); ++it) {
    keys.push_back(it->first.IsScalar() ? "'" + it->first.Scalar() + "'" : "?");
  }
  return Join(keys);
}

namespace {

const std::vector<std::string>& BuiltinTypes() {
  static const std::vector<std::string> kTypes = {"Dense",   "Conv2d",    "MaxPool2d",
                                                  "Flatten", "ReLU",      "GELU",
                                                  "Dropout", "Embedding", "LayerNorm"};
  return kTypes;
}

bool IsBuiltin(const std::string& type) {
  const auto& t = BuiltinTypes();
  return std::find(t.begin(), t.end(), type) != t.end();
}

std::vector<std::string> TypeKeys(const std::string& type) {
  if (type == "Dense")
    return {"in_channels", "out_channels", "has_bias", "weight_init", "bias_init"};
  if (type == "Conv2d") {
    return {"in_channels", "out_channels", "kernel_size", "stride",
            "pad_mode",    "has_bias",     "weight_init"};
  }
  if (type == "MaxPool2d") return {"kernel_size", "stride", "pad_mode"};
  if (type == "Dropout") return {"p", "keep_prob", "seed"};
  if (type == "Embedding") return {"vocab_size", "embedding_size", "embedding_table"};
  if (type == "LayerNorm") return {"normalized_shape", "epsilon"};
  return {};  // Flatten, ReLU, GELU
}

class LayerParser {
 public:
  LayerParser(const Source& src, const MeshTable& meshes, const std::set<std::string>& blocks,
              std::vector<WrittenStrategy>* inline_strategies)
      : src_(src), meshes_(meshes), blocks_(blocks), inline_(inline_strategies) {}

  std::vector<LayerEntry> ParseList(const YAML::Node& node, const std::string& where,
                                    bool top_level) {
    if (!node.IsSequence()) {
      src_.Fail(node, where + " must be a list of layers ('- name: Type' lines), found " +
                          (node.IsMap() ? std::string("a mapping")
                                        : "'" + (node.IsScalar() ? node.Scalar() : "") + "'"));
    }
    if (node.size() == 0) src_.Fail(node, where + " is empty");
    std::vector<LayerEntry> out;
    std::map<std::string, const LayerEntry*> defined;  // name -> its definition (index-safe below)
    struct Seen {
      std::string type;
      SourceLocation location;
      bool has_parameters;
    };
    std::map<std::string, Seen> seen;
    for (size_t i = 0; i < node.size(); ++i) {
      const YAML::Node& item = node[i];
      if (item.IsScalar()) {
        const std::string name = item.Scalar();
        auto it = seen.find(name);
        if (it != seen.end() && it->second.has_parameters) {
          src_.Fail(item, "'" + name + "' (" + it->second.type + ") cannot be called again: it " +
                              "has parameters, and sharing parameters between calls is not " +
                              "supported; define another layer, or use repeat: for copies with " +
                              "their own parameters. Layers without parameters (ReLU, GELU, " +
                              "Flatten, MaxPool2d, Dropout, raw operators) can be called again");
        }
        if (it != seen.end()) {
          LayerEntry e;
          e.kind = LayerEntry::kReuse;
          e.name = name;
          e.type = it->second.type;
          e.location = src_.At(item);
          out.push_back(std::move(e));
          continue;
        }
        if (IsBuiltin(name) || blocks_.count(name) != 0) {
          std::string suggested;
          for (char c : name)
            suggested += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
          src_.Fail(item, "'" + name + "' in " + where +
                              " is a layer type, but a layer needs a name: '- " + suggested + ": " +
                              name + "'");
        }
        std::vector<std::string> names;
        for (const auto& [n, info] : seen) names.push_back(n);
        src_.Fail(item, "'" + name + "' in " + where + " is not a layer defined above" +
                            DidYouMean(name, names) +
                            "; a bare name calls an earlier layer again (as the seeds call "
                            "self.relu several times), and a new layer is written '- " +
                            name + ": Type' or '- " + name + ": {type: Type, ...}'");
      }
      if (!item.IsMap()) {
        src_.Fail(item, "a layer in " + where +
                            " is '- name: Type' or '- name: {type: Type, ...}', found a list");
      }
      if (item.size() != 1) {
        src_.Fail(item, "a layer entry in " + where +
                            " has one key, the layer's name, but this one has " +
                            std::to_string(item.size()) + ": " + KeysOf(item) +
                            "; indent a layer's settings under its name, or write them in braces: "
                            "'- dense1: {type: Dense, in_channels: 784, out_channels: 512}'");
      }
      const YAML::Node key = item.begin()->first;
      const YAML::Node value = item.begin()->second;
      const std::string name = ReadString(src_, key, "a layer name");
      if (!IsIdentifier(name)) {
        src_.Fail(key, "layer name '" + name +
                           "' must be an identifier (letters, digits, '_', not starting with a "
                           "digit); '.' separates scopes in operator names");
      }
      if (top_level && ReservedNames().count(name) != 0) {
        src_.Fail(key, "layer name '" + name +
                           "' is reserved (x is the input, label the labels, loss "
                           "the loss)");
      }
      std::vector<LayerEntry> entries = ParseEntry(name, key, value);
      for (LayerEntry& e : entries) {
        auto it = seen.find(e.name);
        if (it != seen.end()) {
          src_.Fail(key, "duplicate layer name '" + e.name + "' in " + where +
                             " (first defined at " + it->second.location.ToString() +
                             "); to call the same layer again write just '- " + e.name + "'");
        }
        seen[e.name] = {e.type, e.location, e.has_parameters};
        out.push_back(std::move(e));
      }
    }
    return out;
  }

 private:
  std::vector<LayerEntry> ParseEntry(const std::string& name, const YAML::Node& key,
                                     const YAML::Node& value) {
    if (value.IsNull()) {
      src_.Fail(key, "layer '" + name + "' has no type; write '- " + name + ": ReLU' or '- " +
                         name + ": {type: Dense, in_channels: ..., out_channels: ...}'");
    }
    if (value.IsSequence()) {
      src_.Fail(value, "layer '" + name + "': a nested list of layers is written '" + name +
                           ": {block: [...]}'");
    }
    std::string type;
    YAML::Node type_node;
    int forms = 0;
    std::string form;
    if (value.IsScalar()) {
      type = value.Scalar();
      type_node = value;
      form = "type";
      forms = 1;
    } else {
      for (auto it = value.begin(); it != value.end(); ++it) {
        if (!it->first.IsScalar()) continue;
        const std::string& k = it->first.Scalar();
        if (k == "type" || k == "op" || k == "block") {
          ++forms;
          form = k;
        }
      }
      if (forms == 0) {
        src_.Fail(value, "layer '" + name +
                             "' needs one of 'type: <layer type>', 'op: <operator>' or 'block: "
                             "[<layers>]'");
      }
      if (forms > 1) {
        src_.Fail(value, "layer '" + name + "' has more than one of type, op and block");
      }
    }
    const std::string what = "layer '" + name + "'";
    LayerEntry e;
    e.name = name;
    e.location = src_.At(key);
    std::unique_ptr<Map> m;
    auto make_map = [&](std::vector<std::string> allowed) {
      if (value.IsMap())
        m = std::make_unique<Map>(src_, value, what + " (" + e.type + ")", allowed);
    };
    if (form == "block") {
      e.kind = LayerEntry::kBlock;
      e.has_parameters = true;
      e.type = "block";
      make_map({"block", "repeat"});
      auto body = std::make_shared<BlockBody>();
      body->location = src_.At(m->Require("block"));
      body->layers = ParseList(m->Require("block"), "block '" + name + "'", false);
      e.body = std::move(body);
    } else if (form == "op") {
      YAML::Node op_node;
      for (auto it = value.begin(); it != value.end(); ++it) {
        if (it->first.IsScalar() && it->first.Scalar() == "op") op_node = it->second;
      }
      const OpKind kind = ReadOpKind(src_, op_node, what);
      e.type = OpName(kind);
      std::vector<std::string> allowed = {"op", "repeat", "shard"};
      for (const std::string& k : OpAttrKeys(kind)) allowed.push_back(k);
      make_map(allowed);
      if (OpNumInputs(kind) != 1 || OpNumOutputs(kind) != 1) {
        const int n = OpNumInputs(kind);
        const std::string arity =
            n == 1 ? " gives several outputs"
                   : " takes " + (n == kVariadic ? std::string("several") : std::to_string(n)) +
                         " inputs";
        src_.Fail(op_node, what + ": operator " + e.type + arity +
                               ", but a raw operator in a layer list takes the previous "
                               "layer's output only; write the network as operators: with "
                               "parameters: for this");
      }
      const OpAttrs attrs = ReadOpAttrs(src_, *m, kind, what);
      e.make = [kind, attrs](const std::string& n) -> std::unique_ptr<nn::Module> {
        return std::make_unique<nn::SingleOp>(n, kind, attrs);
      };
    } else {
      if (!value.IsScalar()) {
        for (auto it = value.begin(); it != value.end(); ++it) {
          if (it->first.IsScalar() && it->first.Scalar() == "type") {
            type = ReadString(src_, it->second, "the type of " + what);
            type_node = it->second;
          }
        }
      }
      e.type = type;
      if (blocks_.count(type) != 0) {
        e.kind = LayerEntry::kBlock;
        e.has_parameters = true;
        make_map({"type", "repeat"});
      } else if (IsBuiltin(type)) {
        std::vector<std::string> allowed = {"type", "repeat", "shard"};
        for (const std::string& k : TypeKeys(type)) allowed.push_back(k);
        make_map(allowed);
        e.make = ParseBuiltin(type, name, m.get(), value);
        e.has_parameters =
            type == "Dense" || type == "Conv2d" || type == "Embedding" || type == "LayerNorm";
      } else {
        std::vector<std::string> known = BuiltinTypes();
        for (const std::string& b : blocks_) known.push_back(b);
        std::string hint;
        if (OpFromName(type).ok()) {
          hint = "; " + type + " is an operator: write '- " + name + ": {op: " + type + "}'";
        }
        src_.Fail(type_node,
                  "unknown layer type '" + type + "' for " + what + DidYouMean(type, known) +
                      "; known types: " + Join(BuiltinTypes()) +
                      (blocks_.empty() ? std::string(" (and blocks defined in blocks:)")
                                       : "; blocks: " + Join(std::vector<std::string>(
                                                            blocks_.begin(), blocks_.end()))) +
                      hint);
      }
    }
    if (m) {
      if (const Field* s = m->Find("shard")) {
        e.shard = std::make_shared<WrittenStrategy>(ReadWrittenStrategy(
            src_, name, s->key_node, s->value, meshes_, "the shard key of layer '" + name + "'"));
        inline_->push_back(*e.shard);
      }
    }
    int64_t repeat = 0;
    if (m) {
      if (const Field* r = m->Find("repeat")) {
        repeat = ReadPositive(src_, r->value, "'repeat' of " + what);
        if (repeat > 100000) src_.Fail(r->value, "'repeat' of " + what + " is too large");
      }
    }
    if (repeat == 0) return {e};
    std::vector<LayerEntry> copies;
    for (int64_t i = 1; i <= repeat; ++i) {
      LayerEntry c = e;
      c.name = name + std::to_string(i);
      copies.push_back(std::move(c));
    }
    return copies;
  }

  std::function<std::unique_ptr<nn::Module>(const std::string&)> ParseBuiltin(
      const std::string& type, const std::string& name, const Map* m, const YAML::Node& value) {
    const std::string what = "layer '" + name + "' (" + type + ")";
    auto find = [&](const char* k) -> const Field* { return m ? m->Find(k) : nullptr; };
    auto require = [&](const char* k) -> const YAML::Node& {
      if (m == nullptr) {
        std::vector<std::string> req;
        for (const std::string& key : TypeKeys(type)) {
          if (key == "in_channels" || key == "out_channels" || key == "kernel_size" ||
              key == "vocab_size" || key == "embedding_size" || key == "normalized_shape") {
            if (!(type == "MaxPool2d" && key == "kernel_size")) req.push_back(key);
          }
        }
        src_.Fail(value, what + " needs settings: " + Join(req) + "; write '- " + name +
                             ": {type: " + type + ", " + req[0] + ": ...}'");
      }
      return m->Require(k);
    };
    auto key = [&](const char* k) { return "'" + std::string(k) + "' of " + what; };
    auto init = [&](const char* k, InitSpec def) {
      const Field* f = find(k);
      return f ? ReadInit(src_, f->value, key(k)) : def;
    };
    auto boolean = [&](const char* k, bool def) {
      const Field* f = find(k);
      return f ? ReadBool(src_, f->value, key(k)) : def;
    };
    using Make = std::function<std::unique_ptr<nn::Module>(const std::string&)>;
    if (type == "Dense") {
      const int64_t in = ReadPositive(src_, require("in_channels"), key("in_channels"));
      const int64_t out = ReadPositive(src_, require("out_channels"), key("out_channels"));
      const bool bias = boolean("has_bias", true);
      const InitSpec w = init("weight_init", nn::DefaultWeightInit());
      const InitSpec b = init("bias_init", nn::DefaultWeightInit());
      if (!bias && find("bias_init")) {
        src_.Fail(find("bias_init")->key_node, what + ": bias_init is given but has_bias is false");
      }
      return Make([=](const std::string& n) -> std::unique_ptr<nn::Module> {
        return std::make_unique<nn::Dense>(n, in, out, bias, w, b);
      });
    }
    if (type == "Conv2d") {
      const int64_t in = ReadPositive(src_, require("in_channels"), key("in_channels"));
      const int64_t out = ReadPositive(src_, require("out_channels"), key("out_channels"));
      const int64_t kernel = ReadPositive(src_, require("kernel_size"), key("kernel_size"));
      const Field* sf = find("stride");
      const int64_t stride = sf ? ReadPositive(src_, sf->value, key("stride")) : 1;
      const Field* pf = find("pad_mode");
      const Padding pad = pf ? ReadPadMode(src_, pf->value, key("pad_mode")) : Padding::kSame;
      const bool bias = boolean("has_bias", false);
      const InitSpec w = init("weight_init", nn::DefaultWeightInit());
      return Make([=](const std::string& n) -> std::unique_ptr<nn::Module> {
        return std::make_unique<nn::Conv2d>(n, in, out, kernel, stride, pad, bias, w);
      });
    }
    if (type == "MaxPool2d") {
      OpAttrs a;
      if (const Field* f = find("kernel_size")) {
        const std::vector<int64_t> k = ReadIntOrPair(src_, f->value, key("kernel_size"));
        a.kernel[0] = k[0];
        a.kernel[1] = k[1];
      }
      if (const Field* f = find("stride")) {
        const std::vector<int64_t> s = ReadIntOrPair(src_, f->value, key("stride"));
        a.stride[0] = s[0];
        a.stride[1] = s[1];
      }
      if (const Field* f = find("pad_mode"))
        a.padding = ReadPadMode(src_, f->value, key("pad_mode"));
      return Make([=](const std::string& n) -> std::unique_ptr<nn::Module> {
        return std::make_unique<nn::SingleOp>(n, OpKind::kMaxPool2D, a);
      });
    }
    if (type == "Flatten") {
      return Make([](const std::string& n) -> std::unique_ptr<nn::Module> {
        return std::make_unique<nn::Flatten>(n);
      });
    }
    if (type == "ReLU") {
      return Make([](const std::string& n) -> std::unique_ptr<nn::Module> {
        return std::make_unique<nn::ReLU>(n);
      });
    }
    if (type == "GELU") {
      return Make([](const std::string& n) -> std::unique_ptr<nn::Module> {
        return std::make_unique<nn::GELU>(n);
      });
    }
    if (type == "Dropout") {
      float rate = 0.5f;
      uint64_t seed = 0;
      if (m != nullptr) {
        rate = ReadDropoutRate(src_, *m, what);
        seed = ReadSeed(src_, *m, what);
      }
      return Make([=](const std::string& n) -> std::unique_ptr<nn::Module> {
        return std::make_unique<nn::Dropout>(n, rate, seed);
      });
    }
    if (type == "Embedding") {
      const int64_t vocab = ReadPositive(src_, require("vocab_size"), key("vocab_size"));
      const int64_t dim = ReadPositive(src_, require("embedding_size"), key("embedding_size"));
      const InitSpec table = init("embedding_table", nn::Normal(0.01f));
      return Make([=](const std::string& n) -> std::unique_ptr<nn::Module> {
        return std::make_unique<nn::Embedding>(n, vocab, dim, table);
      });
    }
    // LayerNorm
    const YAML::Node& shape = require("normalized_shape");
    int64_t dim = 0;
    if (shape.IsSequence()) {
      const Shape s = ReadShape(src_, shape, key("normalized_shape"));
      if (s.size() != 1) {
        src_.Fail(shape, what +
                             ": normalization is over the last axis only, so normalized_shape "
                             "has one entry, found " +
                             std::to_string(s.size()));
      }
      dim = s[0];
    } else {
      dim = ReadPositive(src_, shape, key("normalized_shape"));
    }
    float eps = 1e-7f;
    if (const Field* f = find("epsilon")) {
      const double v = ReadFloat(src_, f->value, key("epsilon"));
      if (v <= 0.0) src_.Fail(f->value, key("epsilon") + " must be positive");
      eps = static_cast<float>(v);
    }
    return Make([=](const std::string& n) -> std::unique_ptr<nn::Module> {
      return std::make_unique<nn::LayerNorm>(n, dim, eps);
    });
  }

  const Source& src_;
  const MeshTable& meshes_;
  const std::set<std::string>& blocks_;
  std::vector<WrittenStrategy>* inline_;
};

// Refuses a block that uses itself, directly or through other blocks.
void CheckBlockCycles(const NetworkDef& net) {
  std::map<std::string, int> state;  // 0 new, 1 in progress, 2 done
  std::vector<std::string> stack;
  std::function<void(const std::vector<LayerEntry>&)> visit_list;
  std::function<void(const std::string&, const SourceLocation&)> visit =
      [&](const std::string& type, const SourceLocation& at) {
        if (state[type] == 2) return;
        if (state[type] == 1) {
          std::string path;
          bool on = false;
          for (const std::string& s : stack) {
            if (s == type) on = true;
            if (on) path += s + " -> ";
          }
          FailAt(at, "block '" + type + "' uses itself: " + path + type);
        }
        state[type] = 1;
        stack.push_back(type);
        visit_list(net.blocks.at(type)->layers);
        stack.pop_back();
        state[type] = 2;
      };
  visit_list = [&](const std::vector<LayerEntry>& layers) {
    for (const LayerEntry& e : layers) {
      if (e.kind != LayerEntry::kBlock) continue;
      if (e.body) {
        visit_list(e.body->layers);
      } else {
        visit(e.type, e.location);
      }
    }
  };
  for (const auto& [name, body] : net.blocks) visit(name, body->location);
}

}  // namespace

void ParseNetwork(const Source& src, const Map& top, const MeshTable& meshes, NetworkDef* net,
                  std::vector<WrittenStrategy>* inline_strategies) {
  const Field* layers = top.Find("layers");
  const Field* operators = top.Find("operators");
  if (layers != nullptr && operators != nullptr) {
    src.Fail(operators->key_node,
             "a network is written either as layers: or as operators:, "
             "not both (layers at " +
                 src.At(layers->key_node).ToString() + ")");
  }
  if (layers == nullptr && operators == nullptr) {
    FailAt(top.location(),
           "the file has no network: give layers: (a list of modules such as "
           "'- dense1: {type: Dense, in_channels: 784, out_channels: 512}') or "
           "operators: (raw operators with parameters:)");
  }
  if (operators != nullptr) {
    if (const Field* f = top.Find("blocks")) {
      src.Fail(f->key_node,
               "blocks: define blocks for layers:; an operators: network lists "
               "every operator");
    }
    net->operators_style = true;
    net->location = src.At(operators->key_node);
    ParseOperators(src, top, meshes, net, inline_strategies);
    return;
  }
  for (const char* k : {"parameters", "output"}) {
    if (const Field* f = top.Find(k)) {
      src.Fail(f->key_node, std::string(k) +
                                ": belongs to operators: networks; in a layers: "
                                "network the modules make their parameters and "
                                "the last layer is the output");
    }
  }
  net->location = src.At(layers->key_node);
  std::set<std::string> block_names;
  const Field* blocks = top.Find("blocks");
  std::unique_ptr<Map> block_map;
  if (blocks != nullptr) {
    block_map =
        std::make_unique<Map>(src, blocks->value, "the blocks section", std::vector<std::string>{});
    for (const Field& f : block_map->fields()) {
      if (!IsIdentifier(f.key)) {
        src.Fail(f.key_node, "block type name '" + f.key + "' must be an identifier");
      }
      if (IsBuiltin(f.key)) {
        src.Fail(f.key_node, "block type name '" + f.key + "' is a built-in layer type");
      }
      block_names.insert(f.key);
    }
  }
  LayerParser parser(src, meshes, block_names, inline_strategies);
  if (block_map) {
    for (const Field& f : block_map->fields()) {
      auto body = std::make_shared<BlockBody>();
      body->location = src.At(f.key_node);
      body->layers = parser.ParseList(f.value, "block '" + f.key + "'", false);
      net->blocks[f.key] = std::move(body);
    }
  }
  net->layers = parser.ParseList(layers->value, "layers", true);
  CheckBlockCycles(*net);
}

}  // namespace shardscope::model_file

// The operators network: raw operators with explicit parameters and constants (seed 004's
// style), parsed and checked against each other before anything is built.
#include <algorithm>
#include <climits>
#include <set>

#include "model_file_internal.h"

namespace shardscope::model_file {

InitSpec CausalMask(int64_t positions) {
  // -1e9 rather than -inf: exp() gives exactly 0 without inf - inf in a masked row's max.
  std::vector<float> mask(static_cast<size_t>(positions * positions), 0.0f);
  for (int64_t i = 0; i < positions; ++i)
    for (int64_t j = i + 1; j < positions; ++j) mask[i * positions + j] = -1e9f;
  InitSpec spec;
  spec.kind = InitSpec::kData;
  spec.data = std::make_shared<const Tensor>(Tensor::FromVector({positions, positions}, mask));
  return spec;
}

void ParseOperators(const Source& src, const Map& top, const MeshTable& meshes, NetworkDef* net,
                    std::vector<WrittenStrategy>* inline_strategies) {
  std::map<std::string, int> outputs;  // defined name -> number of outputs
  std::map<std::string, SourceLocation> where;
  std::set<std::string> param_names;
  outputs["x"] = 1;
  if (const Field* f = top.Find("parameters")) {
    Map params(src, f->value, "the parameters section", {});
    for (const Field& p : params.fields()) {
      if (!IsName(p.key)) {
        src.Fail(p.key_node, "parameter name '" + p.key +
                                 "' must be an identifier (letters, digits, '_'; '.' between "
                                 "scopes)");
      }
      if (ReservedNames().count(p.key) != 0) {
        src.Fail(p.key_node, "parameter name '" + p.key +
                                 "' is reserved (x is the input, label "
                                 "the labels, loss the loss)");
      }
      Map pm(src, p.value, "parameter '" + p.key + "'", {"shape", "init"});
      ParamDef def;
      def.name = p.key;
      def.location = src.At(p.key_node);
      def.shape = ReadShape(src, pm.Require("shape"), "the shape of parameter '" + p.key + "'");
      def.init = ReadInit(src, pm.Require("init"), "the init of parameter '" + p.key + "'");
      net->params.push_back(def);
      outputs[p.key] = 1;
      where[p.key] = def.location;
      param_names.insert(p.key);
    }
  }
  // Constants: fixed inputs of operators (a causal attention mask), never trained.
  if (const Field* f = top.Find("constants")) {
    Map consts(src, f->value, "the constants section", {});
    for (const Field& c : consts.fields()) {
      if (!IsName(c.key) || ReservedNames().count(c.key) != 0 || outputs.count(c.key) != 0) {
        src.Fail(c.key_node, "constant name '" + c.key +
                                 "' must be a new identifier (not x, label, loss, or a "
                                 "parameter's name)");
      }
      Map cm(src, c.value, "constant '" + c.key + "'", {"shape", "init"});
      ParamDef def;
      def.name = c.key;
      def.location = src.At(c.key_node);
      def.shape = ReadShape(src, cm.Require("shape"), "the shape of constant '" + c.key + "'");
      const YAML::Node& init = cm.Require("init");
      if (init.IsScalar() && init.Scalar() == "causal_mask") {
        if (def.shape.size() != 2 || def.shape[0] != def.shape[1]) {
          src.Fail(init, "constant '" + c.key + "': causal_mask is square, [positions, " +
                             "positions], found " + ShapeToString(def.shape));
        }
        def.init = CausalMask(def.shape[0]);
      } else {
        def.init = ReadInit(src, init, "the init of constant '" + c.key + "'");
      }
      net->constants.push_back(def);
      outputs[c.key] = 1;
      where[c.key] = def.location;
      param_names.insert(c.key);
    }
  }
  const Field* ops_field = top.Find("operators");
  const YAML::Node& list = ops_field->value;
  if (!list.IsSequence()) {
    src.Fail(list, "operators must be a list ('- name: {op: MatMul, inputs: [...]}' lines)");
  }
  if (list.size() == 0) src.Fail(list, "operators is empty");
  std::set<std::string> used;
  std::string prev = "x";
  for (size_t i = 0; i < list.size(); ++i) {
    const YAML::Node& item = list[i];
    if (!item.IsMap() || item.size() != 1) {
      src.Fail(item,
               "an operator entry is '- name: {op: MatMul, inputs: [x, w]}' (one key, the "
               "operator's name)" +
                   (item.IsMap() ? "; this one has the keys " + KeysOf(item) : std::string()));
    }
    const YAML::Node key = item.begin()->first;
    const YAML::Node value = item.begin()->second;
    OpDef op;
    op.name = ReadString(src, key, "an operator name");
    op.location = src.At(key);
    const std::string what = "operator '" + op.name + "'";
    if (!IsName(op.name)) {
      src.Fail(key, "operator name '" + op.name +
                        "' must be an identifier (letters, digits, '_'; '.' between scopes)");
    }
    if (ReservedNames().count(op.name) != 0) {
      src.Fail(key, "operator name '" + op.name +
                        "' is reserved (x is the input, label the "
                        "labels, loss the loss)");
    }
    if (outputs.count(op.name) != 0) {
      src.Fail(key, "duplicate name '" + op.name + "' (already " +
                        (param_names.count(op.name) ? "a parameter" : "an operator") + " at " +
                        where[op.name].ToString() + ")");
    }
    std::unique_ptr<Map> m;
    if (value.IsScalar()) {
      op.op = ReadOpKind(src, value, what);
    } else if (value.IsMap()) {
      YAML::Node op_node;
      bool has_op = false;
      for (auto it = value.begin(); it != value.end(); ++it) {
        if (it->first.IsScalar() && it->first.Scalar() == "op") {
          op_node = it->second;
          has_op = true;
        }
      }
      if (!has_op) src.Fail(value, what + " is missing the required key 'op'");
      op.op = ReadOpKind(src, op_node, what);
      std::vector<std::string> allowed = {"op", "inputs", "shard"};
      for (const std::string& k : OpAttrKeys(op.op)) allowed.push_back(k);
      m = std::make_unique<Map>(src, value, what + " (" + OpName(op.op) + ")", allowed);
      op.attrs = ReadOpAttrs(src, *m, op.op, what);
    } else {
      src.Fail(key, what + " needs an operator: '- " + op.name + ": {op: MatMul, inputs: [...]}'");
    }
    const int arity = OpNumInputs(op.op);
    const std::string arity_text = arity == kVariadic ? "1 or more" : std::to_string(arity);
    const Field* inputs = m ? m->Find("inputs") : nullptr;
    if (inputs == nullptr) {
      if (arity != 1) {
        src.Fail(key, what + " (" + OpName(op.op) + ") takes " + arity_text +
                          " inputs; list them, e.g. inputs: [" + prev + ", ...]");
      }
      op.inputs.push_back({prev, 0, src.At(key)});
    } else {
      std::vector<YAML::Node> refs;
      if (inputs->value.IsSequence()) {
        for (size_t k = 0; k < inputs->value.size(); ++k) refs.push_back(inputs->value[k]);
      } else {
        refs.push_back(inputs->value);
      }
      if (arity == kVariadic ? refs.empty() : static_cast<int>(refs.size()) != arity) {
        src.Fail(inputs->value, what + " (" + OpName(op.op) + ") takes " + arity_text + " input" +
                                    (arity == 1 ? "" : "s") + ", found " +
                                    std::to_string(refs.size()));
      }
      for (const YAML::Node& r : refs) {
        std::string ref = ReadString(src, r, "an input of " + what);
        InputRef in;
        in.location = src.At(r);
        const size_t colon = ref.find(':');
        in.name = ref.substr(0, colon);
        if (colon != std::string::npos) {
          const std::string idx = ref.substr(colon + 1);
          int v = -1;
          if (!idx.empty() && idx.size() < 6 &&
              std::all_of(idx.begin(), idx.end(), [](char c) { return c >= '0' && c <= '9'; })) {
            v = std::stoi(idx);
          }
          if (v < 0) {
            src.Fail(r, "input '" + ref + "' of " + what +
                            ": after ':' comes an output number, e.g. layer_norm_grad:1");
          }
          in.output = v;
        }
        auto it = outputs.find(in.name);
        if (it == outputs.end()) {
          std::vector<std::string> names;
          for (const auto& [n, k] : outputs) names.push_back(n);
          src.Fail(r, "input '" + in.name + "' of " + what + " is not defined above" +
                          DidYouMean(in.name, names) +
                          "; an input is x (the network input), a parameter, or an earlier "
                          "operator");
        }
        if (in.output >= it->second) {
          src.Fail(r, "input '" + ref + "' of " + what + ": '" + in.name + "' has " +
                          std::to_string(it->second) + " output" + (it->second == 1 ? "" : "s"));
        }
        used.insert(in.name);
        op.inputs.push_back(in);
      }
    }
    if (m) {
      if (const Field* s = m->Find("shard")) {
        op.shard = std::make_shared<WrittenStrategy>(
            ReadWrittenStrategy(src, op.name, s->key_node, s->value, meshes,
                                "the shard key of operator '" + op.name + "'"));
        inline_strategies->push_back(*op.shard);
      }
    }
    outputs[op.name] = OpNumOutputs(op.op) == kVariadic ? static_cast<int>(op.attrs.sizes.size())
                                                        : OpNumOutputs(op.op);
    where[op.name] = op.location;
    prev = op.name;
    net->ops.push_back(std::move(op));
  }
  if (const Field* f = top.Find("output")) {
    net->output = ReadString(src, f->value, "output");
    net->output_location = src.At(f->value);
    bool found = false;
    std::vector<std::string> names;
    for (const OpDef& op : net->ops) {
      names.push_back(op.name);
      found = found || op.name == net->output;
    }
    if (!found) {
      src.Fail(f->value, "output '" + net->output + "' is not an operator" +
                             DidYouMean(net->output, names) + "; operators: " + Join(names));
    }
    used.insert(net->output);
  } else {
    net->output = net->ops.back().name;
    net->output_location = net->ops.back().location;
  }
  for (const ParamDef& p : net->params) {
    if (used.count(p.name) == 0) {
      FailAt(p.location, "parameter '" + p.name + "' is declared but no operator uses it");
    }
  }
  for (const ParamDef& c : net->constants) {
    if (used.count(c.name) == 0) {
      FailAt(c.location, "constant '" + c.name + "' is declared but no operator uses it");
    }
  }
}

}  // namespace shardscope::model_file

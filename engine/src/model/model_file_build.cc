// Building a parsed network through the nn modules, so that names, parameters and init specs
// are those of the C++ API by construction; the trace records which layer made what.
#include <map>

#include "model_file_internal.h"

namespace shardscope::model_file {

namespace {

// A layer list as a module: calls its layers in order; the same module may be called again.
class SeqModule : public nn::Module {
 public:
  SeqModule(std::string name, BuildTrace* trace) : nn::Module(std::move(name)), trace_(trace) {}
  nn::Module* Own(std::unique_ptr<nn::Module> m) {
    owned_.push_back(std::move(m));
    return owned_.back().get();
  }
  void Call(nn::Module* m, const LayerEntry* e) { calls_.push_back({m, e}); }

 protected:
  bool scoped() const override { return !name().empty(); }
  ValueId Forward(Builder& b, ValueId x) override {
    for (const auto& [module, entry] : calls_) {
      if (!b.ok()) return kNoValue;
      const std::string path = b.ScopedName(module->name());
      const std::string what = "layer '" + path + "' (" + entry->type + ")";
      const int before = b.graph().num_nodes();
      const Shape in_shape = b.graph().value(x).shape;
      x = (*module)(b, x);
      if (!b.ok()) {
        if (!trace_->failed) {
          trace_->failed = true;
          trace_->fail_location = entry->location;
          trace_->fail_what = what;
        }
        return kNoValue;
      }
      auto [it, first] = trace_->modules.try_emplace(path);
      BuildTrace::ModuleRecord& rec = it->second;
      if (first) {
        rec.type = entry->type;
        rec.location = entry->location;
        rec.input_shape = in_shape;
        rec.output_shape = b.graph().value(x).shape;
        if (entry->shard) {
          WrittenStrategy w = *entry->shard;
          w.target = path;
          trace_->inline_strategies.push_back(std::move(w));
        }
      }
      const int after = b.graph().num_nodes();
      rec.ops_per_call.push_back(after - before);
      for (int n = before; n < after; ++n) rec.nodes.push_back(n);
      trace_->last_location = entry->location;
      trace_->last_what = what;
    }
    return x;
  }

 private:
  BuildTrace* trace_;
  std::vector<std::unique_ptr<nn::Module>> owned_;
  std::vector<std::pair<nn::Module*, const LayerEntry*>> calls_;
};

std::unique_ptr<SeqModule> Instantiate(const NetworkDef& net, const std::string& name,
                                       const std::vector<LayerEntry>& layers, BuildTrace* trace) {
  auto seq = std::make_unique<SeqModule>(name, trace);
  std::map<std::string, nn::Module*> by_name;
  for (const LayerEntry& e : layers) {
    nn::Module* m = nullptr;
    switch (e.kind) {
      case LayerEntry::kModule:
        m = seq->Own(e.make(e.name));
        by_name[e.name] = m;
        break;
      case LayerEntry::kBlock: {
        const BlockBody& body = e.body ? *e.body : *net.blocks.at(e.type);
        m = seq->Own(Instantiate(net, e.name, body.layers, trace));
        by_name[e.name] = m;
        break;
      }
      case LayerEntry::kReuse:
        m = by_name.at(e.name);
        break;
    }
    seq->Call(m, &e);
  }
  return seq;
}

// An operators: network as a module: parameters first, then the operators as listed.
class OpGraphModule : public nn::Module {
 public:
  OpGraphModule(const NetworkDef& net, BuildTrace* trace)
      : nn::Module(""), net_(net), trace_(trace) {}

 protected:
  bool scoped() const override { return false; }
  ValueId Forward(Builder& b, ValueId x) override {
    std::map<std::string, std::vector<ValueId>> values;
    values["x"] = {x};
    for (const ParamDef& p : net_.params) {
      values[p.name] = {b.Parameter(p.name, p.shape, p.init)};
      if (!b.ok()) return Failed(p.location, "parameter '" + p.name + "'");
    }
    for (const ParamDef& c : net_.constants) {
      const ValueId v = b.graph().AddConstant(c.name, c.shape, c.init);
      if (v == kNoValue) return Failed(c.location, "constant '" + c.name + "'");
      values[c.name] = {v};
    }
    for (const OpDef& op : net_.ops) {
      std::vector<ValueId> inputs;
      for (const InputRef& in : op.inputs) inputs.push_back(values.at(in.name).at(in.output));
      const int before = b.graph().num_nodes();
      values[op.name] = b.OpAll(op.op, op.name, inputs, op.attrs);
      const std::string what = "operator '" + op.name + "' (" + OpName(op.op) + ")";
      if (!b.ok()) return Failed(op.location, what);
      auto it = trace_->modules.try_emplace(op.name).first;
      it->second.type = OpName(op.op);
      it->second.location = op.location;
      it->second.ops_per_call.push_back(b.graph().num_nodes() - before);
      it->second.nodes.push_back(before);
      it->second.input_shape = b.graph().value(inputs[0]).shape;
      it->second.output_shape = b.graph().value(values[op.name][0]).shape;
      if (op.shard) trace_->inline_strategies.push_back(*op.shard);
      if (op.name == net_.output) {
        trace_->last_location = op.location;
        trace_->last_what = what;
      }
    }
    return values.at(net_.output).at(0);
  }

 private:
  ValueId Failed(const SourceLocation& loc, const std::string& what) {
    if (!trace_->failed) {
      trace_->failed = true;
      trace_->fail_location = loc;
      trace_->fail_what = what;
    }
    return kNoValue;
  }
  const NetworkDef& net_;
  BuildTrace* trace_;
};

}  // namespace

ModelGraph BuildNetwork(const NetworkDef& net, const Shape& example_shape, DType input_dtype,
                        bool sequence, int64_t batch, BuildTrace* trace) {
  std::unique_ptr<nn::Module> top;
  if (net.operators_style) {
    top = std::make_unique<OpGraphModule>(net, trace);
  } else {
    top = Instantiate(net, "", net.layers, trace);
  }
  Result<ModelGraph> model = nn::BuildClassifier(*top, example_shape, batch, input_dtype, sequence);
  if (!model.ok()) {
    if (trace->failed)
      FailAt(trace->fail_location, trace->fail_what + ": " + model.status().message());
    FailAt(trace->last_location.line > 0 ? trace->last_location : net.location,
           "the network ends with " +
               (trace->last_what.empty() ? "its last layer" : trace->last_what) + ": " +
               model.status().message());
  }
  return std::move(model).value();
}

}  // namespace shardscope::model_file

// Start here. Shardscope's public C++ API in one include.
//
//   status.h       Status / Result<T>: how every call reports failure
//   tensor.h       Tensor, Shape, DType
//   ops.h          the operator vocabulary (OpKind) and attributes
//   graph.h        the graph IR: values, nodes, verifier, text/DOT dumps
//   builder.h      appending operators under name scopes
//   nn.h           modules mirroring the seeds: Dense, Conv2d, ReLU, Sequential, ...
//   autodiff.h     the backward graph as ordinary operators
//   executor.h     running a graph on one device
//   initializer.h  seeded parameter initialisation
//   optimizer.h    SGD, Momentum, Adam
//   trainer.h      single-device training loop pieces
//   data.h         MNIST / Fashion-MNIST IDX loader, synthetic data, batches
//   layout/        device meshes (mesh.h), tensor layouts and their notations (layout.h)
//   cost/          the cost model, calibration (cost.h)
//   redistribution/ planning and running a change of layout (redistribution.h)
#pragma once

#include "shardscope/autodiff.h"
#include "shardscope/builder.h"
#include "shardscope/cost/cost.h"
#include "shardscope/data.h"
#include "shardscope/executor.h"
#include "shardscope/graph.h"
#include "shardscope/initializer.h"
#include "shardscope/layout/layout.h"
#include "shardscope/layout/mesh.h"
#include "shardscope/nn.h"
#include "shardscope/ops.h"
#include "shardscope/optimizer.h"
#include "shardscope/redistribution/redistribution.h"
#include "shardscope/status.h"
#include "shardscope/tensor.h"
#include "shardscope/trainer.h"
